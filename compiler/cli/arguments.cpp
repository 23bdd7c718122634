#include "compiler/cli/arguments.h"

#include <algorithm>
#include <cstdlib>

namespace accel::cli {
namespace {

std::string Quoted(std::string_view flag) { return "`" + std::string(flag) + "`"; }

// The option `name` is a spelling of, or null.
const Option* Find(const std::vector<Option>& options, std::string_view name) {
  for (const Option& option : options) {
    for (const std::string& spelling : option.names) {
      if (spelling == name) return &option;
    }
  }
  return nullptr;
}

}  // namespace

std::string Parse(const std::vector<std::string>& args, const std::vector<Option>& options,
                  const std::function<std::string(const std::string& arg)>& positional) {
  // `--help` wins over everything else on the line, mistakes included: asking for help is
  // what a user does after a mistake.
  for (const std::string& arg : args) {
    if (const Option* option = Find(options, arg); option != nullptr && option->exits) {
      return option->apply(arg, "");
    }
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.size() < 2 || arg[0] != '-') {
      if (std::string error = positional(arg); !error.empty()) return error;
      continue;
    }
    // Split `--name=value`, `-xvalue` and `-x=value` into the spelling and the attached value.
    std::string flag = arg;
    std::optional<std::string> attached;
    if (arg[1] == '-') {
      if (size_t equals = arg.find('='); equals != std::string::npos) {
        flag = arg.substr(0, equals);
        attached = arg.substr(equals + 1);
      }
    } else if (arg.size() > 2) {
      flag = arg.substr(0, 2);
      attached = arg.substr(arg[2] == '=' ? 3 : 2);
    }
    const Option* option = Find(options, flag);
    // `-hx` is not `-h` with a value: a one-letter switch never takes one.
    if (option == nullptr || (option->value_name.empty() && attached && flag.size() == 2)) {
      return "unknown option " + Quoted(arg[1] == '-' ? flag : arg);
    }
    if (option->value_name.empty()) {
      if (attached) return Quoted(flag) + " takes no value";
      if (std::string error = option->apply(flag, ""); !error.empty()) return error;
      continue;
    }
    std::optional<std::string> value = attached;
    if (!value && i + 1 < args.size()) value = args[++i];
    if (!value || (value->empty() && !option->allow_empty)) return Quoted(flag) + " needs " + option->needs;
    if (std::string error = option->apply(flag, *value); !error.empty()) return error;
  }
  return "";
}

std::string FormatHelp(const std::vector<HelpRow>& rows, size_t column) {
  constexpr size_t kIndent = 2;
  std::string out;
  for (const HelpRow& row : rows) {
    std::string line = std::string(kIndent, ' ') + row.label;
    size_t start = 0;
    if (line.size() + 1 > column + 1) {
      // Too long to share a line with its help.
      out += line + "\n";
      line.clear();
    }
    do {
      size_t end = row.help.find('\n', start);
      if (end == std::string::npos) end = row.help.size();
      size_t width = line.empty() ? column : std::max(column, line.size() + 1);
      line.resize(width, ' ');
      out += line + row.help.substr(start, end - start) + "\n";
      line.clear();
      start = end + 1;
    } while (start <= row.help.size());
  }
  return out;
}

std::string FormatOptions(const std::vector<Option>& options, size_t column) {
  std::vector<HelpRow> rows;
  for (const Option& option : options) {
    if (option.help.empty()) continue;
    std::string label;
    for (const std::string& name : option.names) label += (label.empty() ? "" : ", ") + name;
    if (!option.value_name.empty()) label += " " + option.value_name;
    rows.push_back({label, option.help});
  }
  return FormatHelp(rows, column);
}

std::optional<long> ParseInteger(std::string_view text, long low, long high) {
  std::string digits(text);
  char* end = nullptr;
  long value = std::strtol(digits.c_str(), &end, 10);
  if (digits.empty() || *end != '\0' || value < low || value > high) return std::nullopt;
  return value;
}

Apply SetFlag(bool& target, bool value) {
  return [&target, value](std::string_view, std::string_view) {
    target = value;
    return std::string();
  };
}

Apply StoreInteger(std::optional<long>& target, long low, long high) {
  return [&target, low, high](std::string_view flag, std::string_view text) -> std::string {
    std::optional<long> value = ParseInteger(text, low, high);
    if (!value) {
      return Quoted(flag) + " needs an integer from " + std::to_string(low) + " to " + std::to_string(high) +
             ", not " + Quoted(text);
    }
    target = value;
    return "";
  };
}

Apply StoreText(std::string& target) {
  return [&target](std::string_view, std::string_view value) {
    target = value;
    return std::string();
  };
}

}  // namespace accel::cli
