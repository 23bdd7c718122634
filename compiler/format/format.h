#ifndef ACCEL_COMPILER_FORMAT_FORMAT_H_
#define ACCEL_COMPILER_FORMAT_FORMAT_H_

#include <cstddef>
#include <string>

#include "compiler/diagnostics/diagnostic.h"
#include "compiler/source/source_file.h"

// `accelc fmt`: the one canonical layout of `.accel` files (docs/fmt.md).
namespace accel::format {

// Lists, maps and enums that fit in this many columns go on one line.
inline constexpr size_t kLineLimit = 100;

struct Formatted {
  enum class Outcome {
    kFormatted,     // `text` is the file in the canonical layout (maybe the same as the input)
    kSyntaxErrors,  // the file does not parse; the errors went to the diagnostics, `text` is empty
    kUnsafe,        // the layout would have changed what the file means: `problem` says how
  };
  Outcome outcome = Outcome::kFormatted;
  std::string text;
  std::string problem;
};

// Lays out `source` in the canonical layout, keeping every comment. Syntax errors are reported
// to `diagnostics` (and nothing is formatted). Before returning a layout, parses it again and
// checks that it has the same tokens, comments and syntax tree as `source`: a formatter bug
// then leaves the file alone instead of changing its meaning. Never throws.
Formatted Format(const source::SourceFile& source, diag::DiagnosticEngine& diagnostics,
                 size_t line_limit = kLineLimit);

}  // namespace accel::format

#endif  // ACCEL_COMPILER_FORMAT_FORMAT_H_
