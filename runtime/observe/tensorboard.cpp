#include "runtime/observe/tensorboard.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <bit>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <mutex>

#include <fmt/format.h>

#include "llvm/Support/JSON.h"

namespace accel::rt::observe {
namespace {

llvm::Error SystemError(const std::string& what, const std::string& path, int error = errno) {
  return llvm::createStringError(std::error_code(error, std::generic_category()), "%s `%s`: %s", what.c_str(),
                                 path.c_str(), std::strerror(error));
}

// One byte at a time through a 256-entry table: event files are small, speed is no concern.
constexpr std::array<uint32_t, 256> MakeCrc32cTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1) ? 0x82F63B78u : 0u);
    table[i] = crc;
  }
  return table;
}
constexpr std::array<uint32_t, 256> kCrc32cTable = MakeCrc32cTable();

// Protobuf wire format, written by hand: only the few field kinds an Event needs.
enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

void PutVarint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out += static_cast<char>((value & 0x7F) | 0x80);
    value >>= 7;
  }
  out += static_cast<char>(value);
}

void PutKey(std::string& out, uint32_t field, WireType type) { PutVarint(out, (field << 3) | type); }

// Little-endian whatever the host order, as the wire format and TFRecord require.
void PutLittleEndian(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((value >> (8 * i)) & 0xFF);
}

void PutDouble(std::string& out, uint32_t field, double value) {
  PutKey(out, field, kFixed64);
  PutLittleEndian(out, std::bit_cast<uint64_t>(value), 8);
}

void PutFloat(std::string& out, uint32_t field, float value) {
  PutKey(out, field, kFixed32);
  PutLittleEndian(out, std::bit_cast<uint32_t>(value), 4);
}

// int64 fields are varints of the two's complement (negative steps take 10 bytes).
void PutInt64(std::string& out, uint32_t field, int64_t value) {
  PutKey(out, field, kVarint);
  PutVarint(out, static_cast<uint64_t>(value));
}

void PutBytes(std::string& out, uint32_t field, std::string_view bytes) {
  PutKey(out, field, kLengthDelimited);
  PutVarint(out, bytes.size());
  out += bytes;
}

// Field numbers of tensorflow/core/util/event.proto and framework/summary.proto.
constexpr uint32_t kEventWallTime = 1, kEventStep = 2, kEventFileVersion = 3, kEventSummary = 5;
constexpr uint32_t kSummaryValue = 1;
constexpr uint32_t kValueTag = 1, kValueSimpleValue = 2;

// Buffered records are written once they pass this size, so a long run without Flush() still
// reaches the disk in pieces.
constexpr size_t kFlushBytes = 64 << 10;

std::string HostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

}  // namespace

