#ifndef ACCEL_COMPILER_DIAGNOSTICS_DIAGNOSTIC_H_
#define ACCEL_COMPILER_DIAGNOSTICS_DIAGNOSTIC_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "compiler/source/source_file.h"

namespace accel::diag {

enum class Severity { Note, Warning, Error };

// One enumerator per row of kinds.def.
enum class Kind {
#define ACCEL_DIAGNOSTIC(name, code, severity, format) name,
#include "compiler/diagnostics/kinds.def"
};

// The static description of a diagnostic kind, as declared in kinds.def.
struct KindInfo {
  std::string_view name;
  std::string_view code;
  Severity severity;
  std::string_view format;
};

// Returns the kinds.def row for `kind`.
const KindInfo& Info(Kind kind);
// Every row of kinds.def, in declaration order (for docs and the coverage test).
const std::vector<KindInfo>& AllKinds();
std::string_view SeverityName(Severity severity);

// A replacement the user can apply: put `replacement` over `span`.
struct FixIt {
  source::Span span;
  std::string replacement;
};

// The fix that puts `replacement` over `span` of `file` in the quotes the replaced text has, so
// that it applies as is: a JSON key `"bfloat16"` becomes `"bf16"`, not `bf16`.
FixIt ReplaceKeepingQuotes(const source::SourceFile* file, source::Span span, std::string replacement);

// A located message. `file` is null only for diagnostics about no file in particular
// (for example a missing input); otherwise it must outlive the Diagnostic.
struct Diagnostic {
  std::string code;  // kinds.def code, or a schema rule id such as `DS003`
  Severity severity = Severity::Error;
  std::string message;
  const source::SourceFile* file = nullptr;
  source::Span span;
  std::vector<Diagnostic> notes;
  std::optional<FixIt> fixit;
};

// How long a message may be: one that quotes a literal of a file (a 10 MB string) keeps its
// first kMaxMessageBytes and says how much was left out, in every output format.
inline constexpr size_t kMaxMessageBytes = 1024;
std::string CutLongMessage(std::string message);

// Collects diagnostics for one compilation. Never stops at the first error: phases keep going
// and report everything they can, and callers decide from error_count() whether to go on.
class DiagnosticEngine {
 public:
  // Formats kinds.def's message for `kind` with `args` and records it. Returns the recorded
  // diagnostic so the caller can attach notes or a fix-it; the reference stays valid until
  // the next Emit.
  template <typename... Args>
  Diagnostic& Emit(Kind kind, const source::SourceFile* file, source::Span span, Args&&... args) {
    const KindInfo& info = Info(kind);
    return Add(Diagnostic{std::string(info.code),
                          info.severity,
                          Format(info, std::forward<Args>(args)...),
                          file,
                          span,
                          {},
                          std::nullopt});
  }

  // Builds a note from a kinds.def row of severity Note.
  template <typename... Args>
  static Diagnostic Note(Kind kind, const source::SourceFile* file, source::Span span, Args&&... args) {
    const KindInfo& info = Info(kind);
    return Diagnostic{std::string(info.code),
                      Severity::Note,
                      Format(info, std::forward<Args>(args)...),
                      file,
                      span,
                      {},
                      std::nullopt};
  }

  // The row's message with `args`. A call site passing too few arguments is our bug, but it
  // must not take down the user's run: the raw format is shown instead.
  template <typename... Args>
  static std::string Format(const KindInfo& info, Args&&... args) {
    try {
      return CutLongMessage(fmt::format(fmt::runtime(info.format), std::forward<Args>(args)...));
    } catch (const fmt::format_error&) {
      return std::string(info.format) + " (internal error: wrong diagnostic arguments)";
    }
  }

  // Records an already-built diagnostic (schema rules carry their own code and message).
  Diagnostic& Add(Diagnostic diagnostic);

  // Orders the diagnostics as a reader scans: those without a file first, then by file name
  // and position. Stable, so notes-free diagnostics at one position keep their emit order.
  // Needs no second copy of the diagnostics: an order of indices, then moves in place.
  void SortByLocation();

  const std::vector<Diagnostic>& diagnostics() const { return diagnostics_; }
  // Moves every diagnostic out and leaves the engine empty, counts included: a caller that
  // filters 100,000 diagnostics holds one copy of them, not two.
  std::vector<Diagnostic> TakeAll();
  // Records each of `diagnostics`, after those already recorded; into an empty engine the vector
  // itself moves, without a copy.
  void AddAll(std::vector<Diagnostic> diagnostics);
  int error_count() const { return error_count_; }
  int warning_count() const { return warning_count_; }
  bool has_errors() const { return error_count_ > 0; }

 private:
  std::vector<Diagnostic> diagnostics_;
  int error_count_ = 0;
  int warning_count_ = 0;
};

// Suggests the candidate closest to `word` by edit distance, or "" when none is close enough
// to be a plausible typo.
std::string ClosestMatch(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace accel::diag

#endif  // ACCEL_COMPILER_DIAGNOSTICS_DIAGNOSTIC_H_
