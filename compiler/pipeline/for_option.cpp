#include "compiler/pipeline/for_option.h"

#include <fmt/format.h>

#include "compiler/sema/releases.h"

namespace accel::pipeline {
namespace {

std::string CoveredList(sema::Tool tool) {
  std::string out;
  for (const sema::Release& r : sema::ReleasesOf(tool)) {
    out += (out.empty() ? "" : ", ") + std::string(r.version);
  }
  return out;
}

}  // namespace

std::string ParseForOption(std::string_view value, CompileOptions& options) {
  bool first = true;
  while (true) {
    size_t comma = value.find(',');
    std::string_view entry = value.substr(0, comma);
    size_t at = entry.find('@');
    std::string_view tool = entry.substr(0, at);
    if (tool != "accelerate" && tool != "trainer" && tool != "deepspeed") {
      return fmt::format("unknown tool `{}`; expected `accelerate`, `trainer` or `deepspeed`", tool);
    }
    if (first) options.tool = std::string(tool);
    first = false;
    if (at != std::string_view::npos) {
      if (tool == "trainer") {
        return "the Trainer's releases are not covered; pin the DeepSpeed release it runs: "
               "`trainer,deepspeed@VERSION`";
      }
      sema::Tool which = tool == "accelerate" ? sema::Tool::kAccelerate : sema::Tool::kDeepSpeed;
      std::string_view versions = entry.substr(at + 1);
      size_t dots = versions.find("..");
      std::string error;
      auto find = [&](std::string_view version) -> const sema::Release* {
        const sema::Release* release = sema::FindRelease(which, version);
        if (release == nullptr && error.empty()) {
          error = fmt::format("{} {} is not a covered release; covered: {} (or `major.minor` for the newest "
                              "covered patch)",
                              sema::ToolName(which), version, CoveredList(which));
        }
        return release;
      };
      const sema::Release* older = find(versions.substr(0, dots));
      const sema::Release* newer = nullptr;
      if (dots != std::string_view::npos) {
        std::string_view last = versions.substr(dots + 2);
        newer = last.empty() ? &sema::NewestRelease(which) : find(last);
      }
      if (!error.empty()) return error;
      if (newer != nullptr && newer->index <= older->index) {
        return fmt::format("`{}` goes from an older release to a newer one", versions);
      }
      bool accelerate = which == sema::Tool::kAccelerate;
      (accelerate ? options.releases.accelerate : options.releases.deepspeed) = older;
      (accelerate ? options.upgrade_to.accelerate : options.upgrade_to.deepspeed) = newer;
    }
    if (comma == std::string_view::npos) return "";
    value = value.substr(comma + 1);
  }
}

}  // namespace accel::pipeline
