#include "compiler/driver/compose.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <string_view>

#include <fmt/format.h>

#include "compiler/parse/parse.h"
#include "compiler/source/named_file.h"

namespace accel::driver {
namespace {

namespace fs = std::filesystem;

// The most files a chain of imports may pass through: far beyond any real layering of specs.
constexpr size_t kMaxImportDepth = 64;

// Whether `text` begins as an Accel file does (grammar/Accel.g4, `file`): after a byte-order
// mark, white space and comments, a keyword that starts an import or a declaration, or nothing.
bool StartsLikeASpec(std::string_view text) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  while (!text.empty()) {
    if (std::isspace(static_cast<unsigned char>(text.front()))) {
      text.remove_prefix(1);
    } else if (text.substr(0, 2) == "//") {
      size_t end = text.find('\n');
      text.remove_prefix(end == std::string_view::npos ? text.size() : end);
    } else if (text.substr(0, 2) == "/*") {
      size_t end = text.find("*/", 2);
      if (end == std::string_view::npos) return false;
      text.remove_prefix(end + 2);
    } else {
      break;
    }
  }
  if (text.empty()) return true;
  size_t length = 0;
  while (length < text.size() && std::isalpha(static_cast<unsigned char>(text[length]))) ++length;
  static constexpr std::string_view kStarts[] = {"import", "let",  "job",    "enum",   "record", "open",
                                                 "kwargs", "plugin", "config", "extend", "rule"};
  const std::string_view word = text.substr(0, length);
  const bool keyword = std::find(std::begin(kStarts), std::end(kStarts), word) != std::end(kStarts);
  // A whole word: `jobs:` or `letter` is not one.
  const bool whole =
      length == text.size() || (!std::isalnum(static_cast<unsigned char>(text[length])) && text[length] != '_');
  return keyword && whole;
}

class Composer {
 public:
  Composer(ComposedSpec& out, diag::DiagnosticEngine& diagnostics) : out_(out), diagnostics_(diagnostics) {}

  void Run(const ast::File& spec, const std::vector<std::string>& overrides) {
    std::vector<std::string> stack;
    Load(spec, stack);
    if (spec.jobs.empty()) return;
    std::vector<const ast::JobDecl*> chain;  // the spec's job, its base, its base's base...
    std::vector<const ast::File*> chain_files;
    const ast::JobDecl* job = &spec.jobs[0];
    const ast::File* file = &spec;
    while (job != nullptr) {
      chain.push_back(job);
      chain_files.push_back(file);
      if (!job->base) break;
      const ast::File* base_file = nullptr;
      const ast::JobDecl* base = FindBase(*file, *job, &base_file);
      if (base == nullptr) {
        out_.composition.incomplete = true;
        break;
      }
      if (std::find(chain.begin(), chain.end(), base) != chain.end()) {
        out_.composition.incomplete = true;
        std::string path;
        for (const ast::JobDecl* link : chain) path += link->name.text + " -> ";
        diagnostics_.Emit(diag::Kind::ExtendsCycle, file->source, job->base->span, base->name.text,
                          path + base->name.text);
        break;
      }
      job = base;
      file = base_file;
    }
    for (size_t i = chain.size(); i-- > 0;) {
      out_.composition.layers.push_back({&chain[i]->body, chain_files[i]->source});
    }
    if (!overrides.empty()) {
      std::string text;
      for (const std::string& line : overrides) text += line + "\n";
      out_.sources.push_back(std::make_unique<source::SourceFile>("--set", std::move(text)));
      out_.overrides = parse::ParseOverrides(*out_.sources.back(), diagnostics_);
      out_.composition.layers.push_back({&out_.overrides, out_.sources.back().get()});
    }
  }

 private:
  // Makes `file`'s lets and its imports' lets visible in it, loading the imports first.
  // `stack` holds the files being loaded, to report a cycle or a chain too deep; it is shared
  // down the chain, so a chain costs memory in proportion to its length.
  void Load(const ast::File& file, std::vector<std::string>& stack) {
    std::string here = Canonical(file.source->name());
    stack.push_back(here);
    for (const ast::LetDecl& let : file.lets) {
      out_.composition.lets.push_back({let.name.text, &let, file.source, file.source});
    }
    for (const ast::ImportDecl& import : file.imports) {
      const ast::File* imported = Import(file, import, stack);
      if (imported == nullptr) continue;
      imports_[&file].push_back(imported);
      std::string prefix = import.alias ? import.alias->text + "." : "";
      for (const ast::LetDecl& let : imported->lets) {
        out_.composition.lets.push_back({prefix + let.name.text, &let, imported->source, file.source});
      }
    }
    stack.pop_back();
  }

