#ifndef ACCEL_STDLIB_EMBEDDED_STDLIB_H_
#define ACCEL_STDLIB_EMBEDDED_STDLIB_H_

#include <string_view>
#include <vector>

namespace accel::stdlib {

// One schema file compiled into the binary.
struct EmbeddedFile {
  std::string_view name;  // `<stdlib>/accelerate.accel`, as diagnostics print it
  std::string_view text;
  std::string_view image;  // its parsed AST (ast::Serialize), made at build time
};

// The stdlib/*.accel files, embedded at build time. The views live for the whole program.
const std::vector<EmbeddedFile>& Files();

}  // namespace accel::stdlib

#endif  // ACCEL_STDLIB_EMBEDDED_STDLIB_H_
