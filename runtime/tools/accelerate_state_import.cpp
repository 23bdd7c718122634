// The folder Accelerate's `save_state` writes, read into an Accel checkpoint of a plan.
#include <algorithm>
#include <cmath>
#include <deque>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>

#include "llvm/Support/JSON.h"
#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/checkpoint/json.h"
#include "runtime/checkpoint/optimizer_format.h"
#include "runtime/checkpoint/safetensors.h"
#include "runtime/checkpoint/torch_zip.h"
#include "runtime/engine/checkpoint_limits.h"
#include "runtime/tools/accelerate_state.h"
#include "runtime/tools/accelerate_state_files.h"
#include "runtime/train/data_identity.h"

namespace accel::tools {
namespace {

namespace fs = std::filesystem;
namespace ckpt = rt::checkpoint;
namespace pk = rt::checkpoint::pickle;
namespace json = llvm::json;
using Kind = pk::Object::Kind;

// The format of the checkpoint files written here, as train_state.cpp writes and reads them.
constexpr int64_t kStateVersion = 1;
// What the largest counter read from a pickle may be: a step beyond any run, far below 2^53.
constexpr double kMaxCount = 1e15;

// Everything the checkpoint's files point into: mapped inputs and the text written here.
struct Written {
  std::vector<ckpt::CheckpointFile> files;
  std::deque<std::string> text;
  std::vector<ckpt::TorchFile> inputs;
  std::vector<ckpt::SafetensorsFile> safetensors;

