#include "compiler/diagnostics/diagnostic.h"

#include <algorithm>
#include <cctype>
#include <utility>

namespace accel::diag {

const std::vector<KindInfo>& AllKinds() {
  static const std::vector<KindInfo> kinds = {
#define ACCEL_DIAGNOSTIC(name, code, severity, format) {#name, code, Severity::severity, format},
#include "compiler/diagnostics/kinds.def"
  };
  return kinds;
}

const KindInfo& Info(Kind kind) { return AllKinds()[static_cast<size_t>(kind)]; }

std::string_view SeverityName(Severity severity) {
  switch (severity) {
    case Severity::Note:
      return "note";
    case Severity::Warning:
      return "warning";
    case Severity::Error:
      return "error";
  }
  return "error";
}

Diagnostic& DiagnosticEngine::Add(Diagnostic diagnostic) {
  if (diagnostic.severity == Severity::Error) ++error_count_;
  if (diagnostic.severity == Severity::Warning) ++warning_count_;
  diagnostics_.push_back(std::move(diagnostic));
  return diagnostics_.back();
}

std::vector<Diagnostic> DiagnosticEngine::TakeAll() {
  error_count_ = warning_count_ = 0;
  return std::exchange(diagnostics_, {});
}

void DiagnosticEngine::SortByLocation() {
  std::stable_sort(diagnostics_.begin(), diagnostics_.end(), [](const Diagnostic& a, const Diagnostic& b) {
    if ((a.file == nullptr) != (b.file == nullptr)) return a.file == nullptr;
    if (a.file == nullptr) return false;
    if (a.file != b.file) return a.file->name() < b.file->name();
    return a.span.begin < b.span.begin;
  });
}

namespace {

// Edits to turn `a` into `b`: insertions, deletions, substitutions, and swaps of two
// neighbouring characters (`bsae` is one edit from `base`; optimal string alignment).
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> before(b.size() + 1), previous(b.size() + 1), row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      row[j] = std::min({previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        row[j] = std::min(row[j], before[j - 2] + 1);
    }
    before.swap(previous);
    previous.swap(row);
  }
  return previous[b.size()];
}

}  // namespace

std::string ClosestMatch(std::string_view word, const std::vector<std::string>& candidates) {
  // About a third of the word's length, as clang's typo correction does, at least one edit.
  // Case is ignored: `Strng` is one edit from `string`.
  size_t limit = std::max<size_t>(1, (word.size() + 1) / 3);
  auto lower = [](std::string_view text) {
    std::string out(text);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  std::string lowered = lower(word);
  std::string best;
  size_t best_distance = limit + 1;
  for (const std::string& candidate : candidates) {
    // The lengths alone bound the distance from below: a candidate that cannot beat the best so
    // far is not measured (a file of many unknown keys asks this for every key).
    size_t length_gap =
        candidate.size() > word.size() ? candidate.size() - word.size() : word.size() - candidate.size();
    if (length_gap >= best_distance) continue;
    size_t distance = EditDistance(lowered, lower(candidate));
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

}  // namespace accel::diag
