#ifndef ACCEL_RUNTIME_OBSERVE_TENSORBOARD_H_
#define ACCEL_RUNTIME_OBSERVE_TENSORBOARD_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "llvm/Support/Error.h"

namespace accel::rt::observe {

// TensorBoard event files, as Accelerate's TensorBoardTracker writes them with
// `log_with=["tensorboard"]` under `{logging_dir}/{project_name}`: a sequence of TFRecord
// records, each one serialized `tensorflow.Event` protobuf. The first event carries
// `file_version = "brain.Event:2"`; every scalar is an Event with `wall_time`, `step` and a
// Summary holding one Value {tag, simple_value (float32)}. TensorBoard shows these under
// its Scalars tab. Move-only; the destructor flushes what is buffered (errors dropped: call
// Flush() to see them) and closes the file.
//
// So that a live run shows in TensorBoard and a stopped one keeps its curve, a thread of the
// writer flushes what is buffered every `flush_interval`, and a SIGTERM or SIGINT (the launcher
// stopping the job, a scheduler's kill) flushes it before the process ends by that signal.
// While a writer is open the process handles those two signals this way; the destructor puts
// back their default action (a process has one writer: rank 0's run report).
class TensorBoardWriter {
 public:
  // Creates `dir` (and missing parents) and in it a new file
  // `events.out.tfevents.<unix seconds>.<hostname>` (with `.1`, `.2`, ... appended if that
  // name is taken, never overwriting), and writes the file_version event to it. Errors name
  // the path.
  static llvm::Expected<TensorBoardWriter> Open(const std::string& dir,
                                                std::chrono::milliseconds flush_interval = kFlushInterval);

  // How often buffered scalars reach the file: TensorBoard reloads every few seconds.
  static constexpr std::chrono::milliseconds kFlushInterval{2000};

  TensorBoardWriter(TensorBoardWriter&& other) noexcept;
  TensorBoardWriter& operator=(TensorBoardWriter&& other) noexcept;
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;
  ~TensorBoardWriter();

  // Buffers the scalar `value` (stored as float32, TensorBoard's simple_value) for `tag` at
  // `step`, stamped `wall_time` (Unix seconds). Writes the buffer out once it is large; errors
  // from that write name the path (the flush thread drops its errors: the next call reports).
  llvm::Error AddScalar(const std::string& tag, double value, int64_t step, double wall_time);

  // Writes every buffered record to the file (no fsync). Errors name the path.
  llvm::Error Flush();

  // The event file's path.
  const std::string& path() const;

 private:
  struct File;
  explicit TensorBoardWriter(std::unique_ptr<File> file);
  static void FlushUntilStopped(File* file, bool signals);
  void Close();

  // Where the flush thread can find it when the writer moves.
  std::unique_ptr<File> file_;
  std::thread flusher_;
};

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) of `data`, as TFRecord uses it:
// Crc32c("123456789") == 0xE3069283.
uint32_t Crc32c(std::string_view data);

// TFRecord's masked CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
uint32_t MaskCrc(uint32_t crc);

// One TFRecord: uint64 length (little-endian), masked CRC-32C of those 8 bytes, `data`,
// masked CRC-32C of `data`.
std::string FrameRecord(std::string_view data);

// The serialized Event {wall_time, file_version} that opens every event file.
std::string EncodeFileVersionEvent(double wall_time);

// The serialized Event {wall_time, step, summary {value {tag, simple_value}}}.
std::string EncodeScalarEvent(const std::string& tag, float value, int64_t step, double wall_time);

}  // namespace accel::rt::observe

#endif  // ACCEL_RUNTIME_OBSERVE_TENSORBOARD_H_
