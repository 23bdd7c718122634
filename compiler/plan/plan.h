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

inline constexpr std::string_view kFormat = "accel-plan/2";

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

// Builds the model. `kind` is `mlp` (Linear+ReLU per hidden width, then a Linear head, from
// inputs/hidden/outputs), `transformer` (inputs tokens of d_model, `layers` encoder layers of
// `heads` heads and a `feedforward` block, mean pooling, a head of `outputs`) or `torchscript`
// (the module saved at `path`).
struct BuildModel {
  std::string kind;
  int64_t inputs = 0;
  std::vector<int64_t> hidden;
  int64_t outputs = 0;
  std::string path;     // torchscript
  int64_t d_model = 0;  // transformer
  int64_t heads = 0;
  int64_t layers = 0;
  int64_t feedforward = 0;

  static BuildModel Mlp(int64_t inputs, std::vector<int64_t> hidden, int64_t outputs) {
    BuildModel model;
    model.kind = "mlp";
    model.inputs = inputs;
    model.hidden = std::move(hidden);
    model.outputs = outputs;
    return model;
  }
};

// Builds this rank's data loader: the dataset, and how Accelerate's prepared DataLoader shards
// it (DataLoaderConfiguration, every value resolved).
struct BuildDataloader {
  // synthetic_regression (y = X·W + noise from samples/features/outputs/noise/seed), csv
  // (path, feature_columns, target_columns), npy (path = features, targets_path) or
  // safetensors (path, features_key, targets_key).
  std::string kind;
  int64_t samples = 0;
  int64_t features = 0;
  int64_t outputs = 0;
  double noise = 0;
  int64_t seed = 0;
  std::string path;
  std::string targets_path;
  std::vector<std::string> feature_columns;
  std::vector<std::string> target_columns;
  std::string features_key;
  std::string targets_key;
  // `regression` (float targets) or `class_labels` (int64 class indices).
  std::string targets;
  int64_t batch_size = 0;  // the loader's batch size (per process unless split_batches)
  bool shuffle = true;
  bool drop_last = false;
  bool split_batches = false;
  bool dispatch_batches = false;
  bool even_batches = true;
  bool use_seedable_sampler = false;
  // The sampler's generator seed: data_seed, else the job seed, else torch's default seed.
  int64_t data_seed = 0;
  bool non_blocking = false;
  bool use_stateful_dataloader = false;
};

struct Optimizer {
  std::string name;  // sgd, adam or adamw
  double lr = 0;
  double momentum = 0;  // sgd
  double beta1 = 0;     // adam, adamw
  double beta2 = 0;     // adam, adamw
  double eps = 0;       // adam, adamw
  double weight_decay = 0;
};

// The training loop: per micro-batch forward (under autocast), loss, backward with the
// data-parallel reducer; per optimizer step clipping, step and the wrapped scheduler.
struct TrainLoop {
  int64_t steps = 0;  // optimizer steps
  int64_t log_every = 0;
  std::string loss;             // mse or cross_entropy
  std::string mixed_precision;  // no or bf16 (fp16 needs CUDA; the compiler refuses it on CPU)
  Optimizer optimizer;
  // Learning-rate schedule: constant, constant_with_warmup, linear or cosine; warmup and decay in
  // optimizer steps.
  std::string lr_schedule;
  int64_t warmup_steps = 0;
  double num_cycles = 0.5;
  // Accelerate's `step_scheduler_with_optimizer` and `split_batches` decide how often the
  // wrapped scheduler steps.
  bool step_scheduler_with_optimizer = true;
  double max_grad_norm = 0;  // 0: no clipping
  // GradientAccumulationPlugin as Accelerate applies it (adjust_scheduler effectively false, GA-003).
  int64_t accumulation_steps = 1;
  bool adjust_scheduler = false;
  bool sync_with_dataloader = true;
  bool sync_each_batch = false;
  // AutocastKwargs.
  bool autocast_enabled = true;
  bool autocast_cache_enabled = true;
  // DistributedDataParallelKwargs.
  int64_t bucket_cap_mb = 0;
  std::string comm_hook;  // none, fp16 or bf16 (a comm_wrapper around `none` is dropped)
  bool find_unused_parameters = false;
  bool broadcast_buffers = true;
  // Trackers besides the always-written `metrics.jsonl`: `tensorboard`, under
  // `{logging_dir}/{job}`; an empty logging_dir means the output directory.
  std::vector<std::string> trackers;
  std::string logging_dir;
  // The dataset's last `eval_samples` rows are held out (0: none) and evaluated every
  // `eval_every` steps and after the last one (eval_every 0: after the last one only).
  int64_t eval_samples = 0;
  int64_t eval_every = 0;
  // Probe the data loader's batch size downwards from `batch_size` until one step fits in
  // memory on every rank (Accelerate's find_executable_batch_size).
  bool find_executable_batch_size = false;
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
  int64_t every_steps = 0;  // 0: only at the end of epochs (every_epoch) and of the run
  bool every_epoch = false;
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
  // ProjectConfiguration.logging_dir as resolved (PRJ-001); the trackers read TrainLoop's copy.
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
