#ifndef ACCEL_COMPILER_FORMAT_LINE_DIFF_H_
#define ACCEL_COMPILER_FORMAT_LINE_DIFF_H_

#include <string>
#include <string_view>

// A line diff for `accelc fmt --diff`, so that showing a change needs no diff(1) on the machine.
namespace accel::format {

// Returns the unified diff (`---`/`+++` headers, `@@` hunks with `context` lines around each
// change) that turns `before` into `after`, both labelled `name`; empty when they are equal.
// Lines are compared byte for byte, so a CRLF line differs from its LF twin. The edit script is
// a shortest one (Myers' algorithm) unless the texts differ in more than a few thousand lines,
// where it falls back to replacing the whole differing middle.
std::string UnifiedDiff(std::string_view before, std::string_view after, std::string_view name,
                        int context = 3);

}  // namespace accel::format

#endif  // ACCEL_COMPILER_FORMAT_LINE_DIFF_H_