uint32_t Crc32c(std::string_view data) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char byte : data) crc = kCrc32cTable[(crc ^ byte) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

uint32_t MaskCrc(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

std::string FrameRecord(std::string_view data) {
  std::string record;
  record.reserve(data.size() + 16);
  PutLittleEndian(record, data.size(), 8);
  PutLittleEndian(record, MaskCrc(Crc32c(record)), 4);
  record += data;
  PutLittleEndian(record, MaskCrc(Crc32c(data)), 4);
  return record;
}

std::string EncodeFileVersionEvent(double wall_time) {
  std::string event;
  PutDouble(event, kEventWallTime, wall_time);
  PutBytes(event, kEventFileVersion, "brain.Event:2");
  return event;
}

std::string EncodeScalarEvent(const std::string& tag, float value, int64_t step, double wall_time) {
  // Protobuf strings must be UTF-8; TensorBoard's Python decoder rejects anything else.
  std::string value_message;
  PutBytes(value_message, kValueTag, llvm::json::isUTF8(tag) ? tag : llvm::json::fixUTF8(tag));
  PutFloat(value_message, kValueSimpleValue, value);
  std::string summary;
  PutBytes(summary, kSummaryValue, value_message);
  std::string event;
  PutDouble(event, kEventWallTime, wall_time);
  PutInt64(event, kEventStep, step);
  PutBytes(event, kEventSummary, summary);
  return event;
}

// The open event file, shared by the writer and its flush thread.
struct TensorBoardWriter::File {
  std::string path;
  int fd = -1;
  std::chrono::milliseconds interval;
  std::mutex mutex;
  // Framed records not yet written; guarded by `mutex`.
  std::string pending;
  std::condition_variable wake;
  bool stop = false;  // guarded by `mutex`
  std::chrono::steady_clock::time_point last_flush = std::chrono::steady_clock::now();

  llvm::Error FlushLocked() {
    if (pending.empty()) return llvm::Error::success();
    // Records only ever reach the file whole, in one write, except when the process dies inside
    // it. After a failed partial write the written prefix is dropped so a retry does not repeat it.
    size_t done = 0;
    while (done < pending.size()) {
      ssize_t written = ::write(fd, pending.data() + done, pending.size() - done);
      if (written < 0) {
        if (errno == EINTR) continue;
        llvm::Error error = SystemError("cannot write", path);
        pending.erase(0, done);
        return error;
      }
      done += static_cast<size_t>(written);
    }
    pending.clear();
    return llvm::Error::success();
  }
};

namespace {

// A stop signal reaches the flush thread through this pipe: a signal handler may only write(2).
int g_signal_pipe[2] = {-1, -1};
constexpr int kStopSignals[] = {SIGTERM, SIGINT};

void OnStopSignal(int signal) {
  int saved = errno;
  unsigned char byte = static_cast<unsigned char>(signal);
  [[maybe_unused]] ssize_t ignored = ::write(g_signal_pipe[1], &byte, 1);
  errno = saved;
}

// Routes SIGTERM and SIGINT to the pipe; false when the pipe cannot be made (then the signals
// keep their default action, and only the timer flushes).
bool CatchStopSignals() {
  if (g_signal_pipe[0] < 0 && ::pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return false;
  struct sigaction action {};
  action.sa_handler = OnStopSignal;
  for (int signal : kStopSignals) ::sigaction(signal, &action, nullptr);
  return true;
}

void RestoreStopSignals() {
  for (int signal : kStopSignals) ::signal(signal, SIG_DFL);
}

}  // namespace

// The flush thread: every `interval`, and at once on a stop signal, after which the process
// ends by that signal, as it would have without the writer.
void TensorBoardWriter::FlushUntilStopped(File* file, bool signals) {
  std::unique_lock<std::mutex> lock(file->mutex);
  while (!file->stop) {
    // Short waits, so that a stop signal is acted on within about 50 ms.
    file->wake.wait_for(lock,
                        signals ? std::min(file->interval, std::chrono::milliseconds(50)) : file->interval);
    unsigned char signal = 0;
    if (signals && ::read(g_signal_pipe[0], &signal, 1) == 1) {
      llvm::consumeError(file->FlushLocked());
      RestoreStopSignals();
      ::raise(signal);
      return;
    }
    if (std::chrono::steady_clock::now() - file->last_flush >= file->interval) {
      llvm::consumeError(file->FlushLocked());
      file->last_flush = std::chrono::steady_clock::now();
    }
  }
}

llvm::Expected<TensorBoardWriter> TensorBoardWriter::Open(const std::string& dir,
                                                          std::chrono::milliseconds flush_interval) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return SystemError("cannot create the directory", dir, ec.value());
  auto now = std::chrono::system_clock::now().time_since_epoch();
  std::string base = (std::filesystem::path(dir) /
                      fmt::format("events.out.tfevents.{}.{}",
                                  std::chrono::duration_cast<std::chrono::seconds>(now).count(), HostName()))
                         .string();
  // Two writers started in the same second on one host would pick the same name; O_EXCL and a
  // numeric suffix keep each run's events in a file of its own (TensorBoard reads every file
  // whose name holds "tfevents").
  std::string path = base;
  int fd = -1;
  for (int attempt = 1;; ++attempt) {
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) break;
    if (errno != EEXIST || attempt > 1000) return SystemError("cannot create", path);
    path = fmt::format("{}.{}", base, attempt);
  }
  auto file = std::make_unique<File>();
  file->path = path;
  file->fd = fd;
  file->interval = flush_interval;
  file->pending = FrameRecord(EncodeFileVersionEvent(std::chrono::duration<double>(now).count()));
  if (llvm::Error error = file->FlushLocked()) {
    ::close(fd);
    return error;
  }
  return TensorBoardWriter(std::move(file));
}

TensorBoardWriter::TensorBoardWriter(std::unique_ptr<File> file) : file_(std::move(file)) {
  bool signals = CatchStopSignals();
  flusher_ = std::thread(FlushUntilStopped, file_.get(), signals);
}

TensorBoardWriter::TensorBoardWriter(TensorBoardWriter&& other) noexcept = default;

TensorBoardWriter& TensorBoardWriter::operator=(TensorBoardWriter&& other) noexcept {
  if (this != &other) {
    Close();
    file_ = std::move(other.file_);
    flusher_ = std::move(other.flusher_);
  }
  return *this;
}

TensorBoardWriter::~TensorBoardWriter() { Close(); }

void TensorBoardWriter::Close() {
  if (!file_) return;
  // Signals first: with the thread gone, a caught SIGTERM would end nothing.
  RestoreStopSignals();
  {
    std::lock_guard<std::mutex> lock(file_->mutex);
    file_->stop = true;
  }
  file_->wake.notify_all();
  if (flusher_.joinable()) flusher_.join();
  llvm::consumeError(file_->FlushLocked());
  ::close(file_->fd);
  file_.reset();
}

const std::string& TensorBoardWriter::path() const { return file_->path; }

llvm::Error TensorBoardWriter::AddScalar(const std::string& tag, double value, int64_t step,
                                         double wall_time) {
  std::string record = FrameRecord(EncodeScalarEvent(tag, static_cast<float>(value), step, wall_time));
  std::lock_guard<std::mutex> lock(file_->mutex);
  file_->pending += record;
  if (file_->pending.size() >= kFlushBytes) return file_->FlushLocked();
  return llvm::Error::success();
}

llvm::Error TensorBoardWriter::Flush() {
  std::lock_guard<std::mutex> lock(file_->mutex);
  file_->last_flush = std::chrono::steady_clock::now();
  return file_->FlushLocked();
}

}  // namespace accel::rt::observe
