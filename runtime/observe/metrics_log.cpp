#include "runtime/observe/metrics_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string_view>

#include <fmt/format.h>

#include "compiler/plan/plan.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace accel::rt::observe {
namespace {

llvm::Error SystemError(const std::string& what, const std::string& path, int error = errno) {
  return llvm::createStringError(std::error_code(error, std::generic_category()), "%s `%s`: %s", what.c_str(),
                                 path.c_str(), std::strerror(error));
}

// Where the last complete line of the file open on `fd` ends (just past its '\n'), or 0 when
// there is none; -1 on a read error. Reads backwards so a long log is not read whole.
off_t EndOfLastLine(int fd, off_t size) {
  constexpr off_t kChunk = 64 << 10;
  char buffer[kChunk];
  for (off_t end = size; end > 0;) {
    off_t begin = end > kChunk ? end - kChunk : 0;
    size_t want = static_cast<size_t>(end - begin);
    ssize_t got = ::pread(fd, buffer, want, begin);
    if (got < 0 && errno == EINTR) continue;
    if (got != static_cast<ssize_t>(want)) return -1;
    for (size_t i = want; i > 0; --i) {
      if (buffer[i - 1] == '\n') return begin + static_cast<off_t>(i);
    }
    end = begin;
  }
  return 0;
}

}  // namespace

llvm::Expected<MetricsLog> MetricsLog::Open(const std::string& path, bool append) {
  std::filesystem::path target(path);
  if (target.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(target.parent_path(), ec);
    if (ec) return SystemError("cannot create the directory of", path, ec.value());
  }
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC);
  // The partial-line scan reads the file, so appending opens it read-write.
  if (append) flags = (flags & ~O_WRONLY) | O_RDWR;
  int fd = ::open(path.c_str(), flags, 0644);
  if (fd < 0) return SystemError("cannot open", path);
  MetricsLog log(path, fd);
  if (append) {
    struct stat info;
    if (::fstat(fd, &info) != 0) return SystemError("cannot stat", path);
    off_t keep = EndOfLastLine(fd, info.st_size);
    if (keep < 0) return SystemError("cannot read", path);
    // A crash mid-write leaves a line without its '\n'; the next line would be glued to it.
    if (keep != info.st_size && ::ftruncate(fd, keep) != 0) return SystemError("cannot truncate", path);
  }
  return log;
}

MetricsLog::MetricsLog(MetricsLog&& other) noexcept : path_(std::move(other.path_)), fd_(other.fd_) {
  other.fd_ = -1;
}

MetricsLog& MetricsLog::operator=(MetricsLog&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

MetricsLog::~MetricsLog() {
  if (fd_ >= 0) ::close(fd_);
}

std::string MetricsLog::FormatLine(int64_t step, const Scalars& scalars, double time, const Labels& labels) {
  std::string line;
  llvm::raw_string_ostream os(line);
  llvm::json::OStream json(os);
  auto utf8 = [](const std::string& text) {
    return llvm::json::isUTF8(text) ? text : llvm::json::fixUTF8(text);
  };
  json.object([&] {
    json.attribute("step", step);
    json.attributeBegin("time");
    json.rawValue(fmt::format("{:.6f}", time));
    json.attributeEnd();
    for (const auto& [name, text] : labels) json.attribute(utf8(name), utf8(text));
    for (const auto& [name, value] : scalars) {
      json.attributeBegin(llvm::json::isUTF8(name) ? name : llvm::json::fixUTF8(name));
      // fmt's shortest round-trip form ("0.1", "3", "1e+20") is valid JSON; NaN and inf are not.
      if (std::isfinite(value)) {
        json.rawValue(fmt::format("{}", value));
      } else {
        json.value(nullptr);
      }
      json.attributeEnd();
    }
  });
  os.flush();
  line += '\n';
  return line;
}

llvm::Error MetricsLog::Write(int64_t step, const Scalars& scalars) {
  double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  return Write(step, scalars, now);
}

llvm::Error MetricsLog::Write(int64_t step, const Scalars& scalars, double time) {
  for (const auto& [name, value] : scalars) {
    if (name == "step" || name == "time") {
      return llvm::createStringError(std::errc::invalid_argument,
                                     "metric `%s` in `%s` clashes with the line's own field", name.c_str(),
                                     path_.c_str());
    }
  }
  return Append(FormatLine(step, scalars, time));
}

llvm::Error MetricsLog::WriteEvent(int64_t step, const std::string& event, const Labels& labels,
                                   const Scalars& scalars, double time) {
  Labels all{{"event", event}};
  all.insert(all.end(), labels.begin(), labels.end());
  auto reserved = [](const std::string& name) { return name == "step" || name == "time" || name == "event"; };
  for (const auto& [name, value] : scalars) {
    if (reserved(name)) {
      return llvm::createStringError(std::errc::invalid_argument,
                                     "metric `%s` in `%s` clashes with the line's own field", name.c_str(),
                                     path_.c_str());
    }
  }
  for (size_t i = 1; i < all.size(); ++i) {
    if (reserved(all[i].first)) {
      return llvm::createStringError(std::errc::invalid_argument,
                                     "label `%s` in `%s` clashes with the line's own field",
                                     all[i].first.c_str(), path_.c_str());
    }
  }
  return Append(FormatLine(step, scalars, time, all));
}

llvm::Error MetricsLog::Append(const std::string& line) {
  // One write(2) per line: with O_APPEND a kill leaves whole lines plus at most a partial one.
  // Regular files take the whole buffer at once; the loop only covers signals and full disks.
  // A disk that fills mid-line takes part of it: the part is cut off again, so that the file
  // still ends with a whole line (the only writer is this one).
  const off_t before = ::lseek(fd_, 0, SEEK_END);
  std::string_view rest(line);
  while (!rest.empty()) {
    ssize_t written = ::write(fd_, rest.data(), rest.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      llvm::Error error = SystemError("cannot write", path_);
      if (before >= 0 && rest.size() != line.size()) (void)::ftruncate(fd_, before);
      return error;
    }
    rest.remove_prefix(static_cast<size_t>(written));
  }
  return llvm::Error::success();
}

RunHistory ReadRunHistory(const std::string& path, int64_t step) {
  RunHistory history;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    // Skipped like any unreadable line: parsing it would exhaust the parser's stack.
    if (plan::JsonNestsDeeperThan(line, plan::kMaxJsonDepth)) continue;
    llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(line);
    if (!parsed) {
      llvm::consumeError(parsed.takeError());
      continue;
    }
    const llvm::json::Object* record = parsed->getAsObject();
    if (record == nullptr || !record->getInteger("step")) continue;
    int64_t at = *record->getInteger("step");
    if (record->getString("event")) {
      // A later launch may have gone past `step` before it was killed: only what led to `step`.
      if (auto elapsed = record->getNumber("elapsed_seconds"); elapsed && at <= step)
        history.elapsed_seconds = *elapsed;
      continue;
    }
    auto loss = record->getNumber("loss");
    if (!loss) continue;
    if (!history.first_loss) history.first_loss = *loss;
    if (at <= step) history.last_loss = *loss;
  }
  return history;
}

}  // namespace accel::rt::observe
