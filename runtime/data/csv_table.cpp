#include "runtime/data/csv_table.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "runtime/data/suggest.h"
#include "runtime/support/error.h"
#include "runtime/support/progress.h"

namespace accel::rt::data {
namespace {

struct Cell {
  std::string_view text;  // without surrounding blanks
  int64_t column;         // 1-based, of the first non-blank character
};

std::vector<Cell> SplitCells(std::string_view line) {
  std::vector<Cell> cells;
  size_t start = 0;
  while (true) {
    size_t comma = line.find(',', start);
    std::string_view raw = line.substr(start, comma == std::string_view::npos ? comma : comma - start);
    size_t first = raw.find_first_not_of(" \t");
    if (first == std::string_view::npos) {
      cells.push_back({std::string_view(), static_cast<int64_t>(start + 1)});
    } else {
      size_t last = raw.find_last_not_of(" \t");
      cells.push_back({raw.substr(first, last - first + 1), static_cast<int64_t>(start + first + 1)});
    }
    if (comma == std::string_view::npos) return cells;
    start = comma + 1;
  }
}

// Parses the whole cell as a number; false when anything is left over.
bool ParseNumber(std::string_view text, double* value) {
  // from_chars rejects a leading '+', which spreadsheets do write.
  if (text.size() > 1 && text[0] == '+' && text[1] != '-') text.remove_prefix(1);
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return error == std::errc() && end == text.data() + text.size() && !text.empty();
}

// Where a column's values go.
struct ColumnUse {
  enum Role { kIgnored, kFeature, kTarget } role = kIgnored;
  int64_t slot = 0;
};

}  // namespace


llvm::Expected<CsvTable> ParseCsv(std::string_view text, const std::string& path,
                                  const std::vector<std::string>& feature_columns,
                                  const std::vector<std::string>& target_columns, bool class_labels) {
  if (target_columns.empty()) {
    return Fail(fmt::format("{}: no target columns given; name the column(s) the model must predict", path));
  }
  if (class_labels && target_columns.size() != 1) {
    return Fail(fmt::format("{}: class labels come from exactly one column, {} were given", path,
                            target_columns.size()));
  }
  // Spreadsheet exports often start with a UTF-8 byte order mark.
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);

  // Lines, without their '\n' or "\r\n", numbered from 1.
  size_t offset = 0;
  int64_t line_number = 0;
  auto next_line = [&](std::string_view* line) {
    if (offset >= text.size()) return false;
    size_t end = text.find('\n', offset);
    if (end == std::string_view::npos) end = text.size();
    *line = text.substr(offset, end - offset);
    if (!line->empty() && line->back() == '\r') line->remove_suffix(1);
    offset = end + 1;
    ++line_number;
    return true;
  };

