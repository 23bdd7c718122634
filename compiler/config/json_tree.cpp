#include "compiler/config/json_tree.h"

#include <limits>

#include <fmt/format.h>

#include "compiler/scalars/number_words.h"

namespace accel::config {
namespace {

constexpr uint32_t kNotKept = std::numeric_limits<uint32_t>::max();
constexpr uint32_t kNoPosition = std::numeric_limits<uint32_t>::max();

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The characters of a bare word: a literal, a number, or an unquoted string written by mistake.
bool IsWordCharacter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '+' ||
         c == '-' || c == '.';
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void AppendUtf8(uint32_t code_point, std::string& out) {
  if (code_point < 0x80) {
    out += static_cast<char>(code_point);
  } else if (code_point < 0x800) {
    out += static_cast<char>(0xC0 | (code_point >> 6));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    out += static_cast<char>(0xE0 | (code_point >> 12));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code_point >> 18));
    out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code_point & 0x3F));
  }
}

// The length of the well-formed UTF-8 sequence at `at` (RFC 3629: no overlong forms, no
// surrogates, nothing past U+10FFFF), or 0. Python's utf-8 codec refuses the same bytes.
size_t Utf8Length(std::string_view text, size_t at) {
  auto byte = [&](size_t i) { return i < text.size() ? static_cast<unsigned char>(text[i]) : 0u; };
  auto continuation = [&](size_t i, unsigned low = 0x80, unsigned high = 0xBF) {
    return byte(i) >= low && byte(i) <= high;
  };
  unsigned lead = byte(at);
  if (lead >= 0xC2 && lead <= 0xDF) return continuation(at + 1) ? 2 : 0;
  if (lead >= 0xE0 && lead <= 0xEF) {
    // E0 needs A0.. (no overlong), ED ..9F (no surrogates).
    unsigned low = lead == 0xE0 ? 0xA0 : 0x80;
    unsigned high = lead == 0xED ? 0x9F : 0xBF;
    return continuation(at + 1, low, high) && continuation(at + 2) ? 3 : 0;
  }
  if (lead >= 0xF0 && lead <= 0xF4) {
    unsigned low = lead == 0xF0 ? 0x90 : 0x80;
    unsigned high = lead == 0xF4 ? 0x8F : 0xBF;
    return continuation(at + 1, low, high) && continuation(at + 2) && continuation(at + 3) ? 4 : 0;
  }
  return 0;
}

class JsonParser {
 public:
  JsonParser(std::string_view text, const JsonLimits& limits) : text_(text), limits_(limits) {}

  JsonDocument Run() {
    // json.load raises on a byte order mark ("Unexpected UTF-8 BOM") rather than skipping it.
    if (text_.substr(0, 3) == "\xEF\xBB\xBF") {
      Fail(0,
           "the file starts with a UTF-8 byte order mark, which Python's json.load refuses; save it "
           "without one");
      return Finish();
    }
    SkipSpace();
    if (at_ == text_.size()) {
      document_.values.push_back({JsonValue::Kind::kNull, false, kNoPosition, 1, 0, 0});
      return Finish();
    }
    if (Value(0)) {
      SkipSpace();
      if (at_ < text_.size())
        Fail(at_, fmt::format("{} after the top-level value; a JSON file holds one value", Found()));
    }
    return Finish();
  }

 private:
  JsonDocument Finish() {
    if (document_.error) {
      document_.values.clear();
      document_.decoded.clear();
    }
    return std::move(document_);
  }

  // Records the first error only; returns false so that callers can `return Fail(...)`.
  bool Fail(size_t offset, std::string message, JsonError::Kind kind = JsonError::Kind::kSyntax) {
    if (!document_.error)
      document_.error = JsonError{kind, static_cast<uint32_t>(offset), std::move(message)};
    return false;
  }

  void SkipSpace() {
    while (at_ < text_.size() && IsSpace(text_[at_])) ++at_;
  }

  // What is at the cursor, for messages: "`x`", "the byte 0xC3", "the end of the file".
  std::string Found() const {
    if (at_ >= text_.size()) return "the end of the file";
    unsigned char c = static_cast<unsigned char>(text_[at_]);
    if (c >= 0x21 && c <= 0x7E) return fmt::format("unexpected `{}`", static_cast<char>(c));
    return fmt::format("unexpected byte 0x{:02X}", c);
  }

