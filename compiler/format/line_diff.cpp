#include "compiler/format/line_diff.h"

#include <algorithm>
#include <optional>
#include <vector>

#include <fmt/format.h>

namespace accel::format {
namespace {

// Lines without their `\n`; a last line without one is marked so the diff can say so.
struct Lines {
  std::vector<std::string_view> lines;
  bool last_has_newline = true;
};

Lines Split(std::string_view text) {
  Lines out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) {
      out.lines.push_back(text.substr(start));
      out.last_has_newline = false;
      break;
    }
    out.lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

enum class Op : char { kKeep = ' ', kDelete = '-', kInsert = '+' };

// Beyond this many differences the search stops: its memory grows with their square (16 MB here).
constexpr int kMaxEdits = 2000;

// The shortest edit script from `a` to `b` (Myers, "An O(ND) Difference Algorithm"), as one
// op per line; nothing when it would need more than kMaxEdits edits.
std::optional<std::vector<Op>> ShortestEdit(const std::vector<std::string_view>& a,
                                            const std::vector<std::string_view>& b) {
  const int n = static_cast<int>(a.size());
  const int m = static_cast<int>(b.size());
  const int max = std::min(n + m, kMaxEdits);
  const int offset = max + 1;
  // v[k + offset]: the furthest x reached on diagonal k. trace[d] keeps diagonals -d..d of it
  // as they were before step d, for the way back.
  std::vector<int> v(2 * static_cast<size_t>(max) + 3, 0);
  std::vector<std::vector<int>> trace;
  for (int d = 0; d <= max; ++d) {
    trace.emplace_back(v.begin() + offset - d, v.begin() + offset + d + 1);
    for (int k = -d; k <= d; k += 2) {
      bool down = k == -d || (k != d && v[k - 1 + offset] < v[k + 1 + offset]);
      int x = down ? v[k + 1 + offset] : v[k - 1 + offset] + 1;
      int y = x - k;
      while (x < n && y < m && a[x] == b[y]) ++x, ++y;
      v[k + offset] = x;
      if (x < n || y < m) continue;
      // Found: walk the trace back from (n, m), one edit per step.
      std::vector<Op> ops;
      for (int step = d; step > 0; --step) {
        const std::vector<int>& before = trace[step];  // diagonal k at before[k + step]
        int kk = x - y;
        bool was_down = kk == -step || (kk != step && before[kk - 1 + step] < before[kk + 1 + step]);
        int previous_k = was_down ? kk + 1 : kk - 1;
        int previous_x = before[previous_k + step];
        int previous_y = previous_x - previous_k;
        while (x > previous_x + (was_down ? 0 : 1) && y > previous_y + (was_down ? 1 : 0)) {
          ops.push_back(Op::kKeep);
          --x, --y;
        }
        ops.push_back(was_down ? Op::kInsert : Op::kDelete);
        x = previous_x;
        y = previous_y;
      }
      while (x > 0 && y > 0) {
        ops.push_back(Op::kKeep);
        --x, --y;
      }
      std::reverse(ops.begin(), ops.end());
      return ops;
    }
  }
  return std::nullopt;
}

// Keeps the common first and last lines and replaces everything between them.
std::vector<Op> ReplaceMiddle(const std::vector<std::string_view>& a,
                              const std::vector<std::string_view>& b) {
  size_t head = 0;
  while (head < a.size() && head < b.size() && a[head] == b[head]) ++head;
  size_t tail = 0;
  while (tail < a.size() - head && tail < b.size() - head && a[a.size() - 1 - tail] == b[b.size() - 1 - tail])
    ++tail;
  std::vector<Op> ops(head, Op::kKeep);
  ops.insert(ops.end(), a.size() - head - tail, Op::kDelete);
  ops.insert(ops.end(), b.size() - head - tail, Op::kInsert);
  ops.insert(ops.end(), tail, Op::kKeep);
  return ops;
}

// `start,count` as diff(1) writes it: a range of one line is its number alone, and an empty
// range is named by the line before it.
std::string Range(size_t start, size_t count) {
  if (count == 1) return fmt::format("{}", start + 1);
  return fmt::format("{},{}", count == 0 ? start : start + 1, count);
}

}  // namespace

std::string UnifiedDiff(std::string_view before, std::string_view after, std::string_view name, int context) {
  if (before == after) return "";
  Lines a = Split(before);
  Lines b = Split(after);
  // The last lines differ when only one of them ends with a newline: compare them with it.
  std::string a_last;
  std::string b_last;
  if (a.last_has_newline != b.last_has_newline) {
    if (!a.last_has_newline) a.lines.back() = a_last = std::string(a.lines.back()) + "\n";
    if (!b.last_has_newline) b.lines.back() = b_last = std::string(b.lines.back()) + "\n";
  }
  std::vector<Op> ops = ShortestEdit(a.lines, b.lines).value_or(std::vector<Op>{});
  if (ops.empty()) ops = ReplaceMiddle(a.lines, b.lines);

  // Where each op is in `a` and `b`.
  std::vector<size_t> at_a(ops.size() + 1, 0);
  std::vector<size_t> at_b(ops.size() + 1, 0);
  for (size_t i = 0; i < ops.size(); ++i) {
    at_a[i + 1] = at_a[i] + (ops[i] != Op::kInsert);
    at_b[i + 1] = at_b[i] + (ops[i] != Op::kDelete);
  }
  auto line_of = [&](size_t i) {
    std::string_view text = ops[i] == Op::kInsert ? b.lines[at_b[i]] : a.lines[at_a[i]];
    bool last = ops[i] == Op::kInsert ? at_b[i] + 1 == b.lines.size() : at_a[i] + 1 == a.lines.size();
    bool has_newline = ops[i] == Op::kInsert ? b.last_has_newline : a.last_has_newline;
    if (ops[i] == Op::kKeep) has_newline = a.last_has_newline && b.last_has_newline;
    std::string out(1, static_cast<char>(ops[i]));
    if (!text.empty() && text.back() == '\n') text.remove_suffix(1);  // the marked last line
    out.append(text);
    out += '\n';
    if (last && !has_newline) out += "\\ No newline at end of file\n";
    return out;
  };

  std::string out = fmt::format("--- {}\n+++ {}\n", name, name);
  const size_t keep = static_cast<size_t>(context);
  size_t i = 0;
  while (i < ops.size()) {
    while (i < ops.size() && ops[i] == Op::kKeep) ++i;
    if (i == ops.size()) break;
    // A hunk: from `keep` lines before this change to `keep` lines after the last change that
    // is no more than 2 * keep unchanged lines from the one before it.
    size_t begin = i >= keep ? i - keep : 0;
    size_t end = i;
    while (true) {
      while (end < ops.size() && ops[end] != Op::kKeep) ++end;
      size_t next = end;
      while (next < ops.size() && ops[next] == Op::kKeep) ++next;
      if (next == ops.size() || next - end > 2 * keep) {
        end = std::min(ops.size(), end + keep);
        break;
      }
      end = next;
    }
    out += fmt::format("@@ -{} +{} @@\n", Range(at_a[begin], at_a[end] - at_a[begin]),
                       Range(at_b[begin], at_b[end] - at_b[begin]));
    for (size_t j = begin; j < end; ++j) out += line_of(j);
    i = end;
  }
  return out;
}

}  // namespace accel::format
