#ifndef ACCEL_COMPILER_CLI_SHELL_WORD_H_
#define ACCEL_COMPILER_CLI_SHELL_WORD_H_

#include <string>
#include <string_view>

namespace accel::cli {

// `text` as one POSIX shell word: as written when it holds only characters no shell treats
// specially, else in single quotes (a `'` inside becomes `'\''`). For command lines a user may
// paste: `accelrun --dry-run`'s commands, the batch scripts `accelc export` writes.
std::string ShellWord(std::string_view text);

}  // namespace accel::cli

#endif  // ACCEL_COMPILER_CLI_SHELL_WORD_H_
