#ifndef ACCEL_COMPILER_CLI_ARGUMENTS_H_
#define ACCEL_COMPILER_CLI_ARGUMENTS_H_

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// The one command-line parser of `accelc` and `accelrun`: each command declares its options
// as a table, and the parser, the errors and the options section of the usage text all come
// from that table (docs/adr/0007-argument-parsing.md). Depends on nothing; no global state.
namespace accel::cli {

// Called with the spelling the user typed (`-j`, `--jobs`) and the value (empty for a
// switch). Returns an error message for the user, or "" when the value is accepted.
using Apply = std::function<std::string(std::string_view flag, std::string_view value)>;

// One row of a command's option table.
//
// Accepted spellings: a long name as `--name value` and `--name=value`; a one-letter name as
// `-x value`, `-xvalue` and `-x=value`. A switch (no `value_name`) takes no value.
struct Option {
  // Every spelling, as typed: `{"-j", "--jobs"}`. The usage text lists them in this order.
  std::vector<std::string> names = {};
  // How the usage text shows the value (`<n>`, `auto|<dir>`); empty for a switch.
  std::string value_name = {};
  // The help text, its lines already broken with `\n`; empty hides the option from the usage
  // text (internal flags, and flags the command synopses already show).
  std::string help = {};
  Apply apply = {};
  // What a missing value is reported as: "`--flag` needs <needs>".
  std::string needs = "a value";
  // If false, an empty value is reported as a missing one.
  bool allow_empty = true;
  // Options that print something and end the program (`--help`, `--version`): when one is
  // anywhere on the command line, only it is applied and nothing else is checked.
  bool exits = false;
};

// An `apply` for a switch: sets `target` to `value`.
Apply SetFlag(bool& target, bool value = true);
// An `apply` that stores the option's value in `target` as given.
Apply StoreText(std::string& target);
// An `apply` that stores the option's value in `target` as a decimal integer in [low, high];
// anything else is refused as "`--flag` needs an integer from LOW to HIGH, not `TEXT`".
Apply StoreInteger(std::optional<long>& target, long low, long high);

// Parses `args` (without the program name) against `options`, in order. Every argument that is
// not an option, including a lone `-` (standard input), goes to `positional`, which returns an
// error message or "". Returns the first error (`unknown option `--x``, `--x` needs a value,
// `--x` takes no value, or whatever an `apply` returned), or "". A value is always the next
// argument, even when it starts with `-`. If an `exits` option is present, it alone is applied.
std::string Parse(const std::vector<std::string>& args, const std::vector<Option>& options,
                  const std::function<std::string(const std::string& arg)>& positional);

// One row of a help table: `label` in the left column, `help` (lines broken with `\n`) on the
// right.
struct HelpRow {
  std::string label;
  std::string help;
};

// The rows as an indented two-column table: help text starts at `column`, or one space after
// a label that reaches it; a longer label puts its help on the next line. Ends with `\n`.
std::string FormatHelp(const std::vector<HelpRow>& rows, size_t column);

// The options section of a usage text: one row per option with help, labelled with its names
// and value (`-j, --jobs <n>`), in table order.
std::string FormatOptions(const std::vector<Option>& options, size_t column);

// `text` as a decimal integer in [low, high], or unset when it is not one.
std::optional<long> ParseInteger(std::string_view text, long low, long high);

}  // namespace accel::cli

#endif  // ACCEL_COMPILER_CLI_ARGUMENTS_H_
