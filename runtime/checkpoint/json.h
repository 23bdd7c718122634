#ifndef ACCEL_RUNTIME_CHECKPOINT_JSON_H_
#define ACCEL_RUNTIME_CHECKPOINT_JSON_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

// A strict JSON reader for the files a checkpoint is made of (safetensors headers, shard
// indexes, manifests). llvm::json is not used for them because it keeps the last of two
// duplicate keys, reads `2.0` as the integer 2 and replaces lone surrogates with U+FFFD; the
// safetensors rules (catalog §8.4 ST-004, ST-005, ST-011) and "a tensor listed in two shards"
// need all three rejected.
namespace accel::rt::checkpoint {

struct JsonValue {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  // kString: the decoded UTF-8 text; kNumber: the literal as written (e.g. `-1.5e3`).
  std::string text;
  std::vector<JsonValue> items;
  // Members in document order; the parser guarantees the keys are unique.
  std::vector<std::pair<std::string, JsonValue>> members;

  // The value of an integer literal without sign, fraction or exponent that fits 64 bits;
  // empty for anything else (`-1`, `2.0`, `1e3`, `18446744073709551616`, a string).
  std::optional<uint64_t> AsUnsigned() const;
  // The member named `key` of an object; null when absent or when this is not an object.
  const JsonValue* Find(std::string_view key) const;
};

// What made a document invalid, for callers that map problems to rule ids.
enum class JsonProblem { kSyntax, kEncoding, kDuplicateKey };

// Parses one JSON document (RFC 8259; whitespace around it allowed). Fails, with the byte
// offset, on invalid UTF-8 or lone surrogates (kEncoding), a duplicate key in any object
// (kDuplicateKey), nesting deeper than 64 or anything after the document (kSyntax). If
// `problem` is set, it receives the kind of failure.
llvm::Expected<JsonValue> ParseJson(std::string_view text, JsonProblem* problem = nullptr);

// Appends `text` as a JSON string literal. Non-ASCII is written as UTF-8 when `ascii_only` is
// false (as serde_json does) and as \uXXXX escapes when true (as Python's json.dumps does).
void AppendJsonString(std::string& out, std::string_view text, bool ascii_only = false);

// Whether `text` is well-formed UTF-8 (no overlong forms, no surrogates, nothing past U+10FFFF).
bool IsValidUtf8(std::string_view text);

// The text of a checkpoint's small JSON files (trainer_state.json, optimizer.json, ...):
// indented by 2, keys sorted as llvm::json sorts them, a newline at the end.
std::string PrettyJson(const llvm::json::Value& value);

}  // namespace accel::rt::checkpoint

#endif  // ACCEL_RUNTIME_CHECKPOINT_JSON_H_
