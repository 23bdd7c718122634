#ifndef ACCEL_RUNTIME_SUPPORT_BLAS_H_
#define ACCEL_RUNTIME_SUPPORT_BLAS_H_

#include <string>
#include <string_view>

namespace accel::rt::support {

// Which BLAS a worker's LibTorch computes with. PyPI's LibTorch links its BLAS in (MKL on x86,
// OpenBLAS on Arm); a LibTorch built to call libblas.so.3 gets whatever that resolves to, which
// may be the netlib reference BLAS, ~17x slower on fp32 matmul than OpenBLAS.
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

// The BLAS of a LibTorch whose build settings (at::show_config()) are `build_settings`: the one
// linked into it (`BLAS_INFO=mkl`), else the one this process loaded (DetectLoadedBlas).
BlasInfo BlasOfLibTorch(std::string_view build_settings);

// Classifies a resolved library path.
BlasInfo::Kind ClassifyBlasPath(const std::string& path);

}  // namespace accel::rt::support

#endif  // ACCEL_RUNTIME_SUPPORT_BLAS_H_
