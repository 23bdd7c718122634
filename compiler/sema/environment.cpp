#include "compiler/sema/environment.h"

#include <cstdlib>

namespace accel::sema {

std::optional<std::string> ProcessEnvironment::Get(const std::string& name) const {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

std::optional<std::string> MapEnvironment::Get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::optional<std::string> Interpolate(const std::string& text, const Environment& environment,
                                       std::string& unset) {
  if (text.find("${") == std::string::npos) return text;
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, 3, "$${") == 0) {
      out += "${";
      i += 3;
      continue;
    }
    size_t close = text.compare(i, 2, "${") == 0 ? text.find('}', i + 2) : std::string::npos;
    if (close == std::string::npos) {
      out += text[i++];
      continue;
    }
    std::string inside = text.substr(i + 2, close - i - 2);
    size_t dash = inside.find(":-");
    std::string name = inside.substr(0, dash);
    std::optional<std::string> set = environment.Get(name);
    if (set && !set->empty()) {
      out += *set;
    } else if (dash != std::string::npos) {
      out += inside.substr(dash + 2);
    } else {
      unset = name;
      return std::nullopt;
    }
    i = close + 1;
  }
  return out;
}

}  // namespace accel::sema
