#include "runtime/checkpoint/json.h"

#include <algorithm>

#include <fmt/format.h>

namespace accel::rt::checkpoint {
namespace {

constexpr int kMaxDepth = 64;

bool IsContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// Length of the well-formed UTF-8 sequence at the start of `text` (Unicode table 3-7), or 0.
size_t Utf8SequenceLength(std::string_view text) {
  auto at = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  unsigned char c = at(0);
  if (c < 0x80) return 1;
  size_t length = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
  if (length == 0 || text.size() < length) return 0;
  // The second byte's range excludes overlong forms, UTF-16 surrogates and values past U+10FFFF.
  unsigned char low = 0x80, high = 0xBF;
  if (c == 0xE0) low = 0xA0;
  if (c == 0xED) high = 0x9F;
  if (c == 0xF0) low = 0x90;
  if (c == 0xF4) high = 0x8F;
  if (at(1) < low || at(1) > high) return 0;
  for (size_t i = 2; i < length; ++i) {
    if (!IsContinuation(at(i))) return 0;
  }
  return length;
}

void AppendUtf8(std::string& out, uint32_t code) {
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else if (code < 0x800) {
    out += static_cast<char>(0xC0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else if (code < 0x10000) {
    out += static_cast<char>(0xE0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code >> 18));
    out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  }
}

uint32_t DecodeUtf8(std::string_view sequence) {
  auto at = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(sequence[i])); };
  switch (sequence.size()) {
    case 1:
      return at(0);
    case 2:
      return ((at(0) & 0x1F) << 6) | (at(1) & 0x3F);
    case 3:
      return ((at(0) & 0x0F) << 12) | ((at(1) & 0x3F) << 6) | (at(2) & 0x3F);
    default:
      return ((at(0) & 0x07) << 18) | ((at(1) & 0x3F) << 12) | ((at(2) & 0x3F) << 6) | (at(3) & 0x3F);
  }
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  JsonProblem problem() const { return problem_; }

  llvm::Expected<JsonValue> Document() {
    JsonValue value;
    SkipSpace();
    if (Value(value, 0)) {
      SkipSpace();
      if (!AtEnd()) Fail("unexpected text after the JSON document");
    }
    if (error_) return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", error_->c_str());
    return value;
  }

 private:
  // Records the first error only: later ones are consequences of it.
  bool Fail(const std::string& message, JsonProblem problem = JsonProblem::kSyntax) {
    if (!error_) {
      error_ = fmt::format("byte {}: {}", pos_, message);
      problem_ = problem;
    }
    return false;
  }

  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return AtEnd() ? '\0' : text_[pos_]; }

  void SkipSpace() {
    while (!AtEnd() && (Peek() == ' ' || Peek() == '\t' || Peek() == '\n' || Peek() == '\r')) ++pos_;
  }

  bool Expect(char c) {
    if (Peek() != c || AtEnd()) return Fail(fmt::format("expected `{}`", c));
    ++pos_;
    return true;
  }

  bool Value(JsonValue& out, int depth) {
    if (AtEnd()) return Fail("unexpected end of the document");
    switch (Peek()) {
      case '{':
        return Object(out, depth + 1);
      case '[':
        return Array(out, depth + 1);
      case '"':
        out.kind = JsonValue::Kind::kString;
        return String(out.text);
      case 't':
        out.kind = JsonValue::Kind::kBool;
        out.boolean = true;
        return Literal("true");
      case 'f':
        out.kind = JsonValue::Kind::kBool;
        return Literal("false");
      case 'n':
        out.kind = JsonValue::Kind::kNull;
        return Literal("null");
      default:
        out.kind = JsonValue::Kind::kNumber;
        return Number(out.text);
    }
  }