  const ast::File* Import(const ast::File& from, const ast::ImportDecl& import, std::vector<std::string>& stack) {
    fs::path base =
        from.source->name() == "<stdin>" ? fs::current_path() : fs::path(from.source->name()).parent_path();
    std::string path = (base / import.path).lexically_normal().string();
    std::string canonical = Canonical(path);
    if (std::find(stack.begin(), stack.end(), canonical) != stack.end()) {
      std::string cycle;
      for (const std::string& link : stack) cycle += Display(link) + " -> ";
      diagnostics_.Emit(diag::Kind::ImportCycle, from.source, import.span, import.path,
                        cycle + Display(canonical));
      return nullptr;
    }
    if (auto it = loaded_.find(canonical); it != loaded_.end()) return it->second;
    // Each file of the chain is a level of recursion: 15,000 of them overflowed the stack.
    if (stack.size() >= kMaxImportDepth) {
      std::string chain;
      for (size_t i = 0; i < stack.size(); ++i) {
        if (i == 2 && stack.size() > 5) {
          chain += fmt::format("... ({} more) -> ", stack.size() - 4);
          i = stack.size() - 2;
        }
        chain += Display(stack[i]) + " -> ";
      }
      diagnostics_.Emit(diag::Kind::ImportFailed, from.source, import.span, import.path,
                        fmt::format("imports nest deeper than {} files ({}{}); import the files you need from "
                                    "fewer levels",
                                    kMaxImportDepth, chain, Display(canonical)));
      return nullptr;
    }
    // Only specs: a syntax error in `/etc/passwd` would quote its lines into a CI log.
    if (fs::path(canonical).extension() != ".accel") {
      diagnostics_.Emit(diag::Kind::ImportFailed, from.source, import.span, import.path,
                        "only `.accel` specs can be imported, and nothing of other files is shown");
      return nullptr;
    }
    if (std::string why = source::WhyNotReadable(canonical); !why.empty()) {
      diagnostics_.Emit(diag::Kind::ImportFailed, from.source, import.span, import.path, why);
      return nullptr;
    }
    llvm::Expected<source::SourceFile> source = source::SourceFile::Read(path);
    if (!source) {
      diagnostics_.Emit(diag::Kind::ImportFailed, from.source, import.span, import.path,
                        llvm::toString(source.takeError()));
      return nullptr;
    }
    // A `.accel` name is not enough: a secret file so named would be quoted by its syntax error.
    if (!StartsLikeASpec(source->text())) {
      diagnostics_.Emit(diag::Kind::ImportFailed, from.source, import.span, import.path,
                        "it does not start as a spec does (a comment, `import`, `let`, `job`, or a schema "
                        "declaration), so it is not read as one, and nothing of it is shown");
      return nullptr;
    }
    out_.sources.push_back(std::make_unique<source::SourceFile>(std::move(*source)));
    out_.files.push_back(std::make_unique<ast::File>(parse::Parse(*out_.sources.back(), diagnostics_)));
    const ast::File* file = out_.files.back().get();
    loaded_[canonical] = file;
    Load(*file, stack);
    return file;
  }

  // The job `job` extends: a job of that name in a file that `file` imports.
  const ast::JobDecl* FindBase(const ast::File& file, const ast::JobDecl& job, const ast::File** base_file) {
    std::vector<std::string> candidates;
    // A library of bases may build them on each other in one file.
    for (const ast::JobDecl& other : file.jobs) {
      if (&other != &job && other.name.text == job.base->text) {
        *base_file = &file;
        return &other;
      }
    }
    for (const ast::File* imported : imports_[&file]) {
      for (const ast::JobDecl& other : imported->jobs) {
        if (other.name.text == job.base->text) {
          *base_file = imported;
          return &other;
        }
        candidates.push_back(other.name.text);
      }
    }
    for (const ast::JobDecl& other : file.jobs) {
      if (&other != &job) candidates.push_back(other.name.text);
    }
    std::string guess = diag::ClosestMatch(job.base->text, candidates);
    std::string hint = !guess.empty() ? fmt::format("; did you mean `{}`?", guess)
                       : imports_[&file].empty()
                           ? "; a base job comes from a file this one imports (`import \"base.accel\"`)"
                           : "; the imported files declare no such job";
    diag::Diagnostic& d =
        diagnostics_.Emit(diag::Kind::UnknownBaseJob, file.source, job.base->span, job.base->text, hint);
    if (!guess.empty()) d.fixit = diag::FixIt{job.base->span, guess};
    return nullptr;
  }

  // How a file reads in a message: relative to the working directory when below it.
  static std::string Display(const std::string& canonical) {
    std::error_code ec;
    fs::path relative = fs::relative(canonical, fs::current_path(), ec);
    if (ec || relative.empty() || relative.begin()->string() == "..") return canonical;
    return relative.string();
  }

  static std::string Canonical(const std::string& path) {
    std::error_code ec;
    fs::path canonical = fs::weakly_canonical(path, ec);
    return ec ? path : canonical.string();
  }

  ComposedSpec& out_;
  diag::DiagnosticEngine& diagnostics_;
  std::map<std::string, const ast::File*> loaded_;
  std::map<const ast::File*, std::vector<const ast::File*>> imports_;
};

}  // namespace

void Compose(const ast::File& spec, const std::vector<std::string>& overrides, ComposedSpec& out,
             diag::DiagnosticEngine& diagnostics) {
  Composer(out, diagnostics).Run(spec, overrides);
}

}  // namespace accel::driver
