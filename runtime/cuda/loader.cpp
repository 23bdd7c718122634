// Opens libaccel_cuda.so on demand (backend.h). Linked into the worker, which links no CUDA.
#include <dlfcn.h>

#include <filesystem>
#include <mutex>

#include <fmt/format.h>

#include "runtime/cuda/backend.h"

namespace accel::rt::cuda {
namespace {

namespace fs = std::filesystem;

// Where the library is: ACCEL_CUDA_BACKEND if set; else beside the file that holds this code
// (the worker in bin/, or libaccel_accelerator.so in lib/), in lib/ next to bin/ first.
std::vector<fs::path> Candidates() {
  if (const char* path = std::getenv("ACCEL_CUDA_BACKEND"); path != nullptr && *path != '\0') return {path};
  Dl_info self{};
  if (dladdr(reinterpret_cast<void*>(&LoadBackend), &self) == 0 || self.dli_fname == nullptr) return {};
  std::error_code ec;
  fs::path here = fs::canonical(self.dli_fname, ec);
  if (ec) here = fs::absolute(self.dli_fname, ec);
  fs::path dir = here.parent_path();
  return {dir.parent_path() / "lib" / "libaccel_cuda.so", dir / "libaccel_cuda.so"};
}

struct Loaded {
  const Backend* backend = nullptr;
  std::string why;
};

Loaded Load() {
  std::vector<fs::path> candidates = Candidates();
  for (const fs::path& path : candidates) {
    std::error_code ec;
    if (!fs::exists(path, ec)) continue;
    // RTLD_GLOBAL: libtorch_cuda's symbols stay visible to what ATen loads later (its kernels'
    // lazily opened libraries, such as cuBLAS's and NVRTC's).
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (handle == nullptr) {
      const char* error = ::dlerror();
      return {nullptr, fmt::format("{} does not load: {}", path.string(), error ? error : "unknown error")};
    }
    auto entry = reinterpret_cast<const Backend* (*)()>(::dlsym(handle, "accel_cuda_backend"));
    if (entry == nullptr) return {nullptr, fmt::format("{} has no accel_cuda_backend", path.string())};
    const Backend* backend = entry();
    if (backend->abi != kBackendAbi)
      return {nullptr,
              fmt::format("{} is from another build of Accel (interface {}, this worker's {}); install "
                          "the two together",
                          path.string(), backend->abi, kBackendAbi)};
    return {backend, ""};
  }
  return {nullptr, candidates.empty() ? std::string("cannot tell where this program is installed")
                                      : fmt::format("{} is missing; install it with accelrun-worker",
                                                    candidates.front().string())};
}

}  // namespace

const Backend* LoadBackend(std::string* why) {
  static std::once_flag once;
  static Loaded loaded;
  std::call_once(once, [] { loaded = Load(); });
  if (loaded.backend == nullptr && why != nullptr) *why = loaded.why;
  return loaded.backend;
}

}  // namespace accel::rt::cuda
