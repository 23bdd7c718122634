#include "compiler/pipeline/override_option.h"

#include <fmt/format.h>

#include <string_view>

namespace accel::pipeline {
namespace {

// Whether `text` ends one statement and starts another: a `;` or a line break outside a string.
// A script passing `--set output.dir="$DIR"` must not be steered by a `DIR` of
// `x"; train.steps=1; y="` into setting what it never named.
bool HoldsSeveralStatements(std::string_view text) {
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;  // an escaped character, `\"` included
      else if (c == '"') in_string = false;
      else if (c == '\n' || c == '\r') return true;  // a string ends at the line's end
    } else if (c == '"') {
      in_string = true;
    } else if (c == ';' || c == '\n' || c == '\r') {
      return true;
    }
  }
  return false;
}

}  // namespace

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
                       if (HoldsSeveralStatements(v)) {
                         return fmt::format(
                             "`--set` takes one PATH=VALUE, found several statements in `{}` (a `;` or a line "
                             "break outside a string); pass each with its own `--set`",
                             v);
                       }
                       overrides.emplace_back(v);
                       return "";
                     },
                     .needs = "PATH=VALUE"};
}

}  // namespace accel::pipeline
