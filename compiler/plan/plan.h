#ifndef ACCEL_COMPILER_PLAN_PLAN_H_
#define ACCEL_COMPILER_PLAN_PLAN_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

// The execution plan: the contract between accelc and accelrun (docs/adr/0004-plan-format.md).
// Every value is resolved; the runtime makes no decision the plan does not spell out.
namespace accel::plan {

inline constexpr std::string_view kFormat = "accel-plan/1";

// Forms the default process group. Collective: every rank executes it.
struct InitProcessGroup {
  std::string backend;  // gloo or nccl
  int64_t timeout_ms = 0;
  int64_t num_machines = 1;
  int64_t processes_per_machine = 1;
  std::string main_process_ip;
  int64_t main_process_port = 0;
};

// Seeds every random number generator (torch and the data sampler) with `seed`.
struct Seed {
  int64_t seed = 0;
};

// Builds the model. `kind` is `mlp`: Linear+ReLU per hidden width, then a Linear head.
struct BuildModel {
  std::string kind;
  int64_t inputs = 0;
  std::vector<int64_t> hidden;
  int64_t outputs = 0;
};

// Builds the per-rank data loader over a synthetic regression set (y = X·W + noise).
struct BuildDataloader {
  std::string kind;
  int64_t samples = 0;
  int64_t features = 0;
  int64_t outputs = 0;
  double noise = 0;
  int64_t seed = 0;
  int64_t batch_size = 0;  // per process
  bool shuffle = true;
};

struct Optimizer {
  std::string name;  // sgd or adamw
  double lr = 0;
  double momentum = 0;  // sgd
  double beta1 = 0;     // adamw
  double beta2 = 0;     // adamw
  double eps = 0;       // adamw
  double weight_decay = 0;
};

// The training loop: forward, MSE loss, backward, gradient all-reduce (mean), step.
struct TrainLoop {
  int64_t steps = 0;
  int64_t log_every = 0;
  std::string mixed_precision;  // no, fp16, bf16, fp8
  int64_t bucket_cap_mb = 0;    // gradient all-reduce bucket size
  Optimizer optimizer;
};

// Rank 0 writes the weights as safetensors to `dir`/`file`.
struct SaveModel {
  std::string dir;
  std::string file;
};

// Saves the training state (weights, optimizer, scheduler, data position, every rank's RNG) every
// `every_steps` steps and after the last one, with Accelerate's ProjectConfiguration semantics
// (docs/checkpoints.md); `accelrun --resume` loads it back. Comes after `train` in the plan.
struct Checkpoint {
  int64_t every_steps = 0;
  // Root of `checkpoints/`; empty means the run's output directory (so `--output-dir` moves it).
  std::string project_dir;
  // On: `{project_dir}/checkpoints/checkpoint_{iteration}`. Off: each save replaces
  // `{project_dir}/checkpoint`.
  bool automatic_naming = true;
  // Complete checkpoints kept (automatic naming); 0 keeps all.
  int64_t total_limit = 0;
  // The number of the first checkpoint of a fresh run; a resumed run continues from its checkpoint.
  int64_t iteration = 0;
  // Every machine's local rank 0 writes (to its own disk) instead of rank 0 alone.
  bool save_on_each_node = false;
  // Tracker logs (none are written yet: trackers arrive with #8); empty means `project_dir`.
  std::string logging_dir;
};

using Step =
    std::variant<InitProcessGroup, Seed, BuildModel, BuildDataloader, TrainLoop, SaveModel, Checkpoint>;

// The step's `op` tag in JSON: `init_process_group`, `seed`, ...
std::string_view OpName(const Step& step);

struct Plan {
  std::string format{kFormat};
  std::string job;
  std::string source;  // the spec it was compiled from, as given to accelc
  // `sha256:` + hex digest of the plan's JSON with this field empty (ComputeHash).
  std::string hash;
  // The resolved configuration: every field as {"value": ..., "from": provenance}.
  llvm::json::Value config = llvm::json::Object{};
  std::vector<Step> steps;

  // The first step of type T, or null.
  template <typename T>
  const T* Find() const {
    for (const Step& step : steps) {
      if (const T* found = std::get_if<T>(&step)) return found;
    }
    return nullptr;
  }
};

// Serializes `plan` as pretty JSON with sorted keys: the same plan gives the same bytes.
std::string ToJson(const Plan& plan);

// The content hash of `plan`, ignoring its current `hash` field.
std::string ComputeHash(const Plan& plan);

// Parses and validates a plan. Fails with a message naming the JSON path of the first problem
// (`plan.json: expected integer at steps[2].inputs`) for malformed JSON, an unknown `format`
// or `op`, a missing or ill-typed field, a count, size or timeout that is not positive, or a
// hash that does not match the content.
llvm::Expected<Plan> FromJson(std::string_view text, std::string_view name = "plan");

}  // namespace accel::plan

#endif  // ACCEL_COMPILER_PLAN_PLAN_H_
