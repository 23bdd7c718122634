#include "runtime/support/blas.h"

#include <link.h>

#include <algorithm>
#include <filesystem>
#include <vector>

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

BlasInfo FindBlasAsLoaderWould(const std::optional<std::string>& ld_library_path) {
  std::vector<std::string> dirs;
  for (size_t start = 0; ld_library_path && start <= ld_library_path->size();) {
    size_t end = std::min(ld_library_path->find(':', start), ld_library_path->size());
    // An empty entry means the current directory, as ld.so reads it.
    dirs.push_back(end == start ? "." : ld_library_path->substr(start, end - start));
    start = end + 1;
  }
  for (const char* dir :
       {"/usr/local/lib", "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"}) {
    dirs.push_back(dir);
  }
  for (const std::string& dir : dirs) {
    std::filesystem::path candidate = std::filesystem::path(dir) / "libblas.so.3";
    std::error_code ec;
    std::filesystem::path resolved = std::filesystem::canonical(candidate, ec);
    if (ec) continue;
    BlasInfo info;
    info.path = resolved.string();
    info.kind = ClassifyBlasPath(info.path);
    return info;
  }
  return BlasInfo{};
}

std::optional<std::string> FindOptimizedBlasDirectory() {
  for (const char* dir :
       {"/usr/lib/x86_64-linux-gnu/openblas-pthread", "/usr/lib/aarch64-linux-gnu/openblas-pthread",
        "/usr/lib/x86_64-linux-gnu/openblas-openmp", "/usr/lib/x86_64-linux-gnu/openblas-serial"}) {
    if (std::filesystem::exists(std::filesystem::path(dir) / "libblas.so.3")) return std::string(dir);
  }
  return std::nullopt;
}

}  // namespace accel::rt::support
