#include "compiler/pipeline/compile.h"

#include <filesystem>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/config/reader.h"
#include "compiler/pipeline/launch_reading.h"
#include "compiler/lower/lower.h"
#include "compiler/parse/parse.h"
#include "compiler/sema/check.h"
#include "compiler/sema/deepspeed_batch.h"
#include "compiler/source/named_file.h"

namespace accel::pipeline {
namespace {

// A file with declarations but no job is a schema file: check that it resolves together with
// the stdlib (unknown types, duplicates, names in constraints and rules).
bool IsSchemaFile(const ast::File& file) {
  return file.jobs.empty() && (!file.records.empty() || !file.enums.empty() || !file.rules.empty());
}

// The spec's own job under its bases, with the `--set` overrides on top.
sema::CheckOptions Composed(Compilation& compilation, const ast::File& file, const CompileOptions& options) {
  compilation.composed = std::make_unique<ComposedSpec>();
  Compose(file, options.overrides, *compilation.composed, compilation.diagnostics);
  sema::CheckOptions check;
  check.composition = &compilation.composed->composition;
  return check;
}

// The launch config of a checked file: the file itself, or a job's `compute`.
const sema::Value* LaunchConfig(const sema::Value& root) {
  if (root.type_name == "ClusterConfig") return &root;
  if (root.type_name == "Job") return root.Field("compute");
  return nullptr;
}

// A launch config that names a DeepSpeed JSON (`deepspeed_config_file`) is checked with it:
// the JSON against its schema, and the batch arithmetic DeepSpeed asserts at start-up
// (sema::CheckDeepSpeedBatch), which needs both files (world size from one, batch sizes from
// the other). Finding and reading the second file is the pipeline's part: sema sees no file
// system, and the JSON is a compilation of its own, kept in `referenced`. `named_by_spec`: the
// referrer is a job spec, whose JSON accelrun reads (CompileOptions::params_from_job).
void CheckReferencedDeepSpeed(Compilation& compilation, const Stdlib& stdlib,
                              const sema::Environment& environment, const CompileOptions& referrer,
                              bool named_by_spec) {
  // A file with errors still has its own DeepSpeed JSON checked, and the batch rule runs on
  // the sizes both files wrote.
  const std::optional<sema::Spec>& checked = compilation.spec ? compilation.spec : compilation.despite_errors;
  const sema::Value* launch = checked ? LaunchConfig(checked->root) : nullptr;
  // Only a DeepSpeed launch reads the section; otherwise the launcher ignores it (DS-003).
  const sema::Value* engine = launch ? launch->Field("distributed_type") : nullptr;
  if (engine == nullptr || engine->text != "DEEPSPEED") return;
  const sema::Value* deepspeed = launch->Field("deepspeed_config");
  const sema::Value* named =
      deepspeed && deepspeed->kind == sema::Value::Kind::Record ? deepspeed->Field("hf_ds_config") : nullptr;
  if (named == nullptr || named->kind != sema::Value::Kind::String || named->text == "none" ||
      named->text.empty())
    return;
  // Relative paths: next to the file that names them, else the working directory (launch's).
  namespace fs = std::filesystem;
  fs::path given(named->text);
  std::vector<fs::path> candidates{given};
  if (given.is_relative() && named->provenance.file != nullptr &&
      named->provenance.file->name() != "<stdin>") {
    fs::path beside = fs::path(named->provenance.file->name()).parent_path() / given;
    // A config in the working directory: both places are one, and the message names it once.
    if (beside.lexically_normal() != given.lexically_normal()) candidates.insert(candidates.begin(), beside);
  }
  const fs::path* found = nullptr;
  std::error_code ec;
  for (const fs::path& candidate : candidates) {
    // Any kind of file: one that is not a regular file is refused below, by what it is.
    if (fs::exists(candidate, ec)) {
      found = &candidate;
      break;
    }
  }
  bool located = named->provenance.kind == sema::Provenance::Kind::Spec && named->provenance.file != nullptr;
  const source::SourceFile* file = located ? named->provenance.file : compilation.source.get();
  source::Span span = located ? named->provenance.span : source::Span{};
  if (found == nullptr) {
    std::string places;
    for (const fs::path& candidate : candidates)
      places += (places.empty() ? "" : " and ") + ("`" + candidate.string() + "`");
    compilation.diagnostics.Emit(diag::Kind::ReferencedFileMissing, file, span, "deepspeed_config_file",
                                 named->text, places);
    return;
  }
  // Untrusted: refused by its kind, or where it lies, before a byte is read; quoted only once it
  // looks like the JSON object DeepSpeed reads (source/named_file.h).
  auto refuse = [&](const std::string& why) {
    compilation.diagnostics.Emit(diag::Kind::ReferencedFileRefused, file, span, "deepspeed_config_file",
                                 named->text, "read as a DeepSpeed JSON config", why);
  };
  if (std::string why = source::WhyNotReadable(found->string()); !why.empty()) return refuse(why);
  if (referrer.confine_references) {
    fs::path repository = source::RepositoryOf(file != nullptr ? file->name() : compilation.source->name());
    if (!source::IsInside(found->string(), repository)) {
      compilation.diagnostics.Emit(diag::Kind::ReferencedFileOutside, file, span, "deepspeed_config_file",
                                   named->text, repository.string());
      return;
    }
  }
  CompileOptions options;
  options.lower = false;
  // The JSON an Accelerate config names is read by Accelerate's DeepSpeedPlugin.
  options.tool = referrer.tool.empty() ? "accelerate" : referrer.tool;
  options.params_from_job = named_by_spec;
  options.releases = referrer.releases;
  options.upgrade_to = referrer.upgrade_to;
  // Read once: checked for its kind, then compiled from the same bytes. A file too large or
  // unreadable goes to CompileFile, which says so in its own diagnostics.
  llvm::Expected<source::SourceFile> text = source::SourceFile::Read(found->string(), kMaxSourceBytes);
  if (text && !source::LooksLikeJsonObject(text->text())) {
    return refuse("it does not start with `{`, so it is not the JSON object DeepSpeed reads");
  }
  std::unique_ptr<Compilation> nested;
  if (text) {
    nested = std::make_unique<Compilation>(CompileText(found->string(), text->text(), stdlib, environment, options));
  } else {
    llvm::consumeError(text.takeError());
    nested = std::make_unique<Compilation>(CompileFile(found->string(), stdlib, environment, options));
  }
  for (const diag::Diagnostic& d : nested->diagnostics.diagnostics()) compilation.diagnostics.Add(d);
  if (const std::optional<sema::Spec>& json = nested->spec ? nested->spec : nested->despite_errors) {
    sema::CheckDeepSpeedBatch(*launch, *json, compilation.diagnostics,
                              /*written_only=*/!compilation.spec || !nested->spec);
  }
  compilation.referenced.push_back(std::move(nested));
}

// `model = TorchScript { path }` naming a file that is not there (relative to the spec's
// directory), in `check` and `build` alike. A warning, not an error: a plan is often built
// before the model is saved, or on another machine than the one that trains; accelrun stops
// before the first step if it is still missing (docs/training.md).
void CheckReferencedModel(Compilation& compilation) {
  const sema::Value* model = compilation.spec ? compilation.spec->root.Field("model") : nullptr;
  if (model == nullptr || model->kind != sema::Value::Kind::Record || model->type_name != "TorchScript")
    return;
  const sema::Value* path = model->Field("path");
  if (path == nullptr || path->kind != sema::Value::Kind::String || path->text.empty()) return;
  namespace fs = std::filesystem;
  bool located = path->provenance.kind == sema::Provenance::Kind::Spec && path->provenance.file != nullptr;
  fs::path where(path->text);
  if (where.is_relative() && located && path->provenance.file->name() != "<stdin>")
    where = fs::path(path->provenance.file->name()).parent_path() / where;
  std::error_code ec;
  if (fs::exists(where, ec)) return;
  compilation.diagnostics.Emit(
      diag::Kind::ModelFileMissing, located ? path->provenance.file : compilation.source.get(),
      located ? path->provenance.span : source::Span{}, path->text, where.lexically_normal().string());
}

// The tool a config file is checked for (CompileOptions::tool). A DeepSpeed JSON written for
// the `deepspeed` launcher and one written for Accelerate or the Trainer look alike, except that
// only the second may say "auto"; without one, the rules only those tools apply become notes.
std::string ToolFor(config::FileKind kind, std::string_view text, const std::string& tool) {
  if (!tool.empty() || kind == config::FileKind::JobSpec) return tool;
  if (kind == config::FileKind::AccelerateConfig) return "accelerate";
  return text.find("\"auto\"") != std::string_view::npos ? "accelerate" : "deepspeed";
}

// Which top-level keys belong to an Accelerate config and which to a DeepSpeed config, by
// their records in the schema: a file's kind is decided by its keys.
config::KeyOwners KeyOwnersOf(const sema::Schema& schema) {
  auto owns = [&schema](std::vector<std::string> records) {
    return [&schema, records](std::string_view key) {
      for (const std::string& name : records) {
        auto record = schema.records.find(name);
        if (record == schema.records.end()) continue;
        if (record->second.FindFileKey(key) || record->second.FindAlias(key)) return true;
      }
      return false;
    };
  };
  return {owns({"ClusterConfig", "SageMakerConfig"}), owns({"DeepSpeedConfig"})};
}

void CheckYaml(Compilation& compilation, const Stdlib& stdlib, const sema::Environment& environment,
               const CompileOptions& options) {
  config::ConfigFile config =
      config::ReadConfigFile(*compilation.source, compilation.diagnostics, KeyOwnersOf(stdlib.schema()));
  if (config.file.jobs.empty()) return;  // unreadable: the reader said why
  for (const ast::Name& name : config.null_keys) compilation.null_keys.push_back(name.text);
  if (config.kind == config::FileKind::AccelerateConfig)
    ReadNullKeysAsLaunchDoes(config, compilation.diagnostics);
  compilation.tree = std::make_unique<ast::File>(std::move(config.file));
  compilation.root_record = config.root_record;
  const ast::File& file = *compilation.tree;
  sema::CheckOptions check = Composed(compilation, file, options);
  check.root = config.root_record;
  // A YAML job spec is a spec like any other; Accelerate's own files are checked, not lowered.
  check.file_keys = config.kind != config::FileKind::JobSpec;
  if (config.kind == config::FileKind::AccelerateConfig) {
    check.section_prefixes = LaunchKeyPrefixes(options.releases.accelerate);
    check.autos_passed_on = AutosPassedOn(file);
    // launch copies `deepspeed_config` keys onto its arguments; a DeepSpeed JSON key among
    // them matches no argument and is dropped, though published configs put them there.
    check.foreign_keys = {{"deepspeed_config", "DeepSpeedConfig", "`accelerate launch`",
                           "the DeepSpeed JSON file that `deepspeed_config_file` names"}};
  } else if (config.kind == config::FileKind::DeepSpeedConfig) {
    // An Accelerate key in a DeepSpeed config: DeepSpeed reads its top level with `.get`.
    check.foreign_keys = {
        {"", "ClusterConfig", "DeepSpeed", "the Accelerate config file (`accelerate launch --config_file`)"}};
  }
  check.target = ToolFor(config.kind, compilation.source->text(), options.tool);
  check.target_guessed = options.tool.empty();
  if (config.kind == config::FileKind::AccelerateConfig) {
    check.release = options.releases.accelerate;
    check.defaults_against = options.upgrade_to.accelerate;
  }
  if (config.kind == config::FileKind::DeepSpeedConfig) {
    check.release = options.releases.deepspeed;
    check.defaults_against = options.upgrade_to.deepspeed;
  }
  check.yaml_scalars = true;
  check.null_is_unset = config.kind == config::FileKind::AccelerateConfig;
  check.auto_filled_by_key = config.kind == config::FileKind::DeepSpeedConfig;
  check.params_from_job = options.params_from_job;
  check.lax_models = config.kind == config::FileKind::DeepSpeedConfig;
  compilation.config_file = check.file_keys;
  check.despite_errors = &compilation.despite_errors;
  compilation.spec = sema::Check(file, stdlib.schema(), environment, compilation.diagnostics, check);
  CheckReferencedDeepSpeed(compilation, stdlib, environment, options, false);
  if (config.kind == config::FileKind::AccelerateConfig) {
    CheckNullsLaunchReads(file, options.releases.accelerate, compilation.diagnostics);
    // A file with errors is still read as launch reads it, on the values it did write.
    const std::optional<sema::Spec>& checked =
        compilation.spec ? compilation.spec : compilation.despite_errors;
    if (checked) CheckListsPassedAsText(checked->root, compilation.diagnostics);
  }
  if (compilation.spec && !compilation.config_file && options.lower) {
    compilation.plan = lower::Lower(*compilation.spec, compilation.source->name(), compilation.diagnostics,
                                    ReferencedDeepSpeed(compilation));
  }
}

// `check` for any engine: what lowering for accelrun would refuse becomes a note, so a spec that
// is valid for Accelerate but that accelrun cannot run says so instead of passing in silence.
// `check --target native` and `build` report the same as errors.
void NoteWhatAccelrunCannotRun(Compilation& compilation) {
  diag::DiagnosticEngine lowering;
  lower::Lower(*compilation.spec, compilation.source->name(), lowering, ReferencedDeepSpeed(compilation));
  for (diag::Diagnostic refused : lowering.diagnostics()) {
    if (refused.severity != diag::Severity::Error) continue;
    refused.severity = diag::Severity::Note;
    refused.message = fmt::format("accelrun cannot run this as is: {} (`--target native` makes it an error)",
                                  refused.message);
    refused.fixit.reset();
    compilation.diagnostics.Add(std::move(refused));
  }
}

void RunPhases(Compilation& compilation, const Stdlib& stdlib, const sema::Environment& environment,
               const CompileOptions& options) {
  if (config::IsConfigFileName(compilation.source->name())) {
    CheckYaml(compilation, stdlib, environment, options);
    return;
  }
  compilation.tree = std::make_unique<ast::File>(parse::Parse(*compilation.source, compilation.diagnostics));
  compilation.root_record = "Job";
  const ast::File& file = *compilation.tree;
  if (compilation.diagnostics.has_errors()) {
    // Check what parsed, so one run reports syntax and schema mistakes together; the parser
    // marked the blocks it repaired, and the checker skips what they may lack. Nothing with a
    // syntax error is lowered.
    if (!file.jobs.empty()) {
      sema::CheckOptions check = Composed(compilation, file, options);
      sema::Check(file, stdlib.schema(), environment, compilation.diagnostics, check);
    }
    return;
  }
  if (IsSchemaFile(file)) {
    std::vector<const ast::File*> files;
    for (const ast::File& f : stdlib.files()) files.push_back(&f);
    files.push_back(&file);
    sema::BuildSchema(files, compilation.diagnostics);
    compilation.schema_only = true;
    return;
  }
  sema::CheckOptions check = Composed(compilation, file, options);
  check.despite_errors = &compilation.despite_errors;
  compilation.spec = sema::Check(file, stdlib.schema(), environment, compilation.diagnostics, check);
  CheckReferencedDeepSpeed(compilation, stdlib, environment, options, true);
  CheckReferencedModel(compilation);
  if (!compilation.spec) return;
  if (!options.lower) {
    if (options.note_native) NoteWhatAccelrunCannotRun(compilation);
    return;
  }
  compilation.plan = lower::Lower(*compilation.spec, compilation.source->name(), compilation.diagnostics,
                                  ReferencedDeepSpeed(compilation));
}

void Finish(Compilation& compilation) { compilation.diagnostics.SortByLocation(); }

}  // namespace

const sema::Value* ReferencedDeepSpeed(const Compilation& compilation) {
  for (const std::unique_ptr<Compilation>& referenced : compilation.referenced) {
    if (referenced->spec && referenced->spec->root.type_name == "DeepSpeedConfig")
      return &referenced->spec->root;
  }
  return nullptr;
}

Compilation CompileFile(const std::string& path, const Stdlib& stdlib, const sema::Environment& environment,
                        const CompileOptions& options) {
  Compilation compilation;
  // Refuse oversized files before reading them: memory stays bounded whatever the input.
  std::error_code ec;
  uintmax_t size = path == "-" ? 0 : std::filesystem::file_size(path, ec);
  if (!ec && size > kMaxSourceBytes) {
    compilation.diagnostics.Emit(diag::Kind::FileTooLarge, nullptr, {}, path, size, kMaxSourceBytes >> 20);
    compilation.source = std::make_unique<source::SourceFile>(path, "");
    return compilation;
  }
  // Standard input, pipes and devices have no size up front: the limit holds while reading.
  llvm::Expected<source::SourceFile> source = source::SourceFile::Read(path, kMaxSourceBytes);
  if (!source) {
    // Too large is a diagnostic about the file (exit 1); unreadable leaves no source (exit 2).
    llvm::handleAllErrors(
        source.takeError(),
        [&](const source::FileTooLargeError& error) {
          compilation.source = std::make_unique<source::SourceFile>(path, "");
          compilation.diagnostics.Emit(diag::Kind::FileTooLarge, nullptr, {}, error.path(),
                                       fmt::format("more than {}", error.limit()), error.limit() >> 20);
        },
        [&](const llvm::ErrorInfoBase& error) {
          compilation.diagnostics.Add(
              diag::Diagnostic{"", diag::Severity::Error, error.message(), nullptr, {}, {}, {}});
        });
    return compilation;
  }
  compilation.source = std::make_unique<source::SourceFile>(std::move(*source));
  RunPhases(compilation, stdlib, environment, options);
  Finish(compilation);
  return compilation;
}

Compilation CompileText(const std::string& name, std::string text, const Stdlib& stdlib,
                        const sema::Environment& environment, const CompileOptions& options) {
  Compilation compilation;
  // The same limit as a file's (an editor's document, standard input): the parse tree costs
  // many times the text, and nothing larger is read.
  if (text.size() > kMaxSourceBytes) {
    compilation.diagnostics.Emit(diag::Kind::FileTooLarge, nullptr, {}, name, text.size(), kMaxSourceBytes >> 20);
    compilation.source = std::make_unique<source::SourceFile>(name, "");
    return compilation;
  }
  compilation.source = std::make_unique<source::SourceFile>(name, std::move(text));
  RunPhases(compilation, stdlib, environment, options);
  Finish(compilation);
  return compilation;
}

}  // namespace accel::pipeline
