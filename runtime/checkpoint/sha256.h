#ifndef ACCEL_RUNTIME_CHECKPOINT_SHA256_H_
#define ACCEL_RUNTIME_CHECKPOINT_SHA256_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace accel::rt::checkpoint {

// SHA-256 over a stream of bytes. OpenSSL's libcrypto does the work when the build found it
// (it uses the CPU's SHA extensions: ~1.4 GB/s on the build machines); otherwise LLVM's
// portable code (~0.33 GB/s). Both give the same digest; the speed decides how long saving and
// verifying a checkpoint takes.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(std::string_view bytes);
  // The digest as 64 lower-case hex digits. Call once; the object is spent afterwards.
  std::string HexDigest();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The SHA-256 of `bytes` as 64 lower-case hex digits.
std::string Sha256Hex(std::string_view bytes);

// The SHA-256 of each `chunk_size`-byte piece of a stream, in order: the last piece may be
// shorter, and an empty stream has one piece, the empty one (ChunkCount in manifest.h). Pieces
// are what lets one large file be verified on several cores.
class ChunkedSha256 {
 public:
  explicit ChunkedSha256(uint64_t chunk_size);

  void Update(std::string_view bytes);
  // One digest per piece (64 lower-case hex digits each). Call once; the object is spent then.
  std::vector<std::string> HexDigests();

 private:
  uint64_t chunk_size_;
  uint64_t in_piece_ = 0;  // bytes of the current piece fed so far
  std::unique_ptr<Sha256> piece_;
  std::vector<std::string> digests_;
};

}  // namespace accel::rt::checkpoint

#endif  // ACCEL_RUNTIME_CHECKPOINT_SHA256_H_
