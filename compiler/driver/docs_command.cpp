// `accelc docs`: the reference pages and JSON Schemas, written to a folder.
#include "compiler/driver/accelc_commands.h"

#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>

#include <fmt/format.h>

#include "compiler/docs/docs.h"
#include "compiler/driver/accelc_shared.h"

namespace accel::accelc {

// `accelc docs --out DIR`: the reference generated from the schemas (Markdown pages, one HTML
// page, JSON Schemas for editors). Files are written in full or the run fails.
int WriteReference(const std::string& out_dir, const accel::sema::Schema& schema) {
  namespace fs = std::filesystem;
  size_t written = 0;
  for (const auto& [path, content] : accel::docs::ReferenceFiles(schema)) {
    ++written;
    fs::path file = fs::path(out_dir) / path;
    std::error_code ec;
    fs::create_directories(file.parent_path(), ec);
    if (ec || !WriteFile(file.string(), content)) {
      fmt::print(stderr, "accelc: error: cannot write `{}`{}\n", file.string(),
                 ec ? ": " + ec.message() : "");
      return kExitUsage;
    }
  }
  fmt::print(stderr, "accelc: wrote {} reference files to {}\n", written, out_dir);
  return kExitClean;
}

}  // namespace accel::accelc
