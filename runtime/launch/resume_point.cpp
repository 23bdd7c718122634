#include "runtime/launch/resume_point.h"

#include <fmt/format.h>

#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/checkpoint/checkpoint_store.h"

namespace accel::rt::launch {
namespace fs = std::filesystem;

std::string WhyNotAResumePoint(const std::string& resume) {
  if (resume.empty() || resume == "auto") return "";
  std::error_code ec;
  if (!fs::exists(resume, ec)) {
    return fmt::format("`--resume {}`: no such checkpoint folder; name a `checkpoint_N` folder, or pass "
                       "`--resume auto` for the newest",
                       resume);
  }
  if (!fs::is_directory(resume, ec)) {
    return fmt::format("`--resume {}` is not a folder; name a `checkpoint_N` folder, or pass `--resume auto`",
                       resume);
  }
  llvm::Expected<checkpoint::Manifest> manifest = checkpoint::ReadManifest(resume);
  if (!manifest) {
    return fmt::format("`--resume {}` is not a checkpoint: {}", resume, llvm::toString(manifest.takeError()));
  }
  return "";
}

std::string ResumeForRestart(const plan::Checkpoint& checkpoint, const fs::path& output_dir,
                             const std::string& asked, fs::file_time_type started) {
  const fs::path project = checkpoint.project_dir.empty() ? output_dir : fs::path(checkpoint.project_dir);
  auto written_since_start = [started](const fs::path& folder) {
    std::error_code ec;
    fs::file_time_type written = fs::last_write_time(folder / std::string(checkpoint::kManifestName), ec);
    return !ec && written >= started;
  };
  if (!checkpoint.automatic_checkpoint_naming) return written_since_start(project / "checkpoint") ? "auto" : asked;
  for (const auto& [number, path] : checkpoint::ListCheckpoints((project / "checkpoints").string())) {
    if (written_since_start(path)) return "auto";
  }
  return asked;
}

}  // namespace accel::rt::launch
