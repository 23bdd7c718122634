#include "compiler/lsp/links.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "compiler/diagnostics/explanations.h"
#include "compiler/lsp/uri.h"

namespace accel::lsp {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kStdlibPrefix = "<stdlib>/";

bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

Links::Links(std::string reference_base, std::string stdlib_dir, const pipeline::Stdlib& stdlib)
    : reference_base_(std::move(reference_base)), stdlib_dir_(std::move(stdlib_dir)), stdlib_(stdlib) {
  if (!reference_base_.empty() && reference_base_.back() != '/') reference_base_ += '/';
  for (const auto& [name, record] : stdlib.schema().records) {
    for (const sema::RuleSchema& rule : record.rules) rule_records_.emplace(rule.code, name);
  }
}

std::optional<std::string> Links::CodeHref(std::string_view code) const {
  if (reference_base_.empty() || code.empty()) return std::nullopt;
  // The Markdown headings of diagnostics.md (`## A2003`) are anchored as GitHub and most
  // Markdown viewers do: lower case.
  if (diag::Explanations().count(code) > 0) return reference_base_ + "diagnostics.md#" + Lower(code);
  if (auto it = rule_records_.find(code); it != rule_records_.end()) {
    return reference_base_ + "types/" + it->second + ".md#rules";
  }
  return std::nullopt;
}

bool Links::WriteStdlib() {
  if (stdlib_state_ != StdlibState::kUnwritten) return stdlib_state_ == StdlibState::kWritten;
  stdlib_state_ = StdlibState::kFailed;
  if (stdlib_dir_.empty()) return false;
  std::error_code ec;
  fs::create_directories(stdlib_dir_, ec);
  if (ec) return false;
  for (const ast::File& file : stdlib_.files()) {
    std::string name = file.source->name();
    if (!StartsWith(name, kStdlibPrefix)) continue;
    fs::path target = fs::path(stdlib_dir_) / name.substr(kStdlibPrefix.size());
    // The folder is named by a hash of the text: a file already there is this text.
    if (fs::exists(target, ec)) continue;
    // Written beside and renamed, so two servers starting at once never see half a file.
    fs::path temporary = target;
    temporary += fmt::format(".{}.tmp", ::getpid());
    {
      std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
      out << file.source->text();
      if (!out.flush()) return false;
    }
    // Read-only: these are the schemas compiled into this accelc, not files to edit.
    ::chmod(temporary.c_str(), 0444);
    fs::rename(temporary, target, ec);
    if (ec) return false;
  }
  stdlib_state_ = StdlibState::kWritten;
  return true;
}

std::string Links::UriOf(const source::SourceFile& file) {
  const std::string& name = file.name();
  if (StartsWith(name, kStdlibPrefix)) {
    std::string relative = name.substr(kStdlibPrefix.size());
    if (WriteStdlib()) return UriFromPath((fs::path(stdlib_dir_) / relative).string());
    return "accel-stdlib:///" + relative;
  }
  return UriOfPath(name);
}

std::string Links::UriOfPath(const std::string& path) const {
  std::error_code ec;
  fs::path absolute = fs::absolute(path, ec);
  return UriFromPath(ec ? path : absolute.lexically_normal().string());
}

std::string ExecutableDir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

std::string DefaultReferenceBase() {
  std::string dir = ExecutableDir();
  if (dir.empty()) return "";
  std::error_code ec;
  for (const char* relative : {"../share/accel/reference", "../../docs/reference"}) {
    fs::path candidate = (fs::path(dir) / relative).lexically_normal();
    if (fs::is_regular_file(candidate / "diagnostics.md", ec)) return UriFromPath(candidate.string()) + "/";
  }
  return "";
}

std::string DefaultStdlibDir(const pipeline::Stdlib& stdlib) {
  // FNV-1a over every name and text: a new accelc with other schemas gets a folder of its own.
  uint64_t hash = 1469598103934665603ull;
  auto mix = [&hash](std::string_view bytes) {
    for (unsigned char c : bytes) hash = (hash ^ c) * 1099511628211ull;
  };
  for (const ast::File& file : stdlib.files()) {
    mix(file.source->name());
    mix(file.source->text());
  }
  std::string base;
  if (const char* cache = std::getenv("XDG_CACHE_HOME"); cache != nullptr && cache[0] == '/') {
    base = cache;
  } else if (const char* home = std::getenv("HOME"); home != nullptr && home[0] == '/') {
    base = std::string(home) + "/.cache";
  } else {
    return "";
  }
  return fmt::format("{}/accelc/stdlib-{:016x}", base, hash);
}

}  // namespace accel::lsp
