#include "compiler/driver/compile.h"

#include <filesystem>

#include "compiler/config/reader.h"
#include "compiler/lower/lower.h"
#include "compiler/parse/parse.h"
#include "compiler/sema/check.h"

namespace accel::driver {
namespace {

// A file with declarations but no job is a schema file: check that it resolves together with
// the stdlib (unknown types, duplicates, names in constraints and rules).
bool IsSchemaFile(const ast::File& file) {
  return file.jobs.empty() && (!file.records.empty() || !file.enums.empty() || !file.rules.empty());
}

void CheckConfigFile(Compilation& compilation, const Stdlib& stdlib, const sema::Environment& environment) {
  compilation.config_file = true;
  config::ConfigFile config = config::ReadConfigFile(*compilation.source, compilation.diagnostics);
  if (config.file.jobs.empty()) return;  // unreadable: the reader said why
  sema::CheckOptions options;
  options.root = config.root_record;
  options.file_keys = true;
  sema::Check(config.file, stdlib.schema(), environment, compilation.diagnostics, options);
}

void RunPhases(Compilation& compilation, const Stdlib& stdlib, const sema::Environment& environment,
               const CompileOptions& options) {
  if (config::IsConfigFileName(compilation.source->name())) {
    CheckConfigFile(compilation, stdlib, environment);
    return;
  }
  ast::File file = parse::Parse(*compilation.source, compilation.diagnostics);
  if (compilation.diagnostics.has_errors()) {
    // Check what parsed, so one run reports syntax and schema mistakes together; the parser
    // marked the blocks it repaired, and the checker skips what they may lack. Nothing with a
    // syntax error is lowered.
    if (!file.jobs.empty()) sema::Check(file, stdlib.schema(), environment, compilation.diagnostics);
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
  std::optional<sema::Spec> spec = sema::Check(file, stdlib.schema(), environment, compilation.diagnostics);
  if (!spec || !options.lower) return;
  compilation.plan = lower::Lower(*spec, compilation.source->name(), compilation.diagnostics);
}

void Finish(Compilation& compilation) { compilation.diagnostics.SortByLocation(); }

}  // namespace

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
  llvm::Expected<source::SourceFile> source = source::SourceFile::Read(path);
  if (!source) {
    compilation.diagnostics.Add(
        diag::Diagnostic{"", diag::Severity::Error, llvm::toString(source.takeError()), nullptr, {}, {}, {}});
    return compilation;
  }
  compilation.source = std::make_unique<source::SourceFile>(std::move(*source));
  if (compilation.source->text().size() > kMaxSourceBytes) {  // standard input has no size up front
    compilation.diagnostics.Emit(diag::Kind::FileTooLarge, nullptr, {}, compilation.source->name(),
                                 compilation.source->text().size(), kMaxSourceBytes >> 20);
    return compilation;
  }
  RunPhases(compilation, stdlib, environment, options);
  Finish(compilation);
  return compilation;
}

Compilation CompileText(const std::string& name, std::string text, const Stdlib& stdlib,
                        const sema::Environment& environment, const CompileOptions& options) {
  Compilation compilation;
  compilation.source = std::make_unique<source::SourceFile>(name, std::move(text));
  RunPhases(compilation, stdlib, environment, options);
  Finish(compilation);
  return compilation;
}

}  // namespace accel::driver
