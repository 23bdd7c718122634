#ifndef ACCEL_COMPILER_CONFIG_JSON_TREE_H_
#define ACCEL_COMPILER_CONFIG_JSON_TREE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/mark.h>
#include <yaml-cpp/node/type.h>

namespace accel::config {

// One value of a JSON file. The values of a file sit in one array in the file's order: an
// object is followed by its keys and values (key, value, key, value, ...), an array by its
// items, each with everything inside it. About 20 bytes a value, where yaml-cpp's node tree
// spends ~380.
struct JsonValue {
  enum class Kind : uint8_t {
    kNull,     // `null`
    kLiteral,  // a number, `true`, `false`, `NaN`, `Infinity` or `-Infinity`: its text as written
    kString,   // its text with the escapes resolved
    kObject,
    kArray,
  };
  Kind kind = Kind::kNull;
  // Whether the text is in JsonDocument::decoded (a string with escapes) rather than the file.
  bool decoded = false;
  // Where the value starts in the file: a string's opening quote, a container's bracket.
  uint32_t offset = 0;
  // The index of the first value after this one and all it holds.
  uint32_t next = 0;
  // A scalar's text: `text_size` bytes from `text_begin` in the file, or in `decoded`.
  uint32_t text_begin = 0;
  uint32_t text_size = 0;
};

// Why a file is not JSON, and where.
struct JsonError {
  enum class Kind : uint8_t {
    kSyntax,   // `message` says what is wrong and how to fix it
    kTooDeep,  // a value nested deeper than JsonLimits::max_depth
  };
  Kind kind = Kind::kSyntax;
  // The byte of the file the error is at; the file's size when it ends too early.
  uint32_t offset = 0;
  std::string message;
};

struct JsonLimits {
  // Values inside more containers than this are an error (JsonError::kTooDeep at the first).
  int max_depth = 256;
  // Values kept after the root. Past them the file is still checked for syntax, but only the
  // first `max_values + 1` values are kept, so that a reader sees there are more.
  int64_t max_values = 100'000;
};

// A parsed JSON file: `values[0]` is the top-level value. Empty when `error` is set.
struct JsonDocument {
  std::vector<JsonValue> values;
  // The strings whose escapes were resolved, one after the other.
  std::string decoded;
  std::optional<JsonError> error;
};

// Parses `text` as Python's json.load does, which is how DeepSpeed and Accelerate read these
// files: RFC 8259, plus `NaN`, `Infinity` and `-Infinity`. Refused, each with its own message:
// comments, trailing commas, single quotes, unquoted words, a byte order mark (json.load
// raises on one), raw control characters and invalid UTF-8 in strings. A lone surrogate
// escape (`\ud800`) reads as U+FFFD. A text of only whitespace reads as one null value without
// a position (offset `UINT32_MAX`), as an empty YAML document does. Recursion is bounded by
// `limits.max_depth`. `text` must be under 4 GiB, as every source::Span is.
JsonDocument ParseJson(std::string_view text, const JsonLimits& limits = {});

// One value of a JsonDocument, answering what the config reader asks of a yaml-cpp node, with
// the same answers yaml-cpp gives for the same JSON (a test compares them on every JSON file
// in the tests). `document` and the text it was parsed from must outlive it.
class JsonNode {
 public:
  JsonNode(const JsonDocument& document, std::string_view text, uint32_t index)
      : document_(&document), text_(text), index_(index) {}

  YAML::NodeType::value Type() const;
  bool IsDefined() const { return true; }
  bool IsMap() const { return value().kind == JsonValue::Kind::kObject; }
  bool IsScalar() const { return Type() == YAML::NodeType::Scalar; }
  bool IsNull() const { return value().kind == JsonValue::Kind::kNull; }
  // Where the value starts (only `pos` is set); `pos` is -1 for the null of an empty file.
  YAML::Mark Mark() const;
  // `!` for a string, `?` for another value, empty for a null, as yaml-cpp tags them.
  std::string_view Tag() const;
  // A scalar's text (escapes resolved); empty for a container.
  std::string_view Scalar() const;
  // The value of `key` in an object, if it has one (the first, if it has it twice).
  std::optional<JsonNode> Find(std::string_view key) const;

  // Calls `visit(key, value)` for each entry of an object, in order.
  template <typename Visit>
  void ForEachEntry(Visit visit) const {
    for (uint32_t at = index_ + 1; at < value().next; at = document_->values[at + 1].next)
      visit(JsonNode(*document_, text_, at), JsonNode(*document_, text_, at + 1));
  }
  // Calls `visit(item)` for each item of an array, in order.
  template <typename Visit>
  void ForEachItem(Visit visit) const {
    for (uint32_t at = index_ + 1; at < value().next; at = document_->values[at].next)
      visit(JsonNode(*document_, text_, at));
  }

 private:
  const JsonValue& value() const { return document_->values[index_]; }

  const JsonDocument* document_;
  std::string_view text_;
  uint32_t index_;
};

}  // namespace accel::config

#endif  // ACCEL_COMPILER_CONFIG_JSON_TREE_H_
