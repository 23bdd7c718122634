#ifndef ACCEL_COMPILER_DRIVER_INPUTS_H_
#define ACCEL_COMPILER_DRIVER_INPUTS_H_

#include <string>
#include <vector>

namespace accel::driver {

struct Inputs {
  std::vector<std::string> files;   // in argument order; a directory's files sorted by name
  std::vector<std::string> errors;  // one line per argument that named nothing
};

// Expands `accelc check` arguments: a file (or `-` for standard input) stays as given; a
// directory becomes every `.accel`, `.yaml` and `.yml` file below it (hidden folders skipped;
// `.json` files are taken only when named or matched by a pattern, as most JSON is not
// config); a pattern with `*`, `?` or `[` is expanded here too, so quoting it works the same
// in every shell, and `**` matches any number of folders. Each file appears once.
Inputs ExpandInputs(const std::vector<std::string>& arguments);

}  // namespace accel::driver

#endif  // ACCEL_COMPILER_DRIVER_INPUTS_H_
