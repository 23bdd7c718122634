#ifndef ACCEL_COMPILER_PIPELINE_VERIFY_H_
#define ACCEL_COMPILER_PIPELINE_VERIFY_H_

#include <string>
#include <vector>

#include "compiler/diagnostics/diagnostic.h"
#include "compiler/source/source_file.h"

namespace accel::pipeline {

// `accelc check --verify`, as `clang -verify`: the file states the diagnostics it expects in
// comments, and the check passes only if exactly those were produced.
//
//   x = 1  // expected-error [A2003] {{unknown field `x`}}
//   // expected-warning@+1 {{deprecated}}
//   // expected-error@12 [A3004] {{missing}}
//
// `@+N`/`@-N` are relative to the comment's line, `@N` is absolute, no `@` means the
// comment's own line. The code is optional; the text in `{{...}}` must occur in the message.
// Errors and warnings must all be expected; notes are checked only in files that expect one.
//
// Returns one line per mismatch (`file:line: expected error not produced: {{...}}`,
// `file:line: unexpected error [A2003]: ...`); empty means the file verifies.
std::vector<std::string> Verify(const source::SourceFile& file,
                                const std::vector<diag::Diagnostic>& produced);

}  // namespace accel::pipeline

#endif  // ACCEL_COMPILER_PIPELINE_VERIFY_H_
