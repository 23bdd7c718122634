#include "compiler/pipeline/inputs.h"

#include <fnmatch.h>
#include <glob.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <system_error>

#include <fmt/format.h>

#include "compiler/source/source_file.h"
#include "llvm/Support/JSON.h"

namespace accel::pipeline {
namespace {

namespace fs = std::filesystem;

bool IsSpecOrConfig(const fs::path& path, bool json_too) {
  std::string extension = path.extension().string();
  return extension == ".accel" || extension == ".yaml" || extension == ".yml" ||
         (json_too && extension == ".json");
}

bool IsHidden(const fs::path& path) {
  std::string name = path.filename().string();
  return name.size() > 1 && name[0] == '.' && name != "..";
}

// Every file below `root` (hidden folders skipped) for which `keep` holds, sorted.
template <typename Keep>
std::vector<std::string> Walk(const fs::path& root, Keep keep) {
  std::vector<std::string> found;
  std::error_code ec;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec) && IsHidden(it->path())) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file(ec) && keep(it->path())) found.push_back(it->path().lexically_normal().string());
  }
  std::sort(found.begin(), found.end());
  return found;
}

bool IsPattern(const std::string& argument) { return argument.find_first_of("*?[") != std::string::npos; }

// `configs/**/*.yaml`: walk from the folder before the first wildcard and match whole paths,
// with `*` allowed to cross `/` so `**` spans folders.
std::vector<std::string> ExpandRecursive(const std::string& pattern) {
  size_t wildcard = pattern.find_first_of("*?[");
  size_t slash = pattern.rfind('/', wildcard);
  fs::path root = slash == std::string::npos ? fs::path(".") : fs::path(pattern.substr(0, slash + 1));
  bool relative_to_dot = slash == std::string::npos;
  return Walk(root, [&](const fs::path& path) {
    std::string text = path.lexically_normal().string();
    if (relative_to_dot && text.rfind("./", 0) == 0) text = text.substr(2);
    std::string collapsed = pattern;
    // `a/**/b` also matches `a/b`.
    for (size_t at; (at = collapsed.find("**/")) != std::string::npos;) collapsed.replace(at, 3, "*");
    return fnmatch(pattern.c_str(), text.c_str(), 0) == 0 || fnmatch(collapsed.c_str(), text.c_str(), 0) == 0;
  });
}

std::vector<std::string> ExpandGlob(const std::string& pattern) {
  if (pattern.find("**") != std::string::npos) return ExpandRecursive(pattern);
  std::vector<std::string> found;
  glob_t matches{};
  if (glob(pattern.c_str(), GLOB_TILDE | GLOB_BRACE, nullptr, &matches) == 0) {
    for (size_t i = 0; i < matches.gl_pathc; ++i) {
      std::error_code ec;
      if (fs::is_regular_file(matches.gl_pathv[i], ec)) found.emplace_back(matches.gl_pathv[i]);
    }
  }
  globfree(&matches);
  return found;
}

}  // namespace

std::string WhyNotConfigJson(const std::string& path, const sema::Schema& schema) {
  llvm::Expected<source::SourceFile> file = source::SourceFile::Read(path);
  if (!file) {
    llvm::consumeError(file.takeError());
    return "cannot be read, or is larger than 16 MiB";
  }
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(file->text());
  if (!json) {
    llvm::consumeError(json.takeError());
    return "not valid JSON";
  }
  const llvm::json::Object* object = json->getAsObject();
  if (object == nullptr) return "not a JSON object";
  // The roots the config reader chooses between. Keys such as `optimizer` or `checkpoint` are
  // common in other tools' JSON too, so most of the keys (notes like `_comment` aside) must be
  // the root's for the file to count as one.
  for (const char* root : {"DeepSpeedConfig", "ClusterConfig"}) {
    auto record = schema.records.find(root);
    if (record == schema.records.end()) continue;
    size_t keys = 0, known = 0;
    for (const auto& entry : *object) {
      std::string key = entry.first.str();
      if (key.empty() || key[0] == '_') continue;
      ++keys;
      if (record->second.FindFileKey(key) || record->second.FindAlias(key) || record->second.FindSynonym(key))
        ++known;
    }
    if (keys > 0 && 2 * known > keys) return "";
  }
  return "most of its top-level keys are not DeepSpeed or Accelerate config keys";
}

Inputs ExpandInputs(const std::vector<std::string>& arguments,
                    const std::function<std::string(const std::string&)>& why_not_config) {
  Inputs inputs;
  std::set<std::string> seen;
  auto add = [&](const std::string& file) {
    if (seen.insert(file).second) inputs.files.push_back(file);
  };
  for (const std::string& argument : arguments) {
    std::error_code ec;
    if (argument != "-" && fs::is_directory(argument, ec)) {
      // A `.json` is taken by content: most JSON in a repository is not config.
      std::vector<std::string> found = Walk(argument, [&](const fs::path& p) {
        if (IsSpecOrConfig(p, false)) return true;
        if (p.extension() != ".json") return false;
        std::string why = why_not_config ? why_not_config(p.string()) : "not named on the command line";
        if (why.empty()) return true;
        inputs.skipped.push_back(fmt::format("`{}`: {}", p.lexically_normal().string(), why));
        return false;
      });
      std::sort(inputs.skipped.begin(), inputs.skipped.end());
      if (found.empty()) {
        inputs.errors.push_back(
            fmt::format("no `.accel`, `.yaml`, `.yml` or DeepSpeed `.json` file under `{}`", argument));
      }
      for (const std::string& file : found) add(file);
    } else if (argument != "-" && !fs::exists(argument, ec) && IsPattern(argument)) {
      std::vector<std::string> found = ExpandGlob(argument);
      if (found.empty()) inputs.errors.push_back(fmt::format("no file matches `{}`", argument));
      for (const std::string& file : found) add(file);
    } else {
      add(argument);  // a missing file is reported when it is read, with the reason
    }
  }
  return inputs;
}

}  // namespace accel::pipeline