  void AddJson(std::string name, const json::Value& value) {
    text.push_back(ckpt::PrettyJson(value));
    files.push_back({std::move(name), {text.back()}});
  }
  llvm::Error AddSafetensors(std::string name, const std::vector<ckpt::TensorRef>& tensors,
                             const std::map<std::string, std::string>& metadata) {
    llvm::Expected<ckpt::EncodedSafetensors> encoded = ckpt::EncodeSafetensors(tensors, metadata);
    if (!encoded) return Fail(fmt::format("{}: {}", name, llvm::toString(encoded.takeError())));
    text.push_back(std::move(encoded->header));
    std::vector<std::string_view> parts{text.back()};
    parts.insert(parts.end(), encoded->data.begin(), encoded->data.end());
    files.push_back({std::move(name), std::move(parts)});
    return llvm::Error::success();
  }
};

std::optional<double> Number(const pk::Object* value) {
  if (value == nullptr) return std::nullopt;
  if (value->kind == Kind::kFloat) return value->number;
  if (value->kind == Kind::kInt) return static_cast<double>(value->integer);
  return std::nullopt;
}

// A count saved as a number or a one-element tensor (Adam's `step`): a non-negative integer.
std::optional<int64_t> Count(const ckpt::TorchFile& file, const pk::Object& value) {
  double count;
  if (std::optional<double> number = Number(&value)) {
    count = *number;
  } else if (value.kind == Kind::kTensor && (value.tensor.dtype == "F32" || value.tensor.dtype == "F64")) {
    llvm::Expected<std::string_view> bytes = file.TensorBytes(value.tensor);
    if (!bytes) {
      llvm::consumeError(bytes.takeError());
      return std::nullopt;
    }
    if (value.tensor.dtype == "F32" && bytes->size() == sizeof(float)) {
      float single;
      std::memcpy(&single, bytes->data(), sizeof single);
      count = single;
    } else if (value.tensor.dtype == "F64" && bytes->size() == sizeof(double)) {
      std::memcpy(&count, bytes->data(), sizeof count);
    } else {
      return std::nullopt;
    }
  } else {
    return std::nullopt;
  }
  if (!(count >= 0 && count <= kMaxCount) || count != std::floor(count)) return std::nullopt;
  return static_cast<int64_t>(count);
}

// The plan's optimizers a torch param group can be from (their plan names): those whose
// numbers and pairs it all holds, and whose `decoupled_weight_decay` it matches where it has one.
std::vector<std::string> OptimizersOfGroup(const pk::Object& group) {
  const pk::Object* decoupled = group.Find("decoupled_weight_decay");
  std::vector<std::string> names;
  ckpt::ForEachOptimizer([&](auto tag) {
    using O = typename decltype(tag)::type;
    using Format = ckpt::OptimizerFormat<O>;
    for (const ckpt::Hyperparameter& h : Format::kHyperparameters)
      if (h.kind != ckpt::Hyperparameter::Kind::kFlag && group.Find(h.name) == nullptr) return false;
    if (decoupled != nullptr && decoupled->kind == Kind::kBool && Format::kDecoupledWeightDecay &&
        *Format::kDecoupledWeightDecay != decoupled->boolean)
      return false;
    names.emplace_back(O::kTag);
    return false;
  });
  return names;
}

// What optimizer.bin says.
struct OptimizerRead {
  json::Object group;   // Accel's hyper-parameters
  json::Object counters;
  std::vector<ckpt::TensorRef> tensors;
  std::optional<int64_t> step;  // the optimizer's own count, where it keeps one
  size_t parameters = 0;
  double initial_lr = 0;
};

llvm::Expected<OptimizerRead> ReadOptimizer(const ckpt::TorchFile& file, const std::string& path,
                                            const plan::Optimizer& optimizer) {
  auto bad = [&](const std::string& what) { return Fail(path, what); };
  const pk::Object& root = *file.root;
  const pk::Object* state = root.Find("state");
  const pk::Object* groups = root.Find("param_groups");
  if (state == nullptr || state->kind != Kind::kDict || groups == nullptr || groups->kind != Kind::kList)
    return bad("expected an optimizer's state_dict(): a dict of `state` and `param_groups`");
  if (groups->items.size() != 1 || groups->items[0]->kind != Kind::kDict) {
    return bad(fmt::format("{} parameter groups; Accel trains one, with one learning rate for every parameter",
                           groups->items.size()));
  }
  const pk::Object& group = *groups->items[0];
  OptimizerRead out;
  const pk::Object* params = group.Find("params");
  if (params == nullptr || params->kind != Kind::kList) return bad("the parameter group has no `params` list");
  for (size_t i = 0; i < params->items.size(); ++i) {
    if (params->items[i]->kind != Kind::kInt || params->items[i]->integer != static_cast<int64_t>(i))
      return bad("`params` must number the parameters 0, 1, 2, ... as state_dict() does");
  }
  out.parameters = params->items.size();
  // Adam and AdamW share their keys; PyTorch 2.x tells them apart by decoupled_weight_decay.
  std::vector<std::string> candidates = OptimizersOfGroup(group);
  if (std::find(candidates.begin(), candidates.end(), plan::TagOf(optimizer)) == candidates.end()) {
    return bad(fmt::format("the optimizer is {}, the plan's is `{}`",
                           candidates.empty() ? fmt::format("none of {}", ckpt::OptimizerNames())
                                              : fmt::format("{}", fmt::join(candidates, " or ")),
                           ckpt::OptimizerName(optimizer)));
  }
  llvm::Error read = llvm::Error::success();
  std::visit(
      [&](const auto& o) {
        for (const ckpt::Hyperparameter& h : ckpt::OptimizerFormat<std::decay_t<decltype(o)>>::kHyperparameters) {
          const std::string key(h.name);
          const pk::Object* value = group.Find(key);
          switch (h.kind) {
            case ckpt::Hyperparameter::Kind::kNumber:
              if (std::optional<double> number = Number(value)) {
                out.group[key] = *number;
              } else if (!read) {
                read = bad(fmt::format("the parameter group has no number `{}`", h.name));
              }
              break;
            case ckpt::Hyperparameter::Kind::kFlag:
              out.group[key] = value != nullptr && value->kind == Kind::kBool && value->boolean;
              break;
            case ckpt::Hyperparameter::Kind::kNumberPair: {
              const bool pair = value != nullptr && value->kind == Kind::kTuple && value->items.size() == 2;
              std::optional<double> first = pair ? Number(value->items[0].get()) : std::nullopt;
              std::optional<double> second = pair ? Number(value->items[1].get()) : std::nullopt;
              if (first && second) {
                out.group[key] = json::Array{*first, *second};
              } else if (!read) {
                read = bad(fmt::format("`{}` is not a pair of numbers", h.name));
              }
              break;
            }
          }
        }
      },
      optimizer);
  if (read) return std::move(read);
  out.initial_lr = Number(group.Find("initial_lr")).value_or(*out.group.getNumber("lr"));

  for (size_t i = 0; i + 1 < state->items.size(); i += 2) {
    const pk::Object& index = *state->items[i];
    const pk::Object& entries = *state->items[i + 1];
    if (index.kind != Kind::kInt || index.integer < 0 || static_cast<size_t>(index.integer) >= out.parameters ||
        entries.kind != Kind::kDict)
      return bad("`state` must map parameter numbers of `params` to dicts");
    const std::string position = std::to_string(index.integer);
    json::Object scalars;
    for (size_t k = 0; k + 1 < entries.items.size(); k += 2) {
      const pk::Object& key = *entries.items[k];
      const pk::Object& value = *entries.items[k + 1];
      if (key.kind != Kind::kString) return bad(fmt::format("state {} has a key that is not a string", position));
      if (key.text == "step") {
        std::optional<int64_t> step = Count(file, value);
        if (!step) return bad(fmt::format("state {}: `step` is not a whole count", position));
        if (out.step && *out.step != *step)
          return bad(fmt::format("parameters were stepped {} and {} times; Accel steps every parameter together",
                                 *out.step, *step));
        out.step = *step;
        scalars["step"] = *step;
        continue;
      }
      if (value.kind == Kind::kNone) continue;  // SGD without momentum keeps no buffer
      if (value.kind != Kind::kTensor || value.tensor.dtype != "F32")
        return bad(fmt::format("state {}: `{}` is not a float32 tensor", position, key.text));
      llvm::Expected<std::string_view> bytes = file.TensorBytes(value.tensor);
      if (!bytes) return bad(fmt::format("state {}: `{}`: {}", position, key.text, llvm::toString(bytes.takeError())));
      out.tensors.push_back({fmt::format("state.{}.{}", position, key.text), "F32", value.tensor.shape, *bytes});
    }
    if (!scalars.empty()) out.counters[position] = std::move(scalars);
  }
  return out;
}

// The step the folder was saved at, from every source that tells it; they must agree.
llvm::Expected<int64_t> ResolveStep(std::optional<int64_t> optimizer_step, std::optional<int64_t> scheduler_step,
                                    std::optional<int64_t> given, const std::string& folder) {
  std::vector<std::pair<std::string, int64_t>> sources;
  if (given) sources.emplace_back("--step", *given);
  if (optimizer_step) sources.emplace_back("optimizer.bin's `step`", *optimizer_step);
  if (scheduler_step) sources.emplace_back("scheduler.bin's `last_epoch`", *scheduler_step);
  if (sources.empty()) {
    return Fail(folder, "neither optimizer.bin nor a scheduler.bin says how many steps were taken; pass "
                        "`--step N`, the optimizer steps the run had taken when it saved");
  }
  for (const auto& [source, step] : sources) {
    if (step != sources.front().second) {
      return Fail(folder, fmt::format("{} says step {}, {} says step {}", sources.front().first,
                                      sources.front().second, source, step));
    }
  }
  return sources.front().second;
}

}  // namespace

llvm::Expected<ImportResult> ImportAccelerateState(const std::string& folder, const plan::Plan& plan,
                                                   const std::string& checkpoint_dir, const ImportOptions& options) {
  const auto* data = plan.Find<plan::BuildDataloader>();
  const auto* loop = plan.Find<plan::TrainLoop>();
  if (data == nullptr || loop == nullptr) return Fail(fmt::format("plan `{}` trains nothing", plan.job));
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) return Fail(fmt::format("`{}` is not a folder", folder));
  auto in = [&](const std::string& name) { return (fs::path(folder) / name).string(); };
  auto has = [&](const std::string& name) { return fs::is_regular_file(in(name), ec); };

