#include "compiler/driver/for_option.h"

#include <fmt/format.h>

#include "compiler/sema/releases.h"

namespace accel::driver {
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
      std::string_view version = entry.substr(at + 1);
      if (tool == "trainer") {
        return "the Trainer's releases are not covered; pin the DeepSpeed release it runs: "
               "`trainer,deepspeed@VERSION`";
      }
      sema::Tool which = tool == "accelerate" ? sema::Tool::kAccelerate : sema::Tool::kDeepSpeed;
      const sema::Release* release = sema::FindRelease(which, version);
      if (release == nullptr) {
        return fmt::format("{} {} is not a covered release; covered: {} (or `major.minor` for the newest "
                           "covered patch)",
                           sema::ToolName(which), version, CoveredList(which));
      }
      (which == sema::Tool::kAccelerate ? options.releases.accelerate : options.releases.deepspeed) = release;
    }
    if (comma == std::string_view::npos) return "";
    value = value.substr(comma + 1);
  }
}

}  // namespace accel::driver
