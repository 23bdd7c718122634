#ifndef ACCEL_RUNTIME_CHECKPOINT_SHA256_H_
#define ACCEL_RUNTIME_CHECKPOINT_SHA256_H_

#include <memory>
#include <string>
#include <string_view>

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

}  // namespace accel::rt::checkpoint

#endif  // ACCEL_RUNTIME_CHECKPOINT_SHA256_H_
