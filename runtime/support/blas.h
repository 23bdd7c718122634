#ifndef ACCEL_RUNTIME_SUPPORT_BLAS_H_
#define ACCEL_RUNTIME_SUPPORT_BLAS_H_

#include <optional>
#include <string>

namespace accel::rt::support {

// Which BLAS implementation this process has loaded. LibTorch on Debian calls BLAS through
// libblas.so.3, and the alternative may point at the netlib reference BLAS, which is ~17x
// slower on fp32 matmul than OpenBLAS.
struct BlasInfo {
  enum class Kind { OpenBlas, Mkl, Blis, Atlas, NetlibReference, Unknown, NotLoaded };
  Kind kind = Kind::NotLoaded;
  std::string path;  // the resolved file, empty when not loaded

  // `OpenBLAS (/usr/lib/.../openblas-pthread/libblas.so.3)`.
  std::string Describe() const;
  bool optimized() const { return kind == Kind::OpenBlas || kind == Kind::Mkl || kind == Kind::Blis; }
};

// Inspects the shared objects loaded into this process.
BlasInfo DetectLoadedBlas();

// The libblas.so.3 a process started with `ld_library_path` would load, found as the dynamic
// loader looks: the LD_LIBRARY_PATH directories, then the system's library directories (where
// Debian's alternatives link points). The launcher, which loads no BLAS itself, asks this
// about its workers. NotLoaded when there is none.
BlasInfo FindBlasAsLoaderWould(const std::optional<std::string>& ld_library_path);

// Classifies a resolved library path.
BlasInfo::Kind ClassifyBlasPath(const std::string& path);

// A directory holding an optimized libblas.so.3 (OpenBLAS) that can be put first on
// LD_LIBRARY_PATH of worker processes, or empty when none is installed.
std::optional<std::string> FindOptimizedBlasDirectory();

}  // namespace accel::rt::support

#endif  // ACCEL_RUNTIME_SUPPORT_BLAS_H_
