#ifndef ACCEL_RUNTIME_LAUNCH_ACCELERATE_LAUNCH_FLAGS_H_
#define ACCEL_RUNTIME_LAUNCH_ACCELERATE_LAUNCH_FLAGS_H_

#include <set>
#include <string>
#include <vector>

#include "compiler/cli/arguments.h"
#include "runtime/launch/accelerate/python_value.h"

namespace accel::rt::launch::accelerate {

// The options of `accelerate launch` (Accelerate 1.15), their destinations, types and argparse
// defaults: the table the script mode of accelrun parses with. Each is accepted as
// `--snake_name`, `--kebab-name`, with its value as the next argument or after `=`.
//
// What Accelerate's parser makes of a command line: every destination with its value (the
// default unless given), and which were given (Accelerate's `nondefault`: a config file's
// section values never replace those).
struct LaunchNamespace {
  PyDict values;
  std::set<std::string> given;

  const PyValue& Get(const std::string& dest) const;
  void Set(const std::string& dest, PyValue value);
  bool Has(const std::string& dest) const;
};

// The namespace with every option at its argparse default.
LaunchNamespace DefaultNamespace();

// One cli::Option per `accelerate launch` option (both spellings), storing into `ns`; help text
// empty (accelrun's usage points to Accelerate's documentation). Values are converted as
// argparse converts them: `int`, `float`, `bool` (any non-empty text is True), choices checked.
std::vector<cli::Option> LaunchOptions(LaunchNamespace& ns);

// Whether `name` (`--num_processes`, `-m`, without `=value`) is an option of `accelerate launch`,
// and whether it takes a value.
bool IsLaunchOption(const std::string& name);
bool LaunchOptionTakesValue(const std::string& name);

// Every long spelling, for did-you-mean.
std::vector<std::string> LaunchOptionNames();

}  // namespace accel::rt::launch::accelerate

#endif  // ACCEL_RUNTIME_LAUNCH_ACCELERATE_LAUNCH_FLAGS_H_
