#include "compiler/diagnostics/diagnostic.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <numeric>
#include <utility>

namespace accel::diag {

FixIt ReplaceKeepingQuotes(const source::SourceFile* file, source::Span span, std::string replacement) {
  std::string_view replaced = file != nullptr ? file->Slice(span) : std::string_view();
  if (replaced.size() >= 2 && (replaced.front() == '"' || replaced.front() == '\'') &&
      replaced.back() == replaced.front()) {
    replacement = replaced.front() + replacement + replaced.back();
  }
  return FixIt{span, std::move(replacement)};
}

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

std::string CutLongMessage(std::string message) {
  // Room for the note on what was cut, so that a message cut once is not cut again.
  constexpr size_t kNoteRoom = 32;
  if (message.size() <= kMaxMessageBytes + kNoteRoom) return message;
  size_t keep = kMaxMessageBytes;
  // Never in the middle of a UTF-8 sequence: back up over continuation bytes.
  while (keep > 0 && (static_cast<unsigned char>(message[keep]) & 0xC0) == 0x80) --keep;
  size_t left_out = message.size() - keep;
  message.resize(keep);
  message += "... (" + std::to_string(left_out) + " more bytes)";
  return message;
}

Diagnostic& DiagnosticEngine::Add(Diagnostic diagnostic) {
  diagnostic.message = CutLongMessage(std::move(diagnostic.message));
  if (diagnostic.severity == Severity::Error) ++error_count_;
  if (diagnostic.severity == Severity::Warning) ++warning_count_;
  diagnostics_.push_back(std::move(diagnostic));
  return diagnostics_.back();
}

std::vector<Diagnostic> DiagnosticEngine::TakeAll() {
  error_count_ = warning_count_ = 0;
  return std::exchange(diagnostics_, {});
}

void DiagnosticEngine::AddAll(std::vector<Diagnostic> diagnostics) {
  for (const Diagnostic& d : diagnostics) {
    if (d.severity == Severity::Error) ++error_count_;
    if (d.severity == Severity::Warning) ++warning_count_;
  }
  if (diagnostics_.empty()) {
    diagnostics_ = std::move(diagnostics);
    return;
  }
  for (Diagnostic& d : diagnostics) diagnostics_.push_back(std::move(d));
}

void DiagnosticEngine::SortByLocation() {
  auto before = [](const Diagnostic& a, const Diagnostic& b) {
    if ((a.file == nullptr) != (b.file == nullptr)) return a.file == nullptr;
    if (a.file == nullptr) return false;
    if (a.file != b.file) return a.file->name() < b.file->name();
    return a.span.begin < b.span.begin;
  };
  if (std::is_sorted(diagnostics_.begin(), diagnostics_.end(), before)) return;
  // Sorting the diagnostics themselves, stable_sort takes a buffer of half of them (8 MB for a
  // file of 100,000 unknown keys); sorting their indices takes 4 bytes each.
  std::vector<uint32_t> order(diagnostics_.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return before(diagnostics_[a], diagnostics_[b]); });
  // Position i takes the diagnostic at order[i]: follow each cycle of the permutation once.
  for (size_t start = 0; start < order.size(); ++start) {
    if (order[start] == start) continue;
    Diagnostic held = std::move(diagnostics_[start]);
    size_t at = start;
    while (order[at] != start) {
      size_t from = order[at];
      diagnostics_[at] = std::move(diagnostics_[from]);
      order[at] = static_cast<uint32_t>(at);
      at = from;
    }
    diagnostics_[at] = std::move(held);
    order[at] = static_cast<uint32_t>(at);
  }
}

namespace {

// Edits to turn `a` into `b`: insertions, deletions, substitutions, and swaps of two
// neighbouring characters (`bsae` is one edit from `base`; optimal string alignment). `rows` is
// scratch space the caller keeps, so that measuring many candidates allocates once.
size_t EditDistance(std::string_view a, std::string_view b, std::vector<size_t>& rows) {
  const size_t width = b.size() + 1;
  rows.assign(3 * width, 0);
  size_t* before = rows.data();
  size_t* previous = before + width;
  size_t* row = previous + width;
  for (size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      row[j] = std::min({previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        row[j] = std::min(row[j], before[j - 2] + 1);
    }
    std::swap(before, previous);
    std::swap(previous, row);
  }
  return previous[b.size()];
}

void Lower(std::string_view text, std::string& out) {
  out.assign(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
}

}  // namespace

std::string ClosestMatch(std::string_view word, const std::vector<std::string>& candidates) {
  // About a third of the word's length, as clang's typo correction does, at least one edit.
  // Case is ignored: `Strng` is one edit from `string`.
  size_t limit = std::max<size_t>(1, (word.size() + 1) / 3);
  std::string lowered;
  Lower(word, lowered);
  // Scratch reused for every candidate: a file of many unknown keys asks this for every key.
  std::string lowered_candidate;
  std::vector<size_t> rows;
  const std::string* best = nullptr;
  size_t best_distance = limit + 1;
  for (const std::string& candidate : candidates) {
    // The lengths alone bound the distance from below: a candidate that cannot beat the best so
    // far is not measured.
    size_t length_gap =
        candidate.size() > word.size() ? candidate.size() - word.size() : word.size() - candidate.size();
    if (length_gap >= best_distance) continue;
    Lower(candidate, lowered_candidate);
    size_t distance = EditDistance(lowered, lowered_candidate, rows);
    if (distance < best_distance) {
      best_distance = distance;
      best = &candidate;
    }
  }
  return best ? *best : std::string();
}

}  // namespace accel::diag