  // "line 3, column 7" of `offset`, columns in bytes as diagnostics count them.
  std::string Where(size_t offset) const {
    size_t line = 1;
    size_t line_start = 0;
    for (size_t i = 0; i < offset; ++i) {
      if (text_[i] == '\n') {
        ++line;
        line_start = i + 1;
      }
    }
    return fmt::format("line {}, column {}", line, offset - line_start + 1);
  }

  // Adds a value while values are still kept and returns its index, else kNotKept. The root
  // and keys are not counted; the value past the budget is kept to show that there are more.
  uint32_t Keep(JsonValue::Kind kind, size_t offset, bool key, uint32_t text_begin = 0,
                uint32_t text_size = 0, bool decoded = false) {
    if (!keeping_) return kNotKept;
    if (!key && !document_.values.empty() && ++kept_ > limits_.max_values) keeping_ = false;
    uint32_t index = static_cast<uint32_t>(document_.values.size());
    document_.values.push_back(
        {kind, decoded, static_cast<uint32_t>(offset), index + 1, text_begin, text_size});
    return index;
  }

  void Close(uint32_t index) {
    if (index != kNotKept) document_.values[index].next = static_cast<uint32_t>(document_.values.size());
  }

  // A value at the cursor, inside `depth` containers.
  bool Value(int depth) {
    if (depth > limits_.max_depth) return Fail(at_, "", JsonError::Kind::kTooDeep);
    if (at_ == text_.size()) return Fail(at_, "the file ends where a value is expected");
    switch (text_[at_]) {
      case '{':
        return Object(depth);
      case '[':
        return Array(depth);
      case '"':
        return String(false);
      default:
        return Word();
    }
  }

  bool Object(int depth) {
    size_t open = at_++;
    uint32_t index = Keep(JsonValue::Kind::kObject, open, false);
    SkipSpace();
    if (at_ < text_.size() && text_[at_] == '}') {
      ++at_;
      Close(index);
      return true;
    }
    for (;;) {
      if (at_ == text_.size()) return Unclosed(open, "object", '}');
      if (text_[at_] != '"') return KeyExpected();
      if (!String(true)) return false;
      SkipSpace();
      if (at_ == text_.size()) return Unclosed(open, "object", '}');
      if (text_[at_] != ':')
        return Fail(at_, fmt::format("{} after a key; a key and its value are separated by `:`", Found()));
      ++at_;
      SkipSpace();
      if (!Value(depth + 1)) return false;
      SkipSpace();
      if (at_ == text_.size()) return Unclosed(open, "object", '}');
      if (text_[at_] == '}') {
        ++at_;
        Close(index);
        return true;
      }
      if (text_[at_] != ',')
        return Fail(at_, fmt::format("{} after a value in an object; entries are separated by `,` and the "
                                     "object ends with `}}`",
                                     Found()));
      size_t comma = at_++;
      SkipSpace();
      if (at_ < text_.size() && text_[at_] == '}') return TrailingComma(comma, '}');
    }
  }

  bool Array(int depth) {
    size_t open = at_++;
    uint32_t index = Keep(JsonValue::Kind::kArray, open, false);
    SkipSpace();
    if (at_ < text_.size() && text_[at_] == ']') {
      ++at_;
      Close(index);
      return true;
    }
    for (;;) {
      if (!Value(depth + 1)) return false;
      SkipSpace();
      if (at_ == text_.size()) return Unclosed(open, "array", ']');
      if (text_[at_] == ']') {
        ++at_;
        Close(index);
        return true;
      }
      if (text_[at_] != ',')
        return Fail(at_, fmt::format("{} after an item of an array; items are separated by `,` and the array "
                                     "ends with `]`",
                                     Found()));
      size_t comma = at_++;
      SkipSpace();
      if (at_ < text_.size() && text_[at_] == ']') return TrailingComma(comma, ']');
    }
  }

  bool Unclosed(size_t open, const char* what, char close) {
    return Fail(at_, fmt::format("the file ends inside the {} opened at {}; close it with `{}`", what,
                                 Where(open), close));
  }

  bool TrailingComma(size_t comma, char close) {
    return Fail(comma,
                fmt::format("a comma before `{}`; JSON allows none after the last entry, remove it", close));
  }

