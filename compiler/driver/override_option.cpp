#include "compiler/driver/override_option.h"

#include <fmt/format.h>

namespace accel::driver {

cli::Option OverrideOption(std::vector<std::string>& overrides) {
  return cli::Option{.names = {"--set"},
                     .value_name = "PATH=VALUE",
                     .help =
                         "override a field (`train.steps=500`, `compute.num_processes=8`),\n"
                         "over the spec and its bases (repeatable)",
                     .apply = [&overrides](std::string_view, std::string_view v) -> std::string {
                       // The value is checked as a spec statement later; only its shape here.
                       if (v.find('=') == std::string_view::npos)
                         return fmt::format("`--set` takes PATH=VALUE, found `{}`", v);
                       overrides.emplace_back(v);
                       return "";
                     },
                     .needs = "PATH=VALUE"};
}

}  // namespace accel::driver
