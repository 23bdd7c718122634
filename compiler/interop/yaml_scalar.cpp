#include "compiler/interop/yaml_scalar.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <regex>
#include <utility>

#include <fmt/format.h>

#include "compiler/interop/values.h"
#include "compiler/scalars/bool_words.h"

namespace accel::interop {
namespace {

// The implicit resolvers of PyYAML (yaml/resolver.py, YAML 1.1) and of the YAML 1.2 core
// schema (yaml-cpp, ruamel, Go): a plain scalar matching one of them is not read as a string.
// 1.2 is included although Accelerate reads 1.1, so `1e5` is quoted for every reader.
bool ReadsAsNonString(const std::string& text) {
  // 1.1 bool; 1.2's are a subset.
  if (scalars::Yaml11Bool(text).has_value()) return true;
  static const std::regex kPatterns[] = {
      // 1.1 null; 1.2's is a subset.
      std::regex("~|null|Null|NULL"),
      // 1.1 int, with binary, octal, hex and sexagesimal (`1:30`) forms.
      std::regex("[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|"
                 "[-+]?[1-9][0-9_]*(:[0-5]?[0-9])+"),
      // 1.1 float: a dot is required, and so is the exponent's sign.
      std::regex("[-+]?([0-9][0-9_]*)\\.[0-9_]*([eE][-+][0-9]+)?|\\.[0-9][0-9_]*([eE][-+][0-9]+)?|"
                 "[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+\\.[0-9_]*|[-+]?\\.(inf|Inf|INF)|\\.(nan|NaN|NAN)"),
      // 1.2 core int and float (`1e5`, `0o17`, `+12`).
      std::regex("[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+"),
      std::regex("[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?"),
      // 1.1 timestamp (a date alone, or with a time) and the merge and value keys.
      std::regex("[0-9]{4}-[0-9]{2}-[0-9]{2}|"
                 "[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt]|[ \\t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(\\.[0-9]*)?"
                 "([ \\t]*(Z|[-+][0-9]{1,2}(:[0-9]{2})?))?"),
      std::regex("<<|="),
  };
  for (const std::regex& pattern : kPatterns) {
    if (std::regex_match(text, pattern)) return true;
  }
  return false;
}

bool PrintableAscii(char c) { return c >= 0x20 && c <= 0x7E; }

// Whether `text` can be written as a plain scalar in block context and read back as itself.
// Stricter than PyYAML's emitter (which also allows `:x` or `?x` in front), so any YAML
// reader agrees.
bool PlainAllowed(std::string_view text) {
  if (text.empty() || text.front() == ' ' || text.back() == ' ') return false;
  if (text.substr(0, 3) == "---" || text.substr(0, 3) == "...") return false;
  if (std::string_view("-?:,[]{}#&*!|>'\"%@`").find(text.front()) != std::string_view::npos) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    if (!PrintableAscii(text[i])) return false;
    bool space_after = i + 1 == text.size() || text[i + 1] == ' ';
    // `a: b` starts a mapping and ` #` a comment; a trailing `:` also reads as a key.
    if (text[i] == ':' && space_after) return false;
    if (text[i] == '#' && i > 0 && text[i - 1] == ' ') return false;
  }
  return !ReadsAsNonString(std::string(text));
}

// Decodes one UTF-8 sequence at `i`, advancing `i`; a malformed byte decodes as itself.
uint32_t NextCodePoint(std::string_view text, size_t& i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char lead = byte(i);
  int length = lead < 0x80           ? 1
               : (lead >> 5) == 0x6  ? 2
               : (lead >> 4) == 0xE  ? 3
               : (lead >> 3) == 0x1E ? 4
                                     : 0;
  if (length <= 1 || i + length > text.size()) {
    ++i;
    return lead;
  }
  uint32_t code = lead & (0xFF >> (length + 1));
  for (int k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) {
      ++i;
      return lead;
    }
    code = (code << 6) | (byte(i + k) & 0x3F);
  }
  i += length;
  return code;
}

// PyYAML's double-quoted style with its escapes (emitter.py ESCAPE_REPLACEMENTS), every
// non-ASCII character escaped as PyYAML does without `allow_unicode`.
std::string DoubleQuoted(std::string_view text) {
  std::string out = "\"";
  for (size_t i = 0; i < text.size();) {
    uint32_t c = NextCodePoint(text, i);
    // PyYAML's named escapes (emitter.py ESCAPE_REPLACEMENTS) for the ASCII range.
    static const std::pair<uint32_t, const char*> kNamed[] = {
        {'\0', "\\0"}, {'\a', "\\a"}, {'\b', "\\b"}, {'\t', "\\t"}, {'\n', "\\n"}, {'\v', "\\v"},
        {'\f', "\\f"}, {'\r', "\\r"}, {0x1B, "\\e"}, {'"', "\\\""}, {'\\', "\\\\"}};
    const auto* named =
        std::find_if(std::begin(kNamed), std::end(kNamed), [&](const auto& e) { return e.first == c; });
    if (named != std::end(kNamed)) {
      out += named->second;
      continue;
    }
    if (c >= 0x20 && c <= 0x7E) {
      out += static_cast<char>(c);
    } else if (c <= 0xFF) {
      out += fmt::format("\\x{:02X}", c);
    } else if (c <= 0xFFFF) {
      out += fmt::format("\\u{:04X}", c);
    } else {
      out += fmt::format("\\U{:08X}", c);
    }
  }
  return out + "\"";
}

}  // namespace

std::string YamlString(std::string_view text) {
  if (PlainAllowed(text)) return std::string(text);
  bool ascii = true;
  for (char c : text) ascii = ascii && PrintableAscii(c);
  if (!ascii) return DoubleQuoted(text);
  // Single quotes escape nothing but themselves, doubled.
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

std::string YamlFloat(double value) {
  if (std::isnan(value)) return ".nan";
  if (std::isinf(value)) return value > 0 ? ".inf" : "-.inf";
  std::string text = ShortestDouble(value);
  size_t e = text.find('e');
  std::string mantissa = text.substr(0, e);
  // PyYAML reads a plain scalar as a float only with a dot (its own representer adds `.0`).
  if (mantissa.find('.') == std::string::npos) mantissa += ".0";
  if (e == std::string::npos) return mantissa;
  std::string exponent = text.substr(e + 1);
  if (exponent[0] != '-' && exponent[0] != '+') exponent = "+" + exponent;
  return mantissa + "e" + exponent;
}

}  // namespace accel::interop
