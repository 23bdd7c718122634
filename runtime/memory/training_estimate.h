#ifndef ACCEL_RUNTIME_MEMORY_TRAINING_ESTIMATE_H_
#define ACCEL_RUNTIME_MEMORY_TRAINING_ESTIMATE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/plan/plan.h"
#include "llvm/Support/Error.h"
#include "runtime/memory/module_tree.h"

// What one rank of a training job holds, before it runs: the model states (parameters,
// gradients, optimizer state) by ZeRO stage, world size, optimizer and offload, the parameters
// a stage-3 rank gathers at once, and the activations of the built-in models for one
// micro-batch. Torch-free: `accelrun estimate-memory --training` prints it from a plan, and the
// runtime's test holds the model states to within 15% of what the engine allocates.
namespace accel::rt::memory {

// The model as the engine wraps it: one entry per unit (a Linear of the MLP; the embedding, each
// encoder layer and the head of the transformer), its parameter elements.
struct ModelBlocks {
  std::vector<int64_t> elements;
  // Bytes of activations backward keeps for one sample (float32), for the built-in models;
  // unset when unknown (a TorchScript model).
  std::optional<double> activation_bytes_per_sample;
  int64_t total() const;
};

// The units of a built-in model; nullopt for a TorchScript model.
std::optional<ModelBlocks> BuiltInBlocks(const plan::Model& model);

// The units of a model known by its checkpoint's tensors (module_tree.h): its floating-point
// tensors (the trained ones) grouped by the name up to the first numbered segment
// (`model.layers.3`), else by the first segment (`lm_head`), as a wrap policy wraps each
// repeated layer. Activations are unknown.
ModelBlocks BlocksOfTensors(const std::vector<TensorEntry>& tensors);

struct TrainingSetup {
  ModelBlocks model;
  int64_t world_size = 1;    // ranks that shard (the data-parallel group; a machine with hybrid)
  int64_t stage = 0;         // 0: DDP (or one process); 1, 2, 3: ZeRO / FSDP
  std::string optimizer = "AdamW";  // its plan name
  int64_t state_tensors = 2; // optimizer state tensors per parameter: AdamW 2, SGD momentum 1, SGD 0
  bool offload_optimizer = false;
  bool offload_params = false;
  int64_t micro_batch = 1;   // samples per process per forward

  // The optimizer's name and state tensors (runtime/checkpoint/optimizer_format.h).
  void SetOptimizer(const plan::Optimizer& optimizer);
};

// Bytes one rank holds, on the device and on the host (offloaded).
struct RankMemory {
  double parameters = 0;
  double gradients = 0;
  double optimizer = 0;
  double gathered = 0;     // stage 3: units gathered at once (two: the block and the next)
  double activations = 0;  // one micro-batch's, for the built-in models
  bool activations_known = false;
  double host_parameters = 0;  // offload_params
  double host_optimizer = 0;   // offload_optimizer
  double model_states() const { return parameters + gradients + optimizer + host_parameters + host_optimizer; }
  double device_peak() const { return parameters + gradients + optimizer + gathered + activations; }
};

// Per-rank memory of `setup`, as the engines lay out float32 training state (with Ψ the
// parameters' bytes and Ψ/N a rank's shards, padded per unit): DDP Ψ parameters, Ψ gradients and
// Ψ of buckets with several ranks, kΨ optimizer state; stage 1 Ψ + Ψ/N parameters (the whole
// ones and the shard the optimizer steps), Ψ + Ψ/N gradients (the whole buffer is kept until the
// step), kΨ/N optimizer state; stage 2 the same with Ψ/N gradients; stage 3 Ψ/N of each, plus
// the units gathered while they run.
RankMemory EstimateTrainingMemory(const TrainingSetup& setup);

// The setup of a plan: its model's units (or `blocks`, e.g. from a checkpoint, for a TorchScript
// model), world size, sharding stage and offload, optimizer and micro-batch. Fails when the plan
// trains nothing or its model's parameters are unknown.
llvm::Expected<TrainingSetup> SetupOfPlan(const plan::Plan& plan, std::optional<ModelBlocks> blocks = std::nullopt);

// The estimate as `accelrun estimate-memory --training` prints it.
std::string RenderTrainingEstimate(const TrainingSetup& setup, const RankMemory& memory, const std::string& job);

}  // namespace accel::rt::memory

#endif  // ACCEL_RUNTIME_MEMORY_TRAINING_ESTIMATE_H_
