// save_state: the training state encoded as the files of one checkpoint (safetensors and small
// JSON). Its reader is train_state_restore.cpp.
#include "runtime/engine/train_state.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/plan/plan.h"
#include "llvm/Support/JSON.h"
#include "runtime/checkpoint/dtype.h"
#include "runtime/checkpoint/json.h"
#include "runtime/checkpoint/parallel.h"
#include "runtime/checkpoint/safetensors.h"
#include "runtime/checkpoint/sharded_reader.h"
#include "runtime/engine/train_state_format.h"
#include "runtime/support/error.h"
#include "runtime/support/progress.h"
#include "runtime/tensor/host_bytes.h"
#include "runtime/tensor/scalar_type.h"

namespace accel::rt::train {
namespace {

namespace json = llvm::json;

}  // namespace

const char* SafetensorsDtype(at::ScalarType type) {
  // What checkpoints store: weights and optimizer state (F32, F64), counters (I64), RNG states
  // (U8). The names come from the dtype table (runtime/checkpoint/dtypes.def).
  constexpr checkpoint::Dtype kStored[] = {checkpoint::Dtype::kF32, checkpoint::Dtype::kF64,
                                           checkpoint::Dtype::kI64, checkpoint::Dtype::kU8};
  std::optional<checkpoint::Dtype> dtype = tensor::DtypeOf(type);
  if (!dtype || std::ranges::count(kStored, *dtype) == 0) return nullptr;
  return tensor::SafetensorsName(type);
}

std::vector<std::pair<std::string, at::Tensor>> ModelState(const Trainer& trainer) {
  std::vector<std::pair<std::string, at::Tensor>> state = trainer.NamedParameters();
  for (auto& buffer : trainer.NamedBuffers()) state.push_back(std::move(buffer));
  return state;
}

at::Tensor CaptureRngState() {
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get_state();
}

void RestoreRngState(const at::Tensor& state) {
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_state(state);
}

// What EncodeTrainingState and EncodeShardedTrainingState share: with `model` null, no
// safetensors of the model or the optimizer state.
llvm::Expected<std::unique_ptr<StateFiles>> EncodeStateFiles(
    const std::vector<std::pair<std::string, at::Tensor>>* model, const OptimizerState& optimizer,
    const Progress& progress, const std::vector<at::Tensor>& rng_states, int64_t data_seed);

llvm::Expected<std::unique_ptr<StateFiles>> EncodeTrainingState(const Trainer& trainer,
                                                                const Progress& progress,
                                                                const std::vector<at::Tensor>& rng_states,
                                                                int64_t data_seed) {
  std::vector<std::pair<std::string, at::Tensor>> model = ModelState(trainer);
  return EncodeStateFiles(&model, trainer.ExportOptimizerState(), progress, rng_states, data_seed);
}

llvm::Expected<std::unique_ptr<StateFiles>> EncodeShardedTrainingState(
    const OptimizerState& layout, const Progress& progress, const std::vector<at::Tensor>& rng_states,
    int64_t data_seed) {
  return EncodeStateFiles(nullptr, layout, progress, rng_states, data_seed);
}

llvm::Expected<std::unique_ptr<StateFiles>> EncodeStateFiles(
    const std::vector<std::pair<std::string, at::Tensor>>* model, const OptimizerState& optimizer,
    const Progress& progress, const std::vector<at::Tensor>& rng_states, int64_t data_seed) {
  auto out = std::make_unique<StateFiles>();
  // A view of `tensor` that stays valid while `out` lives.
  auto keep = [&](const at::Tensor& tensor) -> llvm::Expected<checkpoint::TensorRef> {
    // Copying a large model's tensors to the host is the save's first long stretch.
    progress::StillWorking();
    at::Tensor dense = tensor::HostContiguous(tensor);
    out->tensors_.push_back(dense);
    const char* dtype = SafetensorsDtype(dense.scalar_type());
    if (dtype == nullptr)
      return Fail(fmt::format("unsupported dtype {}", c10::toString(dense.scalar_type())));
    return checkpoint::TensorRef{"", dtype, dense.sizes().vec(), tensor::HostBytes(dense)};
  };
  auto add_safetensors = [&](std::string name, const std::vector<checkpoint::TensorRef>& tensors,
                             const std::map<std::string, std::string>& metadata) -> llvm::Error {
    llvm::Expected<checkpoint::EncodedSafetensors> encoded = checkpoint::EncodeSafetensors(tensors, metadata);
    if (!encoded) return Fail(fmt::format("{}: {}", name, llvm::toString(encoded.takeError())));
    out->text_.push_back(std::move(encoded->header));
    std::vector<std::string_view> parts{out->text_.back()};
    parts.insert(parts.end(), encoded->data.begin(), encoded->data.end());
    out->files_.push_back({std::move(name), std::move(parts)});
    return llvm::Error::success();
  };
  auto add_json = [&](std::string name, const json::Value& value) {
    out->text_.push_back(checkpoint::PrettyJson(value));
    out->files_.push_back({std::move(name), {out->text_.back()}});
  };

  // Model weights, as Accelerate's save_state writes them (a sharded checkpoint's are in the
  // ranks' files).
  if (model != nullptr) {
    std::vector<checkpoint::TensorRef> weights;
    for (const auto& [name, tensor] : *model) {
      llvm::Expected<checkpoint::TensorRef> ref = keep(tensor);
      if (!ref)
        return Fail(fmt::format("model.safetensors: `{}`: {}", name, llvm::toString(ref.takeError())));
      ref->name = name;
      weights.push_back(std::move(*ref));
    }
    if (llvm::Error error = add_safetensors("model.safetensors", weights, {{"format", "pt"}})) return error;
  }

  // The optimizer: tensors by parameter name, everything else in JSON.
  std::vector<checkpoint::TensorRef> state_tensors;
  json::Object counters;
  json::Array names;
  for (const OptimizerState::Parameter& parameter : optimizer.parameters) {
    names.push_back(parameter.name);
    for (const auto& [key, tensor] : parameter.tensors) {
      llvm::Expected<checkpoint::TensorRef> ref = keep(tensor);
      if (!ref) return ref.takeError();
      ref->name = fmt::format("state.{}.{}", parameter.name, key);
      state_tensors.push_back(std::move(*ref));
    }
    if (!parameter.counters.empty()) {
      json::Object scalars;
      for (const auto& [key, value] : parameter.counters) scalars[key] = value;
      counters[parameter.name] = std::move(scalars);
    }
  }
  if (model != nullptr) {
    if (llvm::Error error = add_safetensors(kOptimizerStateFile, state_tensors, {{"format", "pt"}}))
      return error;
  }
  json::Object group = optimizer.hyperparameters;
  group["params"] = std::move(names);
  double lr = group.getNumber("lr").getValueOr(0);
  add_json("optimizer.json", json::Object{{"format", "accel-optimizer"},
                                          {"version", kStateVersion},
                                          {"type", optimizer.type},
                                          {"param_groups", json::Array{std::move(group)}},
                                          {"state", std::move(counters)}});
  add_json("scheduler.json",
           json::Object{{"type", progress.schedule},
                        {"last_epoch", progress.scheduler_steps},
                        {"total_steps", progress.schedule_steps},
                        {"warmup_steps", progress.warmup_steps},
                        {"base_lrs", json::Array{progress.base_lr > 0 ? progress.base_lr : lr}},
                        {"last_lr", json::Array{lr}}});
  add_json("dataloader_0.json",
           json::Object{
               {"epoch", progress.data_epoch}, {"position", progress.data_position}, {"seed", data_seed}});
  add_json("trainer_state.json", json::Object{{"format", "accel-trainer-state"},
                                              {"version", kStateVersion},
                                              {"step", progress.step},
                                              {"samples_seen", progress.samples_seen},
                                              {"world_size", static_cast<int64_t>(rng_states.size())}});
  if (const std::optional<LossScaleState>& scale = progress.loss_scale) {
    add_json("scaler.json", json::Object{{"format", "accel-loss-scale"},
                                         {"version", kStateVersion},
                                         {"scale", scale->scale},
                                         {"growth_tracker", scale->growth_tracker},
                                         {"iteration", scale->iteration},
                                         {"last_overflow", scale->last_overflow},
                                         {"hysteresis_left", scale->hysteresis_left},
                                         {"skipped_steps", progress.skipped_steps}});
  }
  for (size_t rank = 0; rank < rng_states.size(); ++rank) {
    llvm::Expected<checkpoint::TensorRef> ref = keep(rng_states[rank]);
    if (!ref) return ref.takeError();
    ref->name = kRngTensor;
    if (llvm::Error error = add_safetensors(fmt::format("random_states_{}.safetensors", rank), {*ref},
                                            {{"format", "accel"}, {"step", std::to_string(progress.step)}})) {
      return error;
    }
  }
  return out;
}

}  // namespace accel::rt::train