  ImportResult result;
  // What Accel does not keep, or cannot take.
  for (const char* one_model : {"model_1.safetensors", "pytorch_model_1.bin", "optimizer_1.bin"}) {
    if (has(one_model))
      return Fail(folder, fmt::format("`{}`: the run saved several models or optimizers; Accel trains one", one_model));
  }
  if (has("scaler.pt"))
    return Fail(folder, "`scaler.pt`: the run trained in fp16 with a loss scale, which import-state does not read yet");
  for (const char* ignored : {"sampler.bin", "dl_state_dict.bin"}) {
    if (has(ignored)) {
      result.notes.push_back(fmt::format("`{}` is not read: Accel continues the data where the step puts it",
                                         ignored));
    }
  }
  if (!has("optimizer.bin")) return Fail(folder, "no optimizer.bin: import-state needs the optimizer's state");

  Written out;
  // The model: Accelerate's safetensors as they are, or a torch.save state_dict.
  if (has("model.safetensors")) {
    llvm::Expected<ckpt::SafetensorsFile> model = ckpt::SafetensorsFile::Read(in("model.safetensors"));
    if (!model) return model.takeError();
    std::vector<ckpt::TensorRef> tensors;
    for (const auto& [name, info] : model->tensors()) tensors.push_back({name, info.dtype, info.shape, model->Bytes(name)});
    out.safetensors.push_back(std::move(*model));
    if (llvm::Error error = out.AddSafetensors("model.safetensors", tensors, {{"format", "pt"}})) return error;
  } else if (has("pytorch_model.bin")) {
    llvm::Expected<ckpt::TorchFile> model = ckpt::ReadTorchFile(in("pytorch_model.bin"));
    if (!model) return model.takeError();
    const pk::Object& root = *model->root;
    std::vector<ckpt::TensorRef> tensors;
    for (size_t i = 0; root.kind == Kind::kDict && i + 1 < root.items.size(); i += 2) {
      const pk::Object& name = *root.items[i];
      const pk::Object& tensor = *root.items[i + 1];
      if (name.kind != Kind::kString || tensor.kind != Kind::kTensor)
        return Fail(in("pytorch_model.bin"), "expected a state_dict: parameter names to tensors");
      llvm::Expected<std::string_view> bytes = model->TensorBytes(tensor.tensor);
      if (!bytes) return Fail(in("pytorch_model.bin"), fmt::format("`{}`: {}", name.text, llvm::toString(bytes.takeError())));
      tensors.push_back({name.text, tensor.tensor.dtype, tensor.tensor.shape, *bytes});
    }
    if (root.kind != Kind::kDict || tensors.empty())
      return Fail(in("pytorch_model.bin"), "expected a state_dict: parameter names to tensors");
    out.inputs.push_back(std::move(*model));
    if (llvm::Error error = out.AddSafetensors("model.safetensors", tensors, {{"format", "pt"}})) return error;
  } else {
    return Fail(folder, "no model.safetensors or pytorch_model.bin");
  }

