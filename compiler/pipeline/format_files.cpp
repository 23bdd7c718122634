#include "compiler/pipeline/format_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "compiler/diagnostics/diagnostic.h"
#include "compiler/diagnostics/render.h"
#include "compiler/pipeline/compile.h"
#include "compiler/pipeline/inputs.h"
#include "compiler/format/format.h"
#include "compiler/format/line_diff.h"
#include "compiler/source/source_file.h"

namespace accel::pipeline {
namespace {

constexpr int kClean = 0;
constexpr int kChanged = 1;
constexpr int kFailed = 2;

bool EndsWith(const std::string& text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Writes `text` to `path` by way of a temporary file in the same folder, renamed over it, so a
// reader (or a crash) never sees half a file. The file keeps its permission bits. Returns an
// error message, or "".
std::string WriteAtomically(const std::string& path, const std::string& text) {
  std::error_code ec;
  // Through a symlink, replace the file it points to, not the link.
  std::filesystem::path target = std::filesystem::canonical(path, ec);
  if (ec) return fmt::format("cannot write `{}`: {}", path, ec.message());
  struct stat status {};
  if (stat(target.c_str(), &status) != 0)
    return fmt::format("cannot write `{}`: {}", path, std::strerror(errno));
  std::string temporary = target.parent_path() / ("." + target.filename().string() + ".accelc-fmt-XXXXXX");
  int fd = mkstemp(temporary.data());
  if (fd < 0) return fmt::format("cannot write `{}`: {}", path, std::strerror(errno));
  bool ok = fchmod(fd, status.st_mode & 07777) == 0;
  for (size_t written = 0; ok && written < text.size();) {
    ssize_t n = write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) written += static_cast<size_t>(n);
  }
  ok = ok && fsync(fd) == 0;
  int saved = errno;
  ok = close(fd) == 0 && ok;
  if (ok && std::rename(temporary.c_str(), target.c_str()) == 0) return "";
  if (saved == 0) saved = errno;
  unlink(temporary.c_str());
  return fmt::format("cannot write `{}`: {}", path, std::strerror(saved));
}

// The files an argument names, or an error.
std::vector<std::string> FilesOf(const std::string& argument, std::vector<std::string>& errors) {
  if (argument == "-") return {argument};
  bool pattern = argument.find_first_of("*?[") != std::string::npos;
  std::error_code ec;
  if (pattern || std::filesystem::is_directory(argument, ec)) {
    Inputs inputs = ExpandInputs({argument});
    errors.insert(errors.end(), inputs.errors.begin(), inputs.errors.end());
    std::vector<std::string> specs;
    std::copy_if(inputs.files.begin(), inputs.files.end(), std::back_inserter(specs),
                 [](const std::string& file) { return EndsWith(file, ".accel"); });
    return specs;
  }
  if (!EndsWith(argument, ".accel")) {
    bool config = EndsWith(argument, ".yaml") || EndsWith(argument, ".yml") || EndsWith(argument, ".json");
    errors.push_back(fmt::format("`{}` is not an `.accel` file; `accelc fmt` formats `.accel` specs only{}",
                                 argument, config ? " (check config files with `accelc check`)" : ""));
    return {};
  }
  return {argument};
}

// Formats one file (or standard input for `-`); returns its exit status.
int FormatOne(const std::string& path, FormatMode mode, bool color) {
  llvm::Expected<source::SourceFile> source = source::SourceFile::Read(path, kMaxSourceBytes);
  if (!source) {
    // Too large is a problem of the file, left unformatted as one with syntax errors (exit 1,
    // as `check` exits for it); unreadable is an I/O failure (exit 2).
    int status = kFailed;
    llvm::handleAllErrors(
        source.takeError(),
        [&](const source::FileTooLargeError& error) {
          fmt::print(stderr, "accelc: error: {}; left unformatted\n", error.message());
          status = kChanged;
        },
        [&](const llvm::ErrorInfoBase& error) { fmt::print(stderr, "accelc: error: {}\n", error.message()); });
    return status;
  }
  diag::DiagnosticEngine diagnostics;
  format::Formatted formatted = format::Format(*source, diagnostics);
  switch (formatted.outcome) {
    case format::Formatted::Outcome::kSyntaxErrors:
      fmt::print(stderr, "{}", diag::RenderText(diagnostics.diagnostics(), {color}));
      fmt::print(stderr, "accelc: {} has syntax errors; left unformatted\n", source->name());
      return kChanged;
    case format::Formatted::Outcome::kUnsafe:
      fmt::print(stderr,
                 "accelc: internal error: {}: {}; left unformatted (please report this with the file)\n",
                 source->name(), formatted.problem);
      return kFailed;
    case format::Formatted::Outcome::kFormatted:
      break;
  }
  bool changed = formatted.text != source->text();
  bool from_stdin = path == "-";
  if (mode == FormatMode::kWrite && from_stdin) {
    fmt::print("{}", formatted.text);
    return kClean;
  }
  if (!changed) return kClean;
  switch (mode) {
    case FormatMode::kCheck:
      fmt::print("{}\n", source->name());
      return kChanged;
    case FormatMode::kDiff:
      fmt::print("{}", format::UnifiedDiff(source->text(), formatted.text, source->name()));
      return kChanged;
    case FormatMode::kWrite:
      if (std::string error = WriteAtomically(path, formatted.text); !error.empty()) {
        fmt::print(stderr, "accelc: error: {}\n", error);
        return kFailed;
      }
      fmt::print("{}\n", source->name());
      return kClean;
  }
  return kClean;
}

}  // namespace

int FormatFiles(const std::vector<std::string>& arguments, FormatMode mode, bool color) {
  int status = kClean;
  std::vector<std::string> errors;
  std::vector<std::string> files;
  for (const std::string& argument : arguments) {
    for (std::string& file : FilesOf(argument, errors)) {
      if (std::find(files.begin(), files.end(), file) == files.end()) files.push_back(std::move(file));
    }
  }
  for (const std::string& error : errors) fmt::print(stderr, "accelc: error: {}\n", error);
  if (!errors.empty()) status = kFailed;
  for (const std::string& file : files) {
    std::fflush(stdout);  // keep each file's output in order with its errors
    status = std::max(status, FormatOne(file, mode, color));
  }
  return status;
}

}  // namespace accel::pipeline