  bool KeyExpected() {
    if (text_[at_] == '\'') return Fail(at_, "a key in single quotes; JSON keys take double quotes");
    if (text_[at_] == '/' || text_[at_] == '#') return Comment();
    size_t end = at_;
    while (end < text_.size() && IsWordCharacter(text_[end])) ++end;
    if (end > at_) {
      std::string_view word = text_.substr(at_, end - at_);
      return Fail(
          at_, fmt::format("the key `{}` is not quoted; JSON keys take double quotes: `\"{}\"`", word, word));
    }
    return Fail(at_, fmt::format("{} where a key is expected; a key is a string in double quotes", Found()));
  }

  // `//`, `/*` and `#` start comments in JSON5 and YAML, which people write into JSON files.
  bool Comment() { return Fail(at_, "a comment; JSON has none, and json.load refuses the file: remove it"); }

  // A string at the cursor (its opening quote). Its text points into the file unless it has
  // escapes, which are resolved into `decoded`.
  bool String(bool key) {
    size_t open = at_++;
    // Whether the value will be kept, so decoding of a dropped one costs no memory.
    bool keep = keeping_;
    bool escaped = false;
    uint32_t decoded_begin = static_cast<uint32_t>(document_.decoded.size());
    size_t run = at_;  // the start of the bytes not yet copied to `decoded`
    for (;;) {
      if (at_ == text_.size())
        return Fail(open, "the string that starts here is not closed; end it with `\"`");
      unsigned char c = static_cast<unsigned char>(text_[at_]);
      if (c == '"') break;
      if (c == '\n' || c == '\r')
        return Fail(at_,
                    "a line break inside a string; close the string with `\"` on its line, or write the "
                    "break as `\\n`");
      if (c < 0x20)
        return Fail(
            at_,
            fmt::format("a control character (U+{:04X}) inside a string; write it as `\\u{:04x}`", c, c));
      if (c >= 0x80) {
        size_t length = Utf8Length(text_, at_);
        if (length == 0)
          return Fail(at_, fmt::format("the byte 0x{:02X} is not UTF-8; JSON files are UTF-8 text", c));
        at_ += length;
        continue;
      }
      if (c != '\\') {
        ++at_;
        continue;
      }
      if (keep) document_.decoded.append(text_.substr(run, at_ - run));
      escaped = true;
      if (!Escape(keep)) return false;
      run = at_;
    }
    if (escaped && keep) document_.decoded.append(text_.substr(run, at_ - run));
    uint32_t begin = escaped ? decoded_begin : static_cast<uint32_t>(open + 1);
    uint32_t size = escaped ? static_cast<uint32_t>(document_.decoded.size()) - decoded_begin
                            : static_cast<uint32_t>(at_ - open - 1);
    ++at_;  // the closing quote
    Keep(JsonValue::Kind::kString, open, key, begin, size, escaped);
    return true;
  }

  // The escape at the cursor (its backslash), appended to `decoded` when `keep`.
  bool Escape(bool keep) {
    size_t backslash = at_++;
    if (at_ == text_.size()) return Fail(backslash, "the string that ends the file is not closed");
    char c = text_[at_++];
    std::string& out = document_.decoded;
    auto simple = std::string_view("\"\\/bfnrt").find(c);
    if (simple != std::string_view::npos) {
      if (keep) out += "\"\\/\b\f\n\r\t"[simple];
      return true;
    }
    if (c != 'u') {
      return Fail(backslash,
                  fmt::format("`\\{}` is not a JSON escape; write a backslash as `\\\\`",
                              static_cast<unsigned char>(c) >= 0x21 && c != 0x7F ? std::string(1, c)
                                                                                 : std::string()));
    }
    std::optional<uint32_t> unit = HexUnit(backslash);
    if (!unit) return false;
    uint32_t code_point = *unit;
    if (code_point >= 0xD800 && code_point <= 0xDBFF && text_.substr(at_, 2) == "\\u") {
      // A surrogate pair: the low half follows as its own escape.
      size_t second = at_;
      at_ += 2;
      std::optional<uint32_t> low = HexUnit(second);
      if (!low) return false;
      if (*low >= 0xDC00 && *low <= 0xDFFF) {
        code_point = 0x10000 + ((code_point - 0xD800) << 10) + (*low - 0xDC00);
      } else {
        // Not a low half: the high one stands alone, and the second escape is its own character.
        if (keep) AppendUtf8(0xFFFD, out);
        code_point = *low;
      }
    }
    // A lone surrogate is no character UTF-8 can hold; Python keeps it, we keep its place.
    if (code_point >= 0xD800 && code_point <= 0xDFFF) code_point = 0xFFFD;
    if (keep) AppendUtf8(code_point, out);
    return true;
  }