  // The optimizer, its state by position: the resume resolves positions against the model.
  const std::string type = ckpt::OptimizerName(loop->optimizer);
  llvm::Expected<ckpt::TorchFile> optimizer_file = ckpt::ReadTorchFile(in("optimizer.bin"));
  if (!optimizer_file) return optimizer_file.takeError();
  out.inputs.push_back(std::move(*optimizer_file));
  llvm::Expected<OptimizerRead> optimizer = ReadOptimizer(out.inputs.back(), in("optimizer.bin"), loop->optimizer);
  if (!optimizer) return optimizer.takeError();

  // The random states, one per process that saved: their count is the saving run's world size.
  int64_t world = 0;
  std::vector<std::string> rng_states;
  while (world < rt::train::kMaxCheckpointWorldSize && has(fmt::format("random_states_{}.pkl", world))) {
    const std::string path = in(fmt::format("random_states_{}.pkl", world));
    llvm::Expected<ckpt::TorchFile> states = ckpt::ReadTorchFile(path);
    if (!states) return states.takeError();
    const pk::Object* torch_state = states->root->Find("torch_manual_seed");
    if (torch_state == nullptr || torch_state->kind != Kind::kTensor || torch_state->tensor.dtype != "U8")
      return Fail(path, "no uint8 tensor `torch_manual_seed`, torch's generator state");
    llvm::Expected<std::string_view> bytes = states->TensorBytes(torch_state->tensor);
    if (!bytes) return Fail(path, llvm::toString(bytes.takeError()));
    out.inputs.push_back(std::move(*states));
    rng_states.push_back(std::string(*bytes));
    ++world;
  }
  if (world == 0) return Fail(folder, "no random_states_0.pkl: the folder is not one save_state wrote");

