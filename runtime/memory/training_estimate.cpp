#include "runtime/memory/training_estimate.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <numeric>

#include <fmt/format.h>

#include "runtime/checkpoint/optimizer_format.h"
#include "runtime/memory/estimate.h"

namespace accel::rt::memory {
namespace {

// The engines train float32 parameters, gradients and optimizer state (bf16 and fp16 are
// autocast regions, not a second copy of the weights).
constexpr double kFloatBytes = 4;

llvm::Error Fail(const std::string& message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", message.c_str());
}

}  // namespace

int64_t ModelBlocks::total() const { return std::accumulate(elements.begin(), elements.end(), int64_t{0}); }

std::optional<ModelBlocks> BuiltInBlocks(const plan::Model& model) {
  return std::visit(
      plan::Overloaded{
          // One Linear (with its ReLU) per block; backward keeps each Linear's input and each
          // ReLU's output.
          [](const plan::MLP& mlp) -> std::optional<ModelBlocks> {
            ModelBlocks blocks;
            std::vector<int64_t> widths{mlp.inputs};
            widths.insert(widths.end(), mlp.hidden.begin(), mlp.hidden.end());
            widths.push_back(mlp.outputs);
            double saved = 0;
            for (size_t i = 0; i + 1 < widths.size(); ++i) {
              blocks.elements.push_back(widths[i] * widths[i + 1] + widths[i + 1]);
              saved += static_cast<double>(widths[i] + widths[i + 1]);
            }
            blocks.activation_bytes_per_sample = saved * kFloatBytes;
            return blocks;
          },
          // The embedding (a Linear(1, d) and the positions), each encoder layer (attention's
          // in and out projections, two feed-forward Linears, two LayerNorms), and the head.
          [](const plan::Transformer& t) -> std::optional<ModelBlocks> {
            ModelBlocks blocks;
            const int64_t d = t.d_model, ff = t.feedforward;
            blocks.elements.push_back(2 * d + t.inputs * d);
            const int64_t layer = (3 * d * d + 3 * d) + (d * d + d) + (ff * d + ff) + (d * ff + d) + 4 * d;
            for (int64_t i = 0; i < t.layers; ++i) blocks.elements.push_back(layer);
            blocks.elements.push_back(d * t.outputs + t.outputs);
            // Per token and layer: the layer's input, q, k, v, the attention output and its
            // projection, both norms' inputs and outputs, the feed-forward's two activations;
            // per head the T x T scores and their softmax.
            const double per_token = static_cast<double>(10 * d + 2 * ff);
            const double scores = 2.0 * static_cast<double>(t.heads) * static_cast<double>(t.inputs);
            blocks.activation_bytes_per_sample =
                (static_cast<double>(t.inputs) * (per_token + scores) * static_cast<double>(t.layers) +
                 static_cast<double>(t.inputs * d)) *
                kFloatBytes;
            return blocks;
          },
          [](const plan::TorchScript&) -> std::optional<ModelBlocks> { return std::nullopt; },
      },
      model);
}

ModelBlocks BlocksOfTensors(const std::vector<TensorEntry>& tensors) {
  std::map<std::string, int64_t> units;
  std::vector<std::string> order;
  for (const TensorEntry& tensor : tensors) {
    if (tensor.dtype.empty() || (tensor.dtype[0] != 'F' && tensor.dtype != "BF16")) continue;
    std::string unit;
    bool numbered = false;
    for (size_t start = 0; !numbered;) {
      size_t dot = tensor.name.find('.', start);
      if (dot == std::string::npos) break;  // the tensor's own name is no module
      std::string segment = tensor.name.substr(start, dot - start);
      unit += (unit.empty() ? "" : ".") + segment;
      numbered = !segment.empty() && std::all_of(segment.begin(), segment.end(), ::isdigit);
      start = dot + 1;
    }
    // Without a numbered segment, the top-level module.
    if (!numbered) unit = tensor.name.substr(0, tensor.name.find('.'));
    int64_t elements = 1;
    for (int64_t extent : tensor.shape) elements *= extent;
    if (units.emplace(unit, 0).second) order.push_back(unit);
    units[unit] += elements;
  }
  ModelBlocks blocks;
  for (const std::string& unit : order) blocks.elements.push_back(units[unit]);
  return blocks;
}

RankMemory EstimateTrainingMemory(const TrainingSetup& setup) {
  const int64_t n = std::max<int64_t>(setup.world_size, 1);
  const double whole = static_cast<double>(setup.model.total()) * kFloatBytes;
  // Each unit's shard, padded so every rank's is equally long.
  double shard = 0, largest = 0;
  for (int64_t unit : setup.model.elements) {
    shard += static_cast<double>((unit + n - 1) / n) * kFloatBytes;
    largest = std::max(largest, static_cast<double>(unit) * kFloatBytes);
  }
  const double k = static_cast<double>(setup.state_tensors);
  RankMemory memory;
  switch (std::clamp<int64_t>(setup.stage, 0, 3)) {
    case 0:
      // DDP: whole everything, and with several ranks the flat buckets the reducer averages in.
      memory.parameters = whole;
      memory.gradients = n > 1 ? 2 * whole : whole;
      memory.optimizer = k * whole;
      break;
    case 1:
      // Whole parameters, and this rank's shard of them, which the optimizer steps before they
      // are gathered back; the whole gradient buffer is kept until the step.
      memory.parameters = whole + shard;
      memory.gradients = whole + shard;
      memory.optimizer = k * shard;
      break;
    case 2:
      memory.parameters = whole + shard;
      memory.gradients = shard;
      memory.optimizer = k * shard;
      break;
    case 3:
      memory.parameters = shard;
      memory.gradients = shard;
      memory.optimizer = k * shard;
      // A unit's block and the next one (prefetch) are whole while they run.
      memory.gathered = std::min(whole, 2 * largest);
      break;
  }
  if (setup.offload_optimizer) std::swap(memory.optimizer, memory.host_optimizer);
  if (setup.offload_params && setup.stage == 3) std::swap(memory.parameters, memory.host_parameters);
  if (setup.model.activation_bytes_per_sample) {
    memory.activations = *setup.model.activation_bytes_per_sample * static_cast<double>(setup.micro_batch);
    memory.activations_known = true;
  }
  return memory;
}

void TrainingSetup::SetOptimizer(const plan::Optimizer& plan_optimizer) {
  optimizer = std::string(plan::TagOf(plan_optimizer));
  state_tensors = checkpoint::StateTensorsPerParameter(plan_optimizer);
}

llvm::Expected<TrainingSetup> SetupOfPlan(const plan::Plan& plan, std::optional<ModelBlocks> blocks) {
  const auto* model = plan.Find<plan::BuildModel>();
  const auto* loop = plan.Find<plan::TrainLoop>();
  const auto* data = plan.Find<plan::BuildDataloader>();
  const auto* group = plan.Find<plan::InitProcessGroup>();
  if (model == nullptr || loop == nullptr || data == nullptr)
    return Fail(fmt::format("plan `{}` trains nothing", plan.job));
  TrainingSetup setup;
  if (!blocks) blocks = BuiltInBlocks(model->model);
  if (!blocks) {
    return Fail("the model is a TorchScript file, whose parameters only its file knows: give a checkpoint of "
                "its weights (`accelrun estimate-memory <checkpoint> --training <spec>`)");
  }
  setup.model = std::move(*blocks);
  const int64_t world = group != nullptr ? group->num_machines * group->processes_per_machine : 1;
  const plan::Sharding& sharding = loop->sharding;
  // Sharding spans the data-parallel group: a machine's processes with hybrid sharding, and
  // the ranks of one tensor-parallel position.
  setup.world_size = sharding.hybrid && group != nullptr ? group->processes_per_machine
                                                          : world / std::max<int64_t>(sharding.tensor_parallel, 1);
  setup.stage = sharding.stage;
  setup.SetOptimizer(loop->optimizer);
  setup.offload_optimizer = sharding.offload_optimizer;
  setup.offload_params = sharding.offload_params;
  // Samples one process runs forward at once.
  setup.micro_batch = data->split_batches ? std::max<int64_t>(data->batch_size / std::max<int64_t>(world, 1), 1)
                                          : data->batch_size;
  return setup;
}

std::string RenderTrainingEstimate(const TrainingSetup& setup, const RankMemory& memory, const std::string& job) {
  const std::string optimizer_kind =
      setup.state_tensors == 0 ? fmt::format("{} (no state)", setup.optimizer)
                               : fmt::format("{} ({} state tensor{})", setup.optimizer, setup.state_tensors,
                                             setup.state_tensors == 1 ? "" : "s");
  std::string out = fmt::format(
      "training estimate for `{}`, per rank: {} parameters in {} units, {} rank{} sharding, ZeRO stage {}, {}{}\n\n",
      job, setup.model.total(), setup.model.elements.size(), setup.world_size, setup.world_size == 1 ? "" : "s",
      setup.stage, optimizer_kind,
      memory.activations_known ? fmt::format(", micro-batch {}", setup.micro_batch) : std::string());
  auto row = [&](const char* what, double bytes, const char* note) {
    out += fmt::format("{:<22}{:>14}  {}\n", what, HumanBytes(bytes), note);
  };
  row("parameters", memory.parameters,
      setup.stage == 3 ? "this rank's shards" : setup.stage > 0 ? "whole, and the shards the optimizer steps" : "whole");
  row("gradients", memory.gradients,
      setup.stage == 0 ? (setup.world_size > 1 ? "whole, and the reducer's buckets" : "whole")
      : setup.stage == 1 ? "whole until the step, and the shards" : "this rank's shards");
  row("optimizer state", memory.optimizer, setup.offload_optimizer ? "offloaded (below)" : setup.stage > 0 ? "shards" : "whole");
  if (setup.stage == 3) row("gathered units", memory.gathered, "a block and the next, whole, while they run");
  if (memory.activations_known) row("activations", memory.activations, "one micro-batch, float32");
  else out += fmt::format("{:<22}{:>14}  {}\n", "activations", "unknown", "the model's file says nothing of them");
  out += fmt::format("{:<22}{:>14}  {}\n", "device peak", HumanBytes(memory.device_peak()),
                     "model states + gathered + activations");
  if (memory.host_optimizer > 0 || memory.host_parameters > 0)
    row("host (offloaded)", memory.host_optimizer + memory.host_parameters, "optimizer state and parameters");
  out += "\nModel states are float32 (bf16 and fp16 train in autocast regions); each within 15% of what the "
         "engine allocates (tests/runtime/training_estimate_test.cpp).\n";
  return out;
}

}  // namespace accel::rt::memory
