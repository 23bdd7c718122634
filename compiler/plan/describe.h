#ifndef ACCEL_COMPILER_PLAN_DESCRIBE_H_
#define ACCEL_COMPILER_PLAN_DESCRIBE_H_

#include <string>
#include <vector>

#include "compiler/plan/plan.h"

namespace accel::plan {

// One resolved value of a plan's configuration: `compute.num_processes`, its value as
// compact JSON, and where it came from (`specs/q.accel:5:21`, `default`, `env X`, `--set:1:13`).
struct Setting {
  std::string path;
  std::string value;
  std::string from;
};

// Every setting of `plan.config`, depth first in the plan's (sorted) key order.
std::vector<Setting> Settings(const Plan& plan);

// `accelc explain`: the plan for humans: the job, the steps in order, then every value that
// did not come from a schema default, with where it came from
// (`compute.num_processes = 2  (specs/q.accel:5:21)`); with `all`, the defaults too.
std::string Explain(const Plan& plan, bool all = false);

// What a change between two plans affects: a value may touch several.
enum class Impact : unsigned {
  Numerics = 1,    // the numbers training computes (precision, optimizer, data, seed)
  Topology = 2,    // processes, machines, engine, rendezvous
  Checkpoint = 4,  // whether a checkpoint of one loads into the other (model shape, sharding)
  Other = 8,       // anything else (output paths, logging)
};

struct Change {
  std::string path;
  std::string before;   // empty when the setting is new
  std::string after;    // empty when the setting is gone
  unsigned impact = 0;  // Impact bits
};

struct PlanDiff {
  std::vector<Change> changes;
  // Set when no setting differs but the plans do (their hashes): what else differs, in words.
  std::string otherwise;
};

// The settings whose resolved values differ between `a` and `b` (a default and the same value
// written out are the same), each labelled with what it affects. A section one side leaves out
// (`none`) and the other sets is one change, showing the section's type and the fields set.
// Plans whose hashes differ always name a difference: the job's name or a step when no setting
// differs, else (`otherwise`) where the values came from.
PlanDiff Diff(const Plan& a, const Plan& b);

// `accelc diff`: one line per change, `numerics  train.steps: 200 -> 500`, then a summary line.
std::string RenderDiff(const PlanDiff& diff, const std::string& a_name, const std::string& b_name);

}  // namespace accel::plan

#endif  // ACCEL_COMPILER_PLAN_DESCRIBE_H_