  std::string_view line;
  if (!next_line(&line) || line.find_first_not_of(" \t") == std::string_view::npos) {
    return Fail(
        fmt::format("{}:1:1: the first line is empty; it must be a header naming the columns, "
                    "e.g. `x1,x2,y`",
                    path));
  }
  std::vector<Cell> header = SplitCells(line);
  std::vector<std::string> names;
  for (const Cell& cell : header) {
    std::string_view name = cell.text;
    if (name.size() >= 2 && name.front() == '"' && name.back() == '"') name = name.substr(1, name.size() - 2);
    if (name.empty()) {
      return Fail(fmt::format("{}:1:{}: column {} has no name; every header cell must name its column", path,
                              cell.column, names.size() + 1));
    }
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == name) {
        return Fail(fmt::format("{}:1:{}: duplicate column `{}` (also column {}); rename one of them", path,
                                cell.column, name, i + 1));
      }
    }
    names.emplace_back(name);
  }

  // Which column feeds which feature or target slot.
  std::vector<ColumnUse> uses(names.size());
  auto resolve = [&](const std::string& name, ColumnUse::Role role, int64_t slot,
                     const char* list) -> llvm::Error {
    auto found = std::find(names.begin(), names.end(), name);
    if (found == names.end()) {
      // The first line of whatever file the spec names: its text is not shown (it may be any
      // file's), only a close name, or how many columns it has.
      return Fail(fmt::format("{}:1:1: the header has no column `{}` (named in {}){}", path, name, list,
                              Suggest(name, names, "columns", /*list_candidates=*/false)));
    }
    ColumnUse& use = uses[found - names.begin()];
    if (use.role != ColumnUse::kIgnored) {
      return Fail(fmt::format("{}:1:{}: column `{}` is named twice in {}{}", path,
                              header[found - names.begin()].column, name,
                              use.role == role ? list : "feature_columns and target_columns",
                              use.role == role ? "" : "; a column is either a feature or a target"));
    }
    use = {role, slot};
    return llvm::Error::success();
  };
  for (size_t i = 0; i < target_columns.size(); ++i) {
    if (llvm::Error error = resolve(target_columns[i], ColumnUse::kTarget, i, "target_columns")) return error;
  }
  int64_t num_features = 0;
  if (feature_columns.empty()) {
    for (ColumnUse& use : uses) {
      if (use.role == ColumnUse::kIgnored) use = {ColumnUse::kFeature, num_features++};
    }
  } else {
    for (const std::string& name : feature_columns) {
      if (llvm::Error error = resolve(name, ColumnUse::kFeature, num_features++, "feature_columns")) {
        return error;
      }
    }
  }
  if (num_features == 0) {
    return Fail(fmt::format(
        "{}:1:1: no feature columns are left once the targets are taken; add input columns", path));
  }

  const int64_t num_targets = static_cast<int64_t>(target_columns.size());
  CsvTable table;
  table.num_features = num_features;
  table.num_targets = num_targets;
  std::vector<float>& features = table.features;
  std::vector<float>& regression_targets = table.regression_targets;
  std::vector<int64_t>& labels = table.labels;
  int64_t& rows = table.rows;
  while (next_line(&line)) {
    // A large file takes longer to read than the collective timeout: say the rank is at work.
    if (line_number % 4096 == 0) progress::StillWorking();
    // Blank lines (a trailing one above all) carry no sample.
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    std::vector<Cell> cells = SplitCells(line);
    if (cells.size() != names.size()) {
      // Point at the first extra cell, or just past the end of a short row.
      int64_t column = cells.size() > names.size() ? cells[names.size()].column - 1
                                                   : static_cast<int64_t>(line.size()) + 1;
      return Fail(
          fmt::format("{}:{}:{}: expected {} cells as in the header, found {}; every row needs one "
                      "value per column",
                      path, line_number, column, names.size(), cells.size()));
    }
    features.resize(features.size() + num_features);
    float* feature_row = features.data() + rows * num_features;
    if (!class_labels) regression_targets.resize(regression_targets.size() + num_targets);
    for (size_t c = 0; c < cells.size(); ++c) {
      const ColumnUse& use = uses[c];
      if (use.role == ColumnUse::kIgnored) continue;
      const Cell& cell = cells[c];
      double value = 0;
      if (!ParseNumber(cell.text, &value)) {
        std::string found = cell.text.empty() ? "an empty cell" : fmt::format("`{}`", cell.text);
        return Fail(
            fmt::format("{}:{}:{}: expected a number in column `{}`, found {}; cells must be plain "
                        "numbers such as `-1.5e3` (no quotes, units or thousands separators)",
                        path, line_number, cell.column, names[c], found));
      }
      if (use.role == ColumnUse::kFeature) {
        feature_row[use.slot] = static_cast<float>(value);
      } else if (!class_labels) {
        regression_targets[rows * num_targets + use.slot] = static_cast<float>(value);
      } else {
        // Labels index the classes: whole numbers only (2^53 keeps the double exact).
        if (!(std::trunc(value) == value && std::fabs(value) <= 9007199254740992.0)) {
          return Fail(
              fmt::format("{}:{}:{}: expected an integer class label in column `{}`, found `{}`; "
                          "labels are class indices 0, 1, 2, ...",
                          path, line_number, cell.column, names[c], cell.text));
        }
        labels.push_back(static_cast<int64_t>(value));
      }
    }
    ++rows;
  }
  if (rows == 0) {
    return Fail(fmt::format("{}:{}:1: no data rows after the header; add one line per sample", path,
                            line_number + 1));
  }
  return table;
}

}  // namespace accel::rt::data
