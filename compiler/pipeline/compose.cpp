#include "compiler/pipeline/compose.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <string_view>

#include <fmt/format.h>

#include "compiler/parse/parse.h"
#include "compiler/source/named_file.h"

namespace accel::pipeline {
namespace {

namespace fs = std::filesystem;

// The most files a chain of imports may pass through: far beyond any real layering of specs.
constexpr size_t kMaxImportDepth = 64;

// The start of a file, read as the lexer reads it (grammar/Accel.g4): white space and comments
// between tokens.
class Opening {
 public:
  explicit Opening(std::string_view text) : text_(text) {
    if (text_.substr(0, 3) == "\xEF\xBB\xBF") text_.remove_prefix(3);
    SkipBetweenTokens();
  }
  bool AtEnd() const { return text_.empty(); }
  // Consumes `word` when it is the next whole word.
  bool Word(std::string_view word) {
    if (text_.substr(0, word.size()) != word || IsWordChar(word.size())) return false;
    return Take(word.size());
  }
  bool AnyWord(std::initializer_list<std::string_view> words) {
    return std::any_of(words.begin(), words.end(), [this](std::string_view w) { return Word(w); });
  }
  bool Identifier() {
    if (text_.empty() || !(std::isalpha(static_cast<unsigned char>(text_[0])) || text_[0] == '_'))
      return false;
    size_t length = 1;
    while (IsWordChar(length)) ++length;
    return Take(length);
  }
  bool Char(char c) { return !text_.empty() && text_[0] == c && Take(1); }

 private:
  bool IsWordChar(size_t at) const {
    return at < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[at])) || text_[at] == '_');
  }
  bool Take(size_t length) {
    text_.remove_prefix(length);
    SkipBetweenTokens();
    return true;
  }
  void SkipBetweenTokens() {
    while (!text_.empty()) {
      if (text_[0] == ' ' || text_[0] == '\t' || text_[0] == '\n' || text_[0] == '\r') {
        text_.remove_prefix(1);
      } else if (text_.substr(0, 2) == "//") {  // to the end of the line: \n or \r, as the lexer
        size_t end = text_.find_first_of("\r\n");
        text_.remove_prefix(end == std::string_view::npos ? text_.size() : end);
      } else if (text_.substr(0, 2) == "/*") {
        size_t end = text_.find("*/", 2);
        text_.remove_prefix(end == std::string_view::npos ? text_.size() : end + 2);
      } else {
        return;
      }
    }
  }

  std::string_view text_;
};

// Whether `text` begins as an Accel file does (grammar/Accel.g4, `file`): nothing, or the first
// tokens of an import or a declaration (`import "`, `job name {`, `let name =`, `record Name {`,
// ...). A password line, a key or an env file does not, and is refused before its syntax error
// could quote it.
bool StartsLikeASpec(std::string_view text) {
  Opening at(text);
  if (at.AtEnd()) return true;
  if (at.Word("import")) return at.Char('"');
  if (at.Word("let")) return at.Identifier() && (at.Char('=') || at.Char(':'));
  if (at.Word("job")) return at.Identifier() && (at.Char('{') || at.Word("extends"));
  if (at.Word("rule")) return at.Identifier();
  const bool open = at.Word("open");
  if (at.AnyWord({"kwargs", "plugin", "config", "record", "extend"})) return at.Identifier() && at.Char('{');
  return !open && at.Word("enum") && at.Identifier() && at.Char('{');
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

}  // namespace accel::pipeline
