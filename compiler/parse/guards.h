#ifndef ACCEL_COMPILER_PARSE_GUARDS_H_
#define ACCEL_COMPILER_PARSE_GUARDS_H_

#include <cstddef>
#include <functional>
#include <optional>
#include <string_view>

// Defences that keep hostile input from crashing the parser. Internal to compiler/parse.
namespace accel::parse {

// The deepest nesting of brackets, prefix operators or expressions a file may have. Deeper
// input is rejected with A1006 before any recursive walk sees it.
inline constexpr int kMaxNesting = 256;

// The most tokens a file may have (A1011). Real specs have a few thousand; at this bound the
// parser holds about 100 MiB.
inline constexpr size_t kMaxTokens = 200'000;

// Byte offset of the first byte that is not part of valid UTF-8 (overlong forms, surrogates
// and code points above U+10FFFF are invalid too), or empty when `text` is valid.
std::optional<size_t> FirstInvalidUtf8(std::string_view text);

// Runs `body` on a thread with a stack of `stack_bytes` and waits for it. ANTLR's parser
// recurses once per nesting level; a large stack makes kMaxNesting levels safe whatever the
// caller's own stack is.
void RunWithStack(size_t stack_bytes, const std::function<void()>& body);

}  // namespace accel::parse

#endif  // ACCEL_COMPILER_PARSE_GUARDS_H_
