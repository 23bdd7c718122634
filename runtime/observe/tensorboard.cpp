#include "runtime/observe/tensorboard.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

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

llvm::Expected<TensorBoardWriter> TensorBoardWriter::Open(const std::string& dir) {
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
  TensorBoardWriter writer(path, fd);
  writer.pending_ = FrameRecord(EncodeFileVersionEvent(std::chrono::duration<double>(now).count()));
  if (llvm::Error error = writer.Flush()) return error;
  return writer;
}

TensorBoardWriter::TensorBoardWriter(TensorBoardWriter&& other) noexcept
    : path_(std::move(other.path_)), fd_(other.fd_), pending_(std::move(other.pending_)) {
  other.fd_ = -1;
  other.pending_.clear();
}

TensorBoardWriter& TensorBoardWriter::operator=(TensorBoardWriter&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) {
      llvm::consumeError(Flush());
      ::close(fd_);
    }
    path_ = std::move(other.path_);
    fd_ = other.fd_;
    pending_ = std::move(other.pending_);
    other.fd_ = -1;
    other.pending_.clear();
  }
  return *this;
}

TensorBoardWriter::~TensorBoardWriter() {
  if (fd_ < 0) return;
  llvm::consumeError(Flush());
  ::close(fd_);
  fd_ = -1;
}

llvm::Error TensorBoardWriter::AddScalar(const std::string& tag, double value, int64_t step,
                                         double wall_time) {
  pending_ += FrameRecord(EncodeScalarEvent(tag, static_cast<float>(value), step, wall_time));
  if (pending_.size() >= kFlushBytes) return Flush();
  return llvm::Error::success();
}

llvm::Error TensorBoardWriter::Flush() {
  if (pending_.empty()) return llvm::Error::success();
  // Records only ever reach the file whole, in one write, except when the process dies inside
  // it. After a failed partial write the written prefix is dropped so a retry does not repeat it.
  size_t done = 0;
  while (done < pending_.size()) {
    ssize_t written = ::write(fd_, pending_.data() + done, pending_.size() - done);
    if (written < 0) {
      if (errno == EINTR) continue;
      llvm::Error error = SystemError("cannot write", path_);
      pending_.erase(0, done);
      return error;
    }
    done += static_cast<size_t>(written);
  }
  pending_.clear();
  return llvm::Error::success();
}

}  // namespace accel::rt::observe
