#ifndef ACCEL_RUNTIME_DATA_CSV_TABLE_H_
#define ACCEL_RUNTIME_DATA_CSV_TABLE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "llvm/Support/Error.h"

// The CSV dataset's text read into rows of numbers, torch-free so that the fuzz build reads any
// bytes through it (LoadCsv in dataset.h makes the tensors). The file is untrusted: an error
// names the line and column and quotes a cell only once the header matched, never the header.
namespace accel::rt::data {

struct CsvTable {
  int64_t rows = 0;
  int64_t num_features = 0;
  int64_t num_targets = 0;
  std::vector<float> features;            // rows x num_features, row-major
  std::vector<float> regression_targets;  // rows x num_targets, without class labels
  std::vector<int64_t> labels;            // one per row, with class labels
};

// `text` is the file's bytes (a leading UTF-8 byte order mark is skipped); `path` names it in
// errors. A header names the columns; `target_columns` are the targets (one with
// `class_labels`, whole numbers), `feature_columns` the features (empty: every other column).
llvm::Expected<CsvTable> ParseCsv(std::string_view text, const std::string& path,
                                  const std::vector<std::string>& feature_columns,
                                  const std::vector<std::string>& target_columns, bool class_labels);

}  // namespace accel::rt::data

#endif  // ACCEL_RUNTIME_DATA_CSV_TABLE_H_