  bool Literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return Fail("invalid literal");
    pos_ += word.size();
    return true;
  }

  bool Object(JsonValue& out, int depth) {
    if (depth > kMaxDepth) return Fail("nested deeper than 64 levels");
    out.kind = JsonValue::Kind::kObject;
    ++pos_;
    SkipSpace();
    std::vector<size_t> key_offsets;
    if (Peek() == '}' && !AtEnd()) {
      ++pos_;
      return true;
    }
    while (true) {
      SkipSpace();
      if (Peek() != '"' || AtEnd()) return Fail("expected a string key");
      key_offsets.push_back(pos_);
      std::string key;
      if (!String(key)) return false;
      SkipSpace();
      if (!Expect(':')) return false;
      SkipSpace();
      JsonValue value;
      if (!Value(value, depth)) return false;
      out.members.emplace_back(std::move(key), std::move(value));
      SkipSpace();
      if (Peek() == ',' && !AtEnd()) {
        ++pos_;
        continue;
      }
      if (!Expect('}')) return false;
      break;
    }
    return CheckUniqueKeys(out, key_offsets);
  }

  // Sorting indices instead of filling a set while parsing: no key is copied.
  bool CheckUniqueKeys(const JsonValue& object, const std::vector<size_t>& key_offsets) {
    std::vector<size_t> order(object.members.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return object.members[a].first != object.members[b].first
                 ? object.members[a].first < object.members[b].first
                 : a < b;
    });
    for (size_t i = 1; i < order.size(); ++i) {
      if (object.members[order[i]].first == object.members[order[i - 1]].first) {
        pos_ = key_offsets[order[i]];
        return Fail(fmt::format("duplicate key \"{}\"", object.members[order[i]].first),
                    JsonProblem::kDuplicateKey);
      }
    }
    return true;
  }

  bool Array(JsonValue& out, int depth) {
    if (depth > kMaxDepth) return Fail("nested deeper than 64 levels");
    out.kind = JsonValue::Kind::kArray;
    ++pos_;
    SkipSpace();
    if (Peek() == ']' && !AtEnd()) {
      ++pos_;
      return true;
    }
    while (true) {
      SkipSpace();
      out.items.emplace_back();
      if (!Value(out.items.back(), depth)) return false;
      SkipSpace();
      if (Peek() == ',' && !AtEnd()) {
        ++pos_;
        continue;
      }
      return Expect(']');
    }
  }

  bool Hex4(uint32_t& code) {
    if (text_.size() - pos_ < 4) return Fail("truncated \\u escape");
    code = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text_[pos_++];
      code <<= 4;
      if (c >= '0' && c <= '9') {
        code |= static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        code |= static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        code |= static_cast<uint32_t>(c - 'A' + 10);
      } else {
        --pos_;
        return Fail("invalid hex digit in \\u escape");
      }
    }
    return true;
  }

  bool Escape(std::string& out) {
    if (AtEnd()) return Fail("unterminated string");
    char c = text_[pos_++];
    switch (c) {
      case '"':
      case '\\':
      case '/':
        out += c;
        return true;
      case 'b':
        out += '\b';
        return true;
      case 'f':
        out += '\f';
        return true;
      case 'n':
        out += '\n';
        return true;
      case 'r':
        out += '\r';
        return true;
      case 't':
        out += '\t';
        return true;
      case 'u':
        break;
      default:
        --pos_;
        return Fail("invalid escape");
    }
    uint32_t code = 0;
    if (!Hex4(code)) return false;
    if (code >= 0xDC00 && code <= 0xDFFF)
      return Fail("lone low surrogate in \\u escape", JsonProblem::kEncoding);
    if (code >= 0xD800 && code <= 0xDBFF) {
      // A high surrogate must be followed by a low one: together they name one code point.
      uint32_t low = 0;
      if (text_.substr(pos_, 2) != "\\u")
        return Fail("lone high surrogate in \\u escape", JsonProblem::kEncoding);
      pos_ += 2;
      if (!Hex4(low)) return false;
      if (low < 0xDC00 || low > 0xDFFF)
        return Fail("lone high surrogate in \\u escape", JsonProblem::kEncoding);
      code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
    }
    AppendUtf8(out, code);
    return true;
  }

  bool String(std::string& out) {
    ++pos_;  // the opening quote
    while (true) {
      if (AtEnd()) return Fail("unterminated string");
      unsigned char c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c == '\\') {
        ++pos_;
        if (!Escape(out)) return false;
        continue;
      }
      if (c < 0x20) return Fail("unescaped control character in string");
      size_t length = Utf8SequenceLength(text_.substr(pos_));
      if (length == 0) return Fail("invalid UTF-8", JsonProblem::kEncoding);
      out.append(text_.data() + pos_, length);
      pos_ += length;
    }
  }

  bool Digits() {
    size_t start = pos_;
    while (!AtEnd() && Peek() >= '0' && Peek() <= '9') ++pos_;
    return pos_ > start;
  }

  bool Number(std::string& out) {
    size_t start = pos_;
    if (Peek() == '-') ++pos_;
    if (Peek() == '0' && !AtEnd()) {
      ++pos_;
    } else if (!Digits()) {
      return Fail("expected a value");
    }
    if (Peek() == '.' && !AtEnd()) {
      ++pos_;
      if (!Digits()) return Fail("expected digits after `.`");
    }
    if ((Peek() == 'e' || Peek() == 'E') && !AtEnd()) {
      ++pos_;
      if (Peek() == '+' || Peek() == '-') ++pos_;
      if (!Digits()) return Fail("expected digits in the exponent");
    }
    out.assign(text_.substr(start, pos_ - start));
    return true;
  }

  std::string_view text_;
  size_t pos_ = 0;
  std::optional<std::string> error_;
  JsonProblem problem_ = JsonProblem::kSyntax;
};

}  // namespace

