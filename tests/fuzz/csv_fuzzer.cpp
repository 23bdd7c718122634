// libFuzzer target for the CSV dataset reader (runtime/data/csv_table.h): a file a spec names,
// so untrusted. Any bytes must give a table or an error, never a crash or a read outside the
// input (ASan and UBSan are on in build-fuzz). The first byte picks the columns asked for; a
// table it accepts has one row of each kind per data row.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/data/csv_table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  uint8_t mode = data[0];
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  bool class_labels = (mode & 1) != 0;
  std::vector<std::string> features = (mode & 2) ? std::vector<std::string>{"a", "b"} : std::vector<std::string>{};
  std::vector<std::string> targets = (mode & 4) ? std::vector<std::string>{"y", "z"} : std::vector<std::string>{"y"};
  llvm::Expected<accel::rt::data::CsvTable> table =
      accel::rt::data::ParseCsv(text, "fuzz.csv", features, targets, class_labels);
  if (!table) {
    llvm::consumeError(table.takeError());
    return 0;
  }
  const accel::rt::data::CsvTable& t = *table;
  if (t.rows <= 0 || t.num_features <= 0) __builtin_trap();
  if (t.features.size() != static_cast<size_t>(t.rows * t.num_features)) __builtin_trap();
  if (class_labels ? t.labels.size() != static_cast<size_t>(t.rows)
                   : t.regression_targets.size() != static_cast<size_t>(t.rows * t.num_targets))
    __builtin_trap();
  return 0;
}
