#include "compiler/source/named_file.h"

#include <sys/stat.h>

#include <algorithm>

namespace accel::source {
namespace fs = std::filesystem;

namespace {

// What a path that is not a regular file is, for the message.
const char* KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

bool StartsWith(const fs::path& path, const fs::path& folder) {
  auto [left, right] = std::mismatch(folder.begin(), folder.end(), path.begin(), path.end());
  return left == folder.end();
}

}  // namespace

std::string WhyNotReadable(const std::string& path) {
  std::error_code ec;
  fs::path resolved = fs::weakly_canonical(path, ec);
  if (ec) resolved = fs::path(path);
  // The kernel's pseudo-files first: /proc's look like empty regular files.
  for (const char* system : {"/proc", "/sys", "/dev"}) {
    if (StartsWith(resolved, system)) {
      return std::string("it is under ") + system + ", a file the system makes, not one a config names";
    }
  }
  struct stat status {};
  if (::stat(path.c_str(), &status) != 0) return "";  // missing: the caller says so in its own words
  if (!S_ISREG(status.st_mode)) return std::string("it is ") + KindOf(status.st_mode);
  return "";
}

fs::path RepositoryOf(const std::string& referrer) {
  std::error_code ec;
  fs::path file = fs::weakly_canonical(referrer.empty() ? fs::path(".") : fs::path(referrer), ec);
  fs::path start = file.has_parent_path() ? file.parent_path() : fs::current_path(ec);
  for (fs::path folder = start;; folder = folder.parent_path()) {
    if (fs::exists(folder / ".git", ec)) return folder;
    if (!folder.has_parent_path() || folder.parent_path() == folder) break;
  }
  return start;
}

bool IsInside(const std::string& path, const fs::path& folder) {
  std::error_code ec;
  fs::path resolved = fs::weakly_canonical(path, ec);
  return !ec && StartsWith(resolved, folder);
}

bool LooksLikeJsonObject(std::string_view text) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  size_t first = text.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && text[first] == '{';
}

}  // namespace accel::source
