#ifndef ACCEL_COMPILER_PIPELINE_FORMAT_FILES_H_
#define ACCEL_COMPILER_PIPELINE_FORMAT_FILES_H_

#include <string>
#include <vector>

namespace accel::pipeline {

enum class FormatMode {
  kWrite,  // rewrite each file that changes, in place; name it on stdout
  kCheck,  // write nothing; name each file that would change on stdout
  kDiff,   // write nothing; print a unified diff of each file that would change
};

// `accelc fmt`. Each argument is a `.accel` file, a directory or pattern (every `.accel` file
// it names), or `-`: standard input, formatted to standard output. A file with syntax errors
// is left untouched and its errors are printed to stderr (in colour when `color`). Files are
// replaced atomically (a temporary file in the same folder, renamed over the original) and
// keep their permissions. Returns the exit status: 2 if an argument could not be read or
// written or is not an `.accel` spec, else 1 if a file has syntax errors or, with kCheck and
// kDiff, would change, else 0.
int FormatFiles(const std::vector<std::string>& arguments, FormatMode mode, bool color);

}  // namespace accel::pipeline

#endif  // ACCEL_COMPILER_PIPELINE_FORMAT_FILES_H_