  // The scheduler counts as Accelerate steps it: once per process per optimizer step unless
  // batches are split, or once per micro-batch when not stepped with the optimizer.
  const int64_t accumulation = loop->gradient_accumulation.num_steps;
  const int64_t per_step = !loop->step_scheduler_with_optimizer ? accumulation : data->split_batches ? 1 : world;
  std::optional<int64_t> scheduler_count;
  double base_lr = optimizer->initial_lr;
  double last_lr = *optimizer->group.getNumber("lr");
  if (has("scheduler.bin")) {
    const std::string path = in("scheduler.bin");
    llvm::Expected<ckpt::TorchFile> scheduler = ckpt::ReadTorchFile(path);
    if (!scheduler) return scheduler.takeError();
    const pk::Object* last_epoch = scheduler->root->Find("last_epoch");
    const pk::Object* base_lrs = scheduler->root->Find("base_lrs");
    scheduler_count = last_epoch != nullptr ? Count(*scheduler, *last_epoch) : std::nullopt;
    if (!scheduler_count) return Fail(path, "expected a scheduler's state_dict() with a whole `last_epoch`");
    if (*scheduler_count % per_step != 0) {
      return Fail(path, fmt::format("`last_epoch` {} is not a whole number of optimizer steps of {} scheduler "
                                    "steps each",
                                    *scheduler_count, per_step));
    }
    if (base_lrs != nullptr && base_lrs->kind == Kind::kList && base_lrs->items.size() == 1)
      base_lr = Number(base_lrs->items[0].get()).value_or(base_lr);
  }
  llvm::Expected<int64_t> step =
      ResolveStep(optimizer->step, scheduler_count ? std::optional<int64_t>(*scheduler_count / per_step) : std::nullopt,
                  options.step, folder);
  if (!step) return step.takeError();
  // The counts derived from the step: none may pass 64 bits (`--step` takes any number).
  const int64_t samples_per_step = data->batch_size * accumulation * (data->split_batches ? 1 : world);
  int64_t scheduler_steps = 0, position = 0, samples = 0;
  if (*step > kMaxCount || __builtin_mul_overflow(*step, per_step, &scheduler_steps) ||
      __builtin_mul_overflow(*step, accumulation, &position) ||
      __builtin_mul_overflow(*step, samples_per_step, &samples)) {
    return Fail(folder, fmt::format("step {} is beyond any run's", *step));
  }

  if (llvm::Error error = out.AddSafetensors("optimizer.safetensors", optimizer->tensors, {{"format", "pt"}}))
    return error;
  json::Array positions;
  for (size_t i = 0; i < optimizer->parameters; ++i) positions.push_back(static_cast<int64_t>(i));
  optimizer->group["params"] = std::move(positions);
  out.AddJson("optimizer.json", json::Object{{"format", "accel-optimizer"},
                                             {"version", kStateVersion},
                                             {"type", type},
                                             {"param_groups", json::Array{std::move(optimizer->group)}},
                                             {"state", std::move(optimizer->counters)}});
  // Accelerate keeps no schedule, only its count: the plan's schedule is taken to be the one the
  // run followed (its length and warmup unknown, so not compared on resume).
  out.AddJson("scheduler.json", json::Object{{"type", std::string(plan::EnumName(loop->lr_schedule))},
                                             {"last_epoch", scheduler_count.value_or(scheduler_steps)},
                                             {"total_steps", -1},
                                             {"warmup_steps", -1},
                                             {"base_lrs", json::Array{base_lr}},
                                             {"last_lr", json::Array{last_lr}}});
  // Accelerate keeps no data position for a map-style dataset (the script skips batches): the
  // position is the batches the steps drew, carried into later epochs when the run resumes.
  out.AddJson("dataloader_0.json", json::Object{{"epoch", 0},
                                                {"position", position},
                                                {"seed", rt::train::DataIdentitySeed(*data)}});
  out.AddJson("trainer_state.json", json::Object{{"format", "accel-trainer-state"},
                                                 {"version", kStateVersion},
                                                 {"step", *step},
                                                 {"samples_seen", samples},
                                                 {"world_size", world}});
  for (int64_t rank = 0; rank < world; ++rank) {
    const std::string& bytes = rng_states[static_cast<size_t>(rank)];
    if (llvm::Error error = out.AddSafetensors(
            fmt::format("random_states_{}.safetensors", rank),
            {{"torch_manual_seed", "U8", {static_cast<int64_t>(bytes.size())}, bytes}},
            {{"format", "accel"}, {"step", std::to_string(*step)}}))
      return error;
  }
  if (fs::exists(checkpoint_dir, ec))
    return Fail(fmt::format("`{}` exists; import-state writes a new checkpoint folder", checkpoint_dir));
  if (llvm::Error error = ckpt::WriteCheckpointDirectory(checkpoint_dir, out.files, 0)) return error;
  result.step = *step;
  result.world_size = world;
  for (const ckpt::CheckpointFile& file : out.files) result.files.push_back(file.name);
  return result;
}

}  // namespace accel::tools
