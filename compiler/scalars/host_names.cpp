#include "compiler/scalars/host_names.h"

#include <cstdio>

namespace accel::scalars {
namespace {

constexpr size_t kMaxHostBytes = 253;  // RFC 1035's limit for a full domain name

// Bytes of UTF-8 letters too: Python resolves an internationalized name (`café.example`)
// through IDNA, so torchrun reaches it.
bool IsNameByte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || (static_cast<unsigned char>(c) & 0x80) != 0;
}

bool IsIpv6Byte(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' || c == '.';
}

std::string Describe(char c, size_t offset) {
  char code[8];
  std::snprintf(code, sizeof code, "0x%02x", static_cast<unsigned char>(c));
  const char* what = c == '\n' || c == '\r' ? "a line break"
                     : c == '\0'            ? "a NUL byte"
                     : c == ' ' || c == '\t' ? "a blank"
                                             : "a byte no host name holds";
  return std::string("it holds ") + what + " (byte " + code + " at offset " + std::to_string(offset) + ")";
}

}  // namespace

std::string WhyNotAHost(std::string_view text) {
  if (text.empty()) return "it is empty";
  if (text.size() > kMaxHostBytes) return "it is longer than the 253 bytes of a host name";
  std::string_view address = text;
  if (address.front() == '[' && address.back() == ']') address = address.substr(1, address.size() - 2);
  if (address.find(':') != std::string_view::npos) {
    // IPv6: hex groups, an embedded IPv4 tail, and an optional `%zone` (a link-local interface).
    size_t zone = address.find('%');
    for (size_t i = 0; i < address.size(); ++i) {
      char c = address[i];
      bool allowed = i < zone ? IsIpv6Byte(c) : (i == zone || IsNameByte(c));
      if (!allowed) return Describe(c, i + (address.data() - text.data()));
    }
    return "";
  }
  for (size_t i = 0; i < text.size(); ++i) {
    if (!IsNameByte(text[i])) return Describe(text[i], i);
  }
  return "";
}

}  // namespace accel::scalars
