#include "runtime/distributed/environment.h"

#include "runtime/distributed/collectives.h"

#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/csrc/api/include/torch/version.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <regex>
#include <stdexcept>
#include <tuple>

extern char** environ;

namespace accel::rt::distributed {
namespace {

std::string Upper(std::string text) {
  for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

std::optional<std::string> Get(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

// A version as PEP 440 orders it.
struct Version {
  std::vector<long> release;
  int phase = 3;  // 0 dev-only, 1 a, 2 b, 3 rc... see Key()
  long pre_number = 0;
  bool has_pre = false;
  bool has_post = false;
  long post = 0;
  bool has_dev = false;
  long dev = 0;
  std::string local;

  // PEP 440's ordering within one release: X.devN < X.aN.devM < X.aN < X.bN < X.rcN < X < X.postN.
  std::tuple<int, long, int, long, int, long> Key() const {
    int pre_rank = has_pre ? phase : (has_dev && !has_post ? -1 : 4);
    return {pre_rank, has_pre ? pre_number : 0, has_post ? 1 : 0, post, has_dev ? 0 : 1, dev};
  }
};

Version Parse(std::string_view text) {
  static const std::regex pattern(
      R"(^\s*v?(\d+(?:\.\d+)*)(?:[-_.]?(a|alpha|b|beta|c|rc|pre|preview)[-_.]?(\d*))?)"
      R"((?:(?:-(\d+))|(?:[-_.]?(post|rev|r)[-_.]?(\d*)))?(?:[-_.]?(dev)[-_.]?(\d*))?(?:\+([a-z0-9]+(?:[-_.][a-z0-9]+)*))?\s*$)",
      std::regex::icase);
  std::string input(text);
  std::smatch match;
  if (!std::regex_match(input, match, pattern)) {
    throw std::invalid_argument("`" + input + "` is not a version (PEP 440)");
  }
  Version version;
  std::string release = match[1];
  size_t start = 0;
  while (start <= release.size()) {
    size_t dot = release.find('.', start);
    version.release.push_back(std::stol(release.substr(start, dot - start)));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  while (version.release.size() > 1 && version.release.back() == 0) version.release.pop_back();
  if (match[2].matched) {
    std::string phase = Upper(match[2]);
    version.has_pre = true;
    version.phase = phase[0] == 'A' ? 1 : phase[0] == 'B' ? 2 : 3;
    version.pre_number = match[3].length() > 0 ? std::stol(match[3]) : 0;
  }
  if (match[4].matched || match[5].matched) {
    version.has_post = true;
    std::string number = match[4].matched ? std::string(match[4]) : std::string(match[6]);
    version.post = number.empty() ? 0 : std::stol(number);
  }
  if (match[7].matched) {
    version.has_dev = true;
    version.dev = match[8].length() > 0 ? std::stol(match[8]) : 0;
  }
  if (match[9].matched) version.local = match[9];
  return version;
}

// Local parts (`+cpu.1`): none sorts first; then segment by segment, numbers numerically and
// above words, words case-insensitively; a longer part wins a tie.
int CompareLocal(const std::string& a, const std::string& b) {
  auto segments = [](const std::string& text) {
    std::vector<std::string> out;
    std::string current;
    for (char c : text) {
      if (c == '.' || c == '-' || c == '_') {
        out.push_back(current);
        current.clear();
      } else {
        current += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      }
    }
    if (!text.empty()) out.push_back(current);
    return out;
  };
  auto numeric = [](const std::string& s) {
    return !s.empty() && std::all_of(s.begin(), s.end(),
                                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  };
  std::vector<std::string> x = segments(a);
  std::vector<std::string> y = segments(b);
  for (size_t i = 0; i < std::min(x.size(), y.size()); ++i) {
    bool xn = numeric(x[i]);
    bool yn = numeric(y[i]);
    if (xn && yn) {
      long xv = std::stol(x[i]);
      long yv = std::stol(y[i]);
      if (xv != yv) return xv < yv ? -1 : 1;
    } else if (xn != yn) {
      return xn ? 1 : -1;
    } else if (x[i] != y[i]) {
      return x[i] < y[i] ? -1 : 1;
    }
  }
  if (x.size() != y.size()) return x.size() < y.size() ? -1 : 1;
  return 0;
}

}  // namespace

PatchEnvironment::PatchEnvironment(const std::vector<std::pair<std::string, std::string>>& variables) {
  for (const auto& [key, value] : variables) {
    std::string name = Upper(key);
    saved_.emplace_back(name, Get(name));
    ::setenv(name.c_str(), value.c_str(), 1);
  }
}

PatchEnvironment::~PatchEnvironment() {
  // In reverse, so a name patched twice ends with its value from before the first patch.
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
    if (it->second) {
      ::setenv(it->first.c_str(), it->second->c_str(), 1);
    } else {
      ::unsetenv(it->first.c_str());
    }
  }
}

ClearEnvironment::ClearEnvironment() {
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string text = *entry;
    size_t equals = text.find('=');
    if (equals == std::string::npos) continue;
    snapshot_.emplace_back(text.substr(0, equals), text.substr(equals + 1));
  }
  ::clearenv();
}

ClearEnvironment::~ClearEnvironment() {
  ::clearenv();
  for (const auto& [name, value] : snapshot_) ::setenv(name.c_str(), value.c_str(), 1);
}

bool IsCudaAvailable() { return at::hasCUDA() && at::detail::getCUDAHooks().getNumGPUs() > 0; }

bool IsBf16Available(bool /*ignore_tpu*/) {
  // No TPU exists for this runtime, so `ignore_tpu` never matters.
  if (!IsCudaAvailable()) return true;
  return at::detail::getCUDAHooks().supportsBFloat16ConvolutionWithCuDNNv8();
}

bool IsMpsAvailable() { return at::hasMPS(); }
bool IsNpuAvailable() { return false; }
bool IsXpuAvailable() { return false; }
bool IsTorchXlaAvailable() { return false; }

bool IsNcclAvailable() { return IsNcclCompiledIn(); }

bool IsGlooAvailable() { return true; }

std::string TorchVersion() { return TORCH_VERSION; }

int CompareVersions(std::string_view a, std::string_view b) {
  Version x = Parse(a);
  Version y = Parse(b);
  if (x.release != y.release) return x.release < y.release ? -1 : 1;
  if (x.Key() != y.Key()) return x.Key() < y.Key() ? -1 : 1;
  return CompareLocal(x.local, y.local);
}

bool CompareVersionsWith(std::string_view installed, std::string_view operation, std::string_view version) {
  int order = CompareVersions(installed, version);
  if (operation == ">") return order > 0;
  if (operation == ">=") return order >= 0;
  if (operation == "==") return order == 0;
  if (operation == "!=") return order != 0;
  if (operation == "<=") return order <= 0;
  if (operation == "<") return order < 0;
  throw std::invalid_argument("`" + std::string(operation) +
                              "` is not a comparison; use one of > >= == != <= <");
}

bool IsTorchVersion(std::string_view operation, std::string_view version) {
  return CompareVersionsWith(TorchVersion(), operation, version);
}

}  // namespace accel::rt::distributed
