#include "runtime/support/blas.h"

#include <link.h>

#include <filesystem>

#include <fmt/format.h>

namespace accel::rt::support {

BlasInfo::Kind ClassifyBlasPath(const std::string& path) {
  if (path.find("openblas") != std::string::npos) return BlasInfo::Kind::OpenBlas;
  if (path.find("mkl") != std::string::npos) return BlasInfo::Kind::Mkl;
  if (path.find("blis") != std::string::npos) return BlasInfo::Kind::Blis;
  if (path.find("atlas") != std::string::npos) return BlasInfo::Kind::Atlas;
  // Debian installs the reference implementation as .../blas/libblas.so.3.
  if (path.find("/blas/libblas") != std::string::npos) return BlasInfo::Kind::NetlibReference;
  return BlasInfo::Kind::Unknown;
}

std::string BlasInfo::Describe() const {
  const char* name = "unknown BLAS";
  switch (kind) {
    case Kind::OpenBlas:
      name = "OpenBLAS";
      break;
    case Kind::Mkl:
      name = "MKL";
      break;
    case Kind::Blis:
      name = "BLIS";
      break;
    case Kind::Atlas:
      name = "ATLAS";
      break;
    case Kind::NetlibReference:
      name = "netlib reference BLAS (slow)";
      break;
    case Kind::Unknown:
      break;
    case Kind::NotLoaded:
      return "no BLAS loaded";
  }
  return fmt::format("{} ({})", name, path);
}

BlasInfo DetectLoadedBlas() {
  BlasInfo info;
  dl_iterate_phdr(
      [](dl_phdr_info* object, size_t, void* data) -> int {
        auto* out = static_cast<BlasInfo*>(data);
        std::string name = object->dlpi_name ? object->dlpi_name : "";
        std::string file = std::filesystem::path(name).filename();
        if (file.rfind("libblas.so", 0) != 0 && file.rfind("libopenblas", 0) != 0 &&
            file.rfind("libmkl_rt", 0) != 0) {
          return 0;
        }
        std::error_code ec;
        std::filesystem::path resolved = std::filesystem::canonical(name, ec);
        out->path = ec ? name : resolved.string();
        out->kind = ClassifyBlasPath(out->path);
        return 1;  // stop at the first BLAS
      },
      &info);
  return info;
}

BlasInfo BlasOfLibTorch(std::string_view build_settings) {
  constexpr std::string_view kKey = "BLAS_INFO=";
  size_t at = build_settings.find(kKey);
  if (at == std::string_view::npos) return DetectLoadedBlas();
  std::string_view value = build_settings.substr(at + kKey.size());
  value = value.substr(0, value.find_first_of(", \n"));
  BlasInfo info;
  if (value == "mkl") {
    info.kind = BlasInfo::Kind::Mkl;
  } else if (value == "open" || value == "openblas") {
    info.kind = BlasInfo::Kind::OpenBlas;
  } else if (value == "blis") {
    info.kind = BlasInfo::Kind::Blis;
  } else {
    return DetectLoadedBlas();  // called through a shared library (Debian's `generic`)
  }
  info.path = "linked into LibTorch";
  return info;
}

}  // namespace accel::rt::support