std::optional<uint64_t> JsonValue::AsUnsigned() const {
  if (kind != Kind::kNumber || text.empty()) return std::nullopt;
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    uint64_t digit = static_cast<uint64_t>(c - '0');
    if (value > (UINT64_MAX - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  return value;
}

const JsonValue* JsonValue::Find(std::string_view key) const {
  for (const auto& [name, value] : members) {
    if (name == key) return &value;
  }
  return nullptr;
}

llvm::Expected<JsonValue> ParseJson(std::string_view text, JsonProblem* problem) {
  Parser parser(text);
  llvm::Expected<JsonValue> value = parser.Document();
  if (!value && problem != nullptr) *problem = parser.problem();
  return value;
}

bool IsValidUtf8(std::string_view text) {
  while (!text.empty()) {
    size_t length = Utf8SequenceLength(text);
    if (length == 0) return false;
    text.remove_prefix(length);
  }
  return true;
}

void AppendJsonString(std::string& out, std::string_view text, bool ascii_only) {
  out += '"';
  while (!text.empty()) {
    unsigned char c = static_cast<unsigned char>(text[0]);
    size_t length = c < 0x80 ? 1 : std::max<size_t>(1, Utf8SequenceLength(text));
    std::string_view sequence = text.substr(0, length);
    text.remove_prefix(length);
    switch (c) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      default:
        break;
    }
    // Python's json.dumps escapes DEL and everything past ASCII; serde_json only controls.
    if (c < 0x20 || (ascii_only && c >= 0x7F)) {
      uint32_t code = DecodeUtf8(sequence);
      if (code >= 0x10000) {
        code -= 0x10000;
        out += fmt::format("\\u{:04x}\\u{:04x}", 0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF));
      } else {
        out += fmt::format("\\u{:04x}", code);
      }
    } else {
      out.append(sequence);
    }
  }
  out += '"';
}

std::string PrettyJson(const llvm::json::Value& value) {
  std::string text;
  llvm::raw_string_ostream stream(text);
  stream << llvm::formatv("{0:2}", value) << "\n";
  stream.flush();
  return text;
}

}  // namespace accel::rt::checkpoint