  // The four hex digits after `\u` at the cursor.
  std::optional<uint32_t> HexUnit(size_t backslash) {
    uint32_t unit = 0;
    for (int i = 0; i < 4; ++i) {
      int digit = at_ < text_.size() ? HexDigit(text_[at_]) : -1;
      if (digit < 0) {
        Fail(backslash, "`\\u` takes four hex digits, as in `\\u00e9`");
        return std::nullopt;
      }
      unit = unit * 16 + static_cast<uint32_t>(digit);
      ++at_;
    }
    return unit;
  }

  // A bare word at the cursor: `true`, `false`, `null`, a number, or Python's `NaN`,
  // `Infinity` and `-Infinity`; anything else is an error that says what it looks like.
  bool Word() {
    size_t start = at_;
    while (at_ < text_.size() && IsWordCharacter(text_[at_])) ++at_;
    std::string_view word = text_.substr(start, at_ - start);
    if (word == "null") {
      Keep(JsonValue::Kind::kNull, start, false);
      return true;
    }
    if (word == "true" || word == "false" || word == "NaN" || word == "Infinity" || word == "-Infinity" ||
        scalars::IsJsonNumber(word)) {
      Keep(JsonValue::Kind::kLiteral, start, false, static_cast<uint32_t>(start),
           static_cast<uint32_t>(word.size()));
      return true;
    }
    at_ = start;
    if (word.empty()) {
      char c = text_[at_];
      if (c == '\'') return Fail(at_, "a string in single quotes; JSON strings take double quotes");
      if (c == '/' || c == '#') return Comment();
      return Fail(at_, fmt::format("{} where a value is expected", Found()));
    }
    char first = word[0];
    if ((first >= '0' && first <= '9') || first == '-' || first == '+' || first == '.') {
      return Fail(start,
                  fmt::format("`{}` is not a JSON number; write digits without leading zeros or a `+`, "
                              "with digits on both sides of a `.`, as in `0.5` or `1e-3`",
                              word));
    }
    return Fail(start,
                fmt::format("`{}` is not a JSON value; a string takes double quotes: `\"{}\"`", word, word));
  }

  std::string_view text_;
  const JsonLimits& limits_;
  size_t at_ = 0;
  JsonDocument document_;
  bool keeping_ = true;
  int64_t kept_ = 0;
};

}  // namespace

JsonDocument ParseJson(std::string_view text, const JsonLimits& limits) {
  return JsonParser(text, limits).Run();
}

YAML::NodeType::value JsonNode::Type() const {
  switch (value().kind) {
    case JsonValue::Kind::kNull:
      return YAML::NodeType::Null;
    case JsonValue::Kind::kLiteral:
    case JsonValue::Kind::kString:
      return YAML::NodeType::Scalar;
    case JsonValue::Kind::kObject:
      return YAML::NodeType::Map;
    case JsonValue::Kind::kArray:
      return YAML::NodeType::Sequence;
  }
  return YAML::NodeType::Null;
}

YAML::Mark JsonNode::Mark() const {
  YAML::Mark mark;
  mark.pos = value().offset == kNoPosition ? -1 : static_cast<int>(value().offset);
  return mark;
}

std::string_view JsonNode::Tag() const {
  switch (value().kind) {
    case JsonValue::Kind::kNull:
      return "";
    case JsonValue::Kind::kString:
      return "!";
    default:
      return "?";
  }
}

std::string_view JsonNode::Scalar() const {
  const JsonValue& v = value();
  std::string_view from = v.decoded ? std::string_view(document_->decoded) : text_;
  return from.substr(v.text_begin, v.text_size);
}

std::optional<JsonNode> JsonNode::Find(std::string_view key) const {
  std::optional<JsonNode> found;
  ForEachEntry([&](const JsonNode& k, const JsonNode& v) {
    if (!found && k.Scalar() == key) found = v;
  });
  return found;
}

}  // namespace accel::config
