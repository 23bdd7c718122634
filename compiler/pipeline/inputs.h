#ifndef ACCEL_COMPILER_PIPELINE_INPUTS_H_
#define ACCEL_COMPILER_PIPELINE_INPUTS_H_

#include <functional>
#include <string>
#include <vector>

#include "compiler/sema/schema.h"

namespace accel::pipeline {

struct Inputs {
  std::vector<std::string> files;    // in argument order; a directory's files sorted by name
  std::vector<std::string> errors;   // one line per argument that named nothing
  std::vector<std::string> skipped;  // one line per `.json` file of a directory left out, with why
};

// Why the JSON file at `path` is not a config `accelc check` reads: empty when it is one (an
// object with a top-level key of a DeepSpeed config or an Accelerate config in `schema`), else
// the reason, for Inputs::skipped.
std::string WhyNotConfigJson(const std::string& path, const sema::Schema& schema);

// Expands `accelc check` arguments: a file (or `-` for standard input) stays as given; a
// directory becomes every `.accel`, `.yaml` and `.yml` file below it, and every `.json` file
// for which `why_not_config` returns empty (the others are listed in `skipped`; without the
// function, none is taken), hidden folders skipped; a pattern with `*`, `?` or `[` is expanded
// here too, so quoting it works the same in every shell, and `**` matches any number of
// folders. Each file appears once.
Inputs ExpandInputs(const std::vector<std::string>& arguments,
                    const std::function<std::string(const std::string&)>& why_not_config = {});

}  // namespace accel::pipeline

#endif  // ACCEL_COMPILER_PIPELINE_INPUTS_H_
