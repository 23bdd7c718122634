#ifndef ACCEL_RUNTIME_DISTRIBUTED_ENVIRONMENT_H_
#define ACCEL_RUNTIME_DISTRIBUTED_ENVIRONMENT_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// Environment manipulation and checks (catalog §6.1–6.2).
namespace accel::rt::distributed {

// `patch_environment`: sets each variable (names upper-cased) for the object's lifetime; on
// destruction every patched variable gets back its previous value, or is removed if it had
// none. Changes made meanwhile to those variables are discarded; others are left alone.
class PatchEnvironment {
 public:
  explicit PatchEnvironment(const std::vector<std::pair<std::string, std::string>>& variables);
  ~PatchEnvironment();
  PatchEnvironment(const PatchEnvironment&) = delete;
  PatchEnvironment& operator=(const PatchEnvironment&) = delete;

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// `clear_environment`: empties the environment for the object's lifetime; on destruction
// empties it again and restores the snapshot (whatever was set meanwhile is lost).
class ClearEnvironment {
 public:
  ClearEnvironment();
  ~ClearEnvironment();
  ClearEnvironment(const ClearEnvironment&) = delete;
  ClearEnvironment& operator=(const ClearEnvironment&) = delete;

 private:
  std::vector<std::pair<std::string, std::string>> snapshot_;
};

// `is_cuda_available`: LibTorch was built with CUDA and sees at least one device.
bool IsCudaAvailable();
// `is_bf16_available`: on CUDA, whether the current device supports bfloat16 (compute
// capability 8 or newer); without CUDA, true (the CPU is assumed capable, as in Accelerate).
bool IsBf16Available(bool ignore_tpu = false);
// `is_mps_available`: Apple's MPS backend is built and available (never on Linux builds).
bool IsMpsAvailable();
// `is_npu_available`, `is_xpu_available`, `is_torch_xla_available`: false in this runtime
// (LibTorch 1.13 has no native XPU, and torch_npu / torch_xla are Python packages); the
// `check_*` arguments of Accelerate's versions change nothing when the backend is absent.
bool IsNpuAvailable();
bool IsXpuAvailable();
bool IsTorchXlaAvailable();
// `is_nccl_available` / `is_gloo_available`: the process-group backends compiled in.
bool IsNcclAvailable();
bool IsGlooAvailable();

// The LibTorch version this runtime was built against (`1.13.0`).
std::string TorchVersion();

// Compares two versions as PEP 440 orders them: release segments numerically (`1.10 > 1.9`,
// `1.13 == 1.13.0`), then dev < pre-release (a < b < rc) < final < post; a local part
// (`+cpu`) sorts after the same public version. Returns <0, 0 or >0; throws
// std::invalid_argument for text that is not a version.
int CompareVersions(std::string_view a, std::string_view b);

// `is_torch_version(operation, version)`: `operation` is one of > >= == != <= <; anything
// else is std::invalid_argument.
bool IsTorchVersion(std::string_view operation, std::string_view version);
// The same comparison for any version text (for tests and other libraries).
bool CompareVersionsWith(std::string_view installed, std::string_view operation, std::string_view version);

}  // namespace accel::rt::distributed

#endif  // ACCEL_RUNTIME_DISTRIBUTED_ENVIRONMENT_H_
