#include "runtime/launch/accelerate/python_value.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

namespace accel::rt::launch::accelerate {
namespace {

// Python's repr of a str: single quotes unless the text holds a single quote and no double one.
std::string QuoteString(const std::string& text) {
  bool single = text.find('\'') != std::string::npos;
  bool dbl = text.find('"') != std::string::npos;
  char quote = single && !dbl ? '"' : '\'';
  std::string out(1, quote);
  for (unsigned char c : text) {
    if (c == quote || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + quote;
}

std::string Join(const PyList& items) {
  std::string out;
  for (const PyValue& item : items) out += (out.empty() ? "" : ", ") + Repr(item);
  return out;
}

}  // namespace

std::string FloatRepr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[64];
  // Shortest round-trip digits in scientific form: `d.ddde±XX`.
  auto [end, error] = std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::scientific);
  std::string scientific(buffer, end);
  size_t e = scientific.find('e');
  std::string mantissa = scientific.substr(0, e);
  int exponent = std::atoi(scientific.c_str() + e + 1);
  bool negative = mantissa[0] == '-';
  std::string digits;
  for (char c : mantissa)
    if (c >= '0' && c <= '9') digits += c;
  // Python counts the decimal point's position after the first digit: 1e16 has 17.
  int point = exponent + 1;
  std::string out = negative ? "-" : "";
  if (point > -4 && point <= 16) {
    if (point <= 0) {
      out += "0." + std::string(-point, '0') + digits;
    } else if (static_cast<size_t>(point) >= digits.size()) {
      out += digits + std::string(point - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, point) + "." + digits.substr(point);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  return out + fmt::format("e{}{:02d}", exponent < 0 ? '-' : '+', std::abs(exponent));
}

std::string Str(const PyValue& value) {
  if (const std::string* text = value.String()) return *text;
  return Repr(value);
}

std::string Repr(const PyValue& value) {
  struct Printer {
    std::string operator()(std::monostate) const { return "None"; }
    std::string operator()(bool b) const { return b ? "True" : "False"; }
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return FloatRepr(d); }
    std::string operator()(const std::string& s) const { return QuoteString(s); }
    std::string operator()(const PyList& list) const { return "[" + Join(list) + "]"; }
    std::string operator()(const PyDict& dict) const {
      std::string out;
      for (const auto& [key, item] : dict)
        out += (out.empty() ? "" : ", ") + QuoteString(key) + ": " + Repr(item);
      return "{" + out + "}";
    }
    std::string operator()(const PyValue::Tuple& tuple) const {
      return "(" + Join(tuple.items) + (tuple.items.size() == 1 ? ",)" : ")");
    }
  };
  return std::visit(Printer{}, value.value);
}

bool Truthy(const PyValue& value) {
  struct Test {
    bool operator()(std::monostate) const { return false; }
    bool operator()(bool b) const { return b; }
    bool operator()(int64_t i) const { return i != 0; }
    bool operator()(double d) const { return d != 0; }
    bool operator()(const std::string& s) const { return !s.empty(); }
    bool operator()(const PyList& list) const { return !list.empty(); }
    bool operator()(const PyDict& dict) const { return !dict.empty(); }
    bool operator()(const PyValue::Tuple& tuple) const { return !tuple.items.empty(); }
  };
  return std::visit(Test{}, value.value);
}

}  // namespace accel::rt::launch::accelerate
