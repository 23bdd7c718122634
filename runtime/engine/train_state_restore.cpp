// load_state: a checkpoint's files put back into the trainer, the RNG and the run's progress,
// each checked against this run before anything changes. Its writer is train_state.cpp.
#include "runtime/engine/train_state.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

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

// The bytes of tensor `name` of `file`, after checking them against `target`'s dtype and shape.
llvm::Expected<std::string_view> BytesFor(const checkpoint::SafetensorsFile& file,
                                          const std::string& file_name, const std::string& name,
                                          const at::Tensor& target) {
  auto info = file.tensors().find(name);
  if (info == file.tensors().end()) return Fail(fmt::format("{}: no tensor `{}`", file_name, name));
  const char* dtype = SafetensorsDtype(target.scalar_type());
  if (dtype == nullptr || info->second.dtype != dtype || info->second.shape != target.sizes().vec()) {
    return Fail(fmt::format("{}: tensor `{}` is {} {}, this model's is {} {}", file_name, name,
                            info->second.dtype, fmt::join(info->second.shape, "x"), dtype ? dtype : "?",
                            fmt::join(target.sizes(), "x")));
  }
  return file.Bytes(name);
}

// The most optimizer steps a checkpoint's counters may hold: 2^53, the largest count PyTorch's
// floating-point `step` keeps exactly, and far enough from int64's end that no run's steps wrap it.
constexpr int64_t kMaxOptimizerStep = int64_t{1} << 53;

// optimizer.json: the type, the hyper-parameters, every parameter by name with its counters;
// no tensors yet. `params` lists names; in a checkpoint `accelrun import-state` wrote from
// PyTorch's state_dict() it lists positions in the model's parameter order instead: those are
// kept as the names `0`, `1`, ... and `*by_position` is set (ImportOptimizer resolves them).
llvm::Expected<OptimizerState> ReadOptimizerLayout(const checkpoint::VerifiedCheckpoint& ckpt,
                                                   bool* by_position = nullptr) {
  std::string optimizer_json = ckpt.path + "/optimizer.json";
  llvm::Expected<json::Object> meta = ReadCheckpointJson(ckpt, "optimizer.json");
  if (!meta) return meta.takeError();
  OptimizerState optimizer;
  optimizer.type = meta->getString("type").getValueOr("").str();
  const json::Array* groups = meta->getArray("param_groups");
  if (groups == nullptr || groups->size() != 1 || groups->front().getAsObject() == nullptr) {
    return Fail(fmt::format("{}: expected one parameter group in `param_groups`", optimizer_json));
  }
  optimizer.hyperparameters = *groups->front().getAsObject();
  const json::Array* names = optimizer.hyperparameters.getArray("params");
  if (names == nullptr) return Fail(fmt::format("{}: the parameter group has no `params`", optimizer_json));
  const json::Object* counters = meta->getObject("state");
  const bool positional = by_position != nullptr && !names->empty() && (*names)[0].getAsInteger();
  if (positional) *by_position = true;
  for (size_t i = 0; i < names->size(); ++i) {
    llvm::Optional<llvm::StringRef> name = (*names)[i].getAsString();
    llvm::Optional<int64_t> position = (*names)[i].getAsInteger();
    if (positional ? position != static_cast<int64_t>(i) : !name) {
      return Fail(fmt::format("{}: `params` must list parameter names, or the positions 0, 1, 2, ... in order",
                              optimizer_json));
    }
    OptimizerState::Parameter parameter{positional ? std::to_string(i) : name->str(), {}, {}};
    if (const json::Object* scalars = counters ? counters->getObject(parameter.name) : nullptr) {
      for (const auto& [key, scalar] : *scalars) {
        llvm::Optional<int64_t> integer = scalar.getAsInteger();
        if (!integer)
          return Fail(
              fmt::format("{}: state `{}.{}` is not an integer", optimizer_json, parameter.name, key.str()));
        // The one counter is Adam's step, which its bias correction raises beta to: a negative
        // one, or one that wraps when the run adds its steps, makes every update NaN.
        if (*integer < 0 || *integer > kMaxOptimizerStep)
          return Fail(fmt::format("{}: state `{}.{}` is {}, outside 0 to {}: the file was edited or damaged",
                                  optimizer_json, parameter.name, key.str(), *integer, kMaxOptimizerStep));
        parameter.counters.emplace_back(key.str(), *integer);
      }
    }
    optimizer.parameters.push_back(std::move(parameter));
  }
  return optimizer;
}

// `state.<parameter>.<key>` split into its parameter and key (parameter names contain dots,
// keys do not); false for another name.
bool SplitStateName(const std::string& name, std::string& parameter, std::string& key) {
  size_t last_dot = name.rfind('.');
  if (name.rfind("state.", 0) != 0 || last_dot == std::string::npos || last_dot <= 6) return false;
  parameter = name.substr(6, last_dot - 6);
  key = name.substr(last_dot + 1);
  return true;
}

// Attaches `tensors` (by parameter name, then key) to `optimizer`'s parameters and puts it into
// the trainer. `file` names the tensors' source in errors. With `by_position` the parameters
// are named by position (ReadOptimizerLayout) and take the model's names in order, as PyTorch's
// Optimizer.load_state_dict pairs them; their shapes are still checked against the parameters.
llvm::Error ImportOptimizer(
    OptimizerState& optimizer,
    std::map<std::string, std::vector<std::pair<std::string, at::Tensor>>> by_parameter,
    const std::string& file, const std::string& optimizer_json, Trainer& trainer, bool by_position = false) {
  optimizer.tensors_owned = true;
  for (OptimizerState::Parameter& parameter : optimizer.parameters) {
    if (auto found = by_parameter.find(parameter.name); found != by_parameter.end()) {
      parameter.tensors = std::move(found->second);
      by_parameter.erase(found);
    }
  }
  if (!by_parameter.empty()) {
    return Fail(fmt::format("{}: state for `{}`, which `optimizer.json` does not list", file,
                            by_parameter.begin()->first));
  }
  if (by_position) {
    std::vector<std::pair<std::string, at::Tensor>> named = trainer.NamedParameters();
    if (named.size() != optimizer.parameters.size()) {
      return Fail(fmt::format("{}: the optimizer's state is for {} parameters, the model has {}", optimizer_json,
                              optimizer.parameters.size(), named.size()));
    }
    for (size_t i = 0; i < named.size(); ++i) optimizer.parameters[i].name = named[i].first;
  }
  try {
    trainer.ImportOptimizerState(optimizer);
  } catch (const std::invalid_argument& error) {
    return Fail(fmt::format("{}: {}", optimizer_json, error.what()));
  }
  return llvm::Error::success();
}

// optimizer.json and optimizer.safetensors into the trainer, checked completely before
// anything changes.
llvm::Error RestoreOptimizer(const checkpoint::VerifiedCheckpoint& ckpt, Trainer& trainer) {
  bool by_position = false;
  llvm::Expected<OptimizerState> optimizer = ReadOptimizerLayout(ckpt, &by_position);
  if (!optimizer) return optimizer.takeError();
  llvm::Expected<checkpoint::SafetensorsFile> tensors = ckpt.Safetensors(kOptimizerStateFile);
  if (!tensors) return tensors.takeError();
  std::map<std::string, std::vector<std::pair<std::string, at::Tensor>>> by_parameter;
  std::string optimizer_file = ckpt.path + "/" + kOptimizerStateFile;
  // The state tensors are built on the verified file's bytes, read into this process's memory
  // by the verification: no tensor is allocated, zeroed and filled by a copy (which cost ~35% of
  // a restore). Each tensor keeps the file's memory alive.
  std::shared_ptr<const checkpoint::FileBytes> file = ckpt.files.at(kOptimizerStateFile);
  struct Slot {
    std::string parameter, key;
    std::vector<int64_t> shape;
    std::string_view bytes;
    at::Tensor tensor;
  };
  std::vector<Slot> slots;
  for (const auto& [name, info] : tensors->tensors()) {
    Slot slot;
    if (!SplitStateName(name, slot.parameter, slot.key)) {
      return Fail(fmt::format("{}: tensor `{}` is not named state.<parameter>.<key>", optimizer_file, name));
    }
    if (info.dtype != "F32")
      return Fail(fmt::format("{}: tensor `{}` is {}, expected F32", optimizer_file, name, info.dtype));
    slot.shape = info.shape;
    slot.bytes = tensors->Bytes(name);
    slots.push_back(std::move(slot));
  }
  for (Slot& slot : slots) {
    progress::StillWorking();
    char* data = nullptr;
    // A foreign writer's unpadded header (ST-014) leaves views unaligned: those are copied.
    if (reinterpret_cast<uintptr_t>(slot.bytes.data()) % alignof(float) == 0) {
      data = file->TakePrivate(slot.bytes.data() - file->view().data(), slot.bytes.size());
    }
    if (data != nullptr) {
      slot.tensor = at::from_blob(
          data, slot.shape, [file](void*) {}, at::kFloat);
    } else {
      slot.tensor = at::empty(slot.shape, at::kFloat);
      std::memcpy(slot.tensor.data_ptr(), slot.bytes.data(), slot.bytes.size());
    }
  }
  for (Slot& slot : slots) by_parameter[slot.parameter].emplace_back(slot.key, std::move(slot.tensor));
  return ImportOptimizer(*optimizer, std::move(by_parameter), optimizer_file, ckpt.path + "/optimizer.json",
                         trainer, by_position);
}

// model.safetensors, copied in place so the optimizer's references to the parameters stay valid.
llvm::Error RestoreParameters(const checkpoint::VerifiedCheckpoint& ckpt, Trainer& trainer) {
  llvm::Expected<checkpoint::SafetensorsFile> model = ckpt.Safetensors("model.safetensors");
  if (!model) return model.takeError();
  std::vector<std::pair<std::string, at::Tensor>> named = ModelState(trainer);
  if (model->tensors().size() != named.size()) {
    return Fail(fmt::format("{}/model.safetensors: {} tensors, this model has {} parameters and buffers",
                            ckpt.path, model->tensors().size(), named.size()));
  }
  // Every tensor is checked before any parameter changes; then the copies run on every core,
  // in pieces, so that one large weight does not keep the other cores idle.
  constexpr size_t kPiece = size_t{8} << 20;
  struct Piece {
    char* target;
    const char* source;
    size_t size;
  };
  std::vector<Piece> pieces;
  // A parameter on a GPU is filled from a host copy once every tensor is checked.
  std::vector<std::pair<at::Tensor, at::Tensor>> on_device;  // the parameter, its host copy
  for (const auto& [name, parameter] : named) {
    if (!parameter.is_contiguous()) return Fail(fmt::format("parameter `{}` is not contiguous", name));
    llvm::Expected<std::string_view> bytes =
        BytesFor(*model, ckpt.path + "/model.safetensors", name, parameter);
    if (!bytes) return bytes.takeError();
    at::Tensor host = parameter;
    if (!parameter.is_cpu()) {
      host = at::empty(parameter.sizes(), parameter.options().device(c10::kCPU));
      on_device.emplace_back(parameter, host);
    }
    char* target = static_cast<char*>(host.data_ptr());
    for (size_t offset = 0; offset < bytes->size(); offset += kPiece) {
      pieces.push_back({target + offset, bytes->data() + offset, std::min(kPiece, bytes->size() - offset)});
    }
  }
  // memcpy: a foreign writer's views need not be aligned (ST-014).
  // Restoring a large model takes longer than the collective timeout: each piece says so.
  checkpoint::ParallelFor(pieces.size(), [&](size_t i) {
    progress::StillWorking();
    std::memcpy(pieces[i].target, pieces[i].source, pieces[i].size);
  });
  at::NoGradGuard no_grad;
  for (auto& [parameter, host] : on_device) {
    progress::StillWorking();
    parameter.copy_(host);
  }
  return llvm::Error::success();
}

// Elements [start, end) of a sharded checkpoint's F32 tensor, as a new 1-D tensor.
llvm::Expected<at::Tensor> ReadFloats(const checkpoint::ShardedStateReader& reader,
                                      checkpoint::ShardedKind kind, const std::string& name, int64_t start,
                                      int64_t end) {
  at::Tensor out = at::empty({end - start}, at::kFloat);
  if (llvm::Error error =
          reader.CopyRange(kind, name, static_cast<uint64_t>(start), static_cast<uint64_t>(end),
                           {static_cast<char*>(out.data_ptr()), out.nbytes()})) {
    return error;
  }
  return out;
}

// Whether the sharded checkpoint has tensor `name` of `kind` with `target`'s dtype and shape.
llvm::Error CheckShardedTensor(const checkpoint::ShardedStateReader& reader, checkpoint::ShardedKind kind,
                               const std::string& name, const at::Tensor& target, const std::string& path) {
  const auto& tensors = reader.tensors(kind);
  const std::string where = fmt::format("{}/{}", path, checkpoint::kShardedIndexName);
  auto found = tensors.find(name);
  if (found == tensors.end())
    return Fail(fmt::format("{}: no {} tensor `{}`", where, checkpoint::KindName(kind), name));
  const char* dtype = SafetensorsDtype(target.scalar_type());
  if (dtype == nullptr || found->second.dtype != dtype || found->second.shape != target.sizes().vec()) {
    return Fail(fmt::format("{}: {} tensor `{}` is {} {}, this model's is {} {}", where,
                            checkpoint::KindName(kind), name, found->second.dtype,
                            fmt::join(found->second.shape, "x"), dtype ? dtype : "?",
                            fmt::join(target.sizes(), "x")));
  }
  return llvm::Error::success();
}

// Copies the whole tensor `name` of the sharded checkpoint into `target` (checked first).
llvm::Error CopyWhole(const checkpoint::ShardedStateReader& reader, const std::string& name,
                      const at::Tensor& target, const std::string& path) {
  if (llvm::Error error = CheckShardedTensor(reader, checkpoint::ShardedKind::kModel, name, target, path))
    return error;
  if (!target.is_contiguous()) return Fail(fmt::format("`{}` is not contiguous", name));
  at::Tensor host = target.is_cpu() ? target : at::empty(target.sizes(), target.options().device(c10::kCPU));
  if (llvm::Error error =
          reader.CopyRange(checkpoint::ShardedKind::kModel, name, 0, static_cast<uint64_t>(target.numel()),
                           {static_cast<char*>(host.data_ptr()), host.nbytes()}))
    return error;
  at::NoGradGuard no_grad;
  if (!target.is_cpu()) target.copy_(host);
  return llvm::Error::success();
}

// The model tensors of a sharded checkpoint must be exactly this model's parameters and buffers.
llvm::Error CheckShardedModelCount(const checkpoint::ShardedStateReader& reader, const Trainer& trainer,
                                   const std::string& path) {
  size_t count = ModelState(trainer).size();
  size_t saved = reader.tensors(checkpoint::ShardedKind::kModel).size();
  if (saved == count) return llvm::Error::success();
  return Fail(fmt::format("{}/{}: {} model tensors, this model has {} parameters and buffers", path,
                          checkpoint::kShardedIndexName, saved, count));
}

// A sharded checkpoint into a trainer that holds whole tensors (a DDP run, or a sharded one
// before its engine takes its shards): every tensor read whole from the ranks' slices.
llvm::Error RestoreShardedWhole(const checkpoint::VerifiedCheckpoint& ckpt,
                                const checkpoint::ShardedStateReader& reader, Trainer& trainer) {
  if (llvm::Error error = CheckShardedModelCount(reader, trainer, ckpt.path)) return error;
  llvm::Expected<OptimizerState> optimizer = ReadOptimizerLayout(ckpt);
  if (!optimizer) return optimizer.takeError();
  const std::string index = ckpt.path + "/" + std::string(checkpoint::kShardedIndexName);
  std::map<std::string, std::vector<std::pair<std::string, at::Tensor>>> by_parameter;
  for (const auto& [name, tensor] : reader.tensors(checkpoint::ShardedKind::kOptimizer)) {
    std::string parameter, key;
    if (!SplitStateName(name, parameter, key))
      return Fail(fmt::format("{}: optimizer tensor `{}` is not named state.<parameter>.<key>", index, name));
    if (tensor.dtype != "F32")
      return Fail(fmt::format("{}: optimizer tensor `{}` is {}, expected F32", index, name, tensor.dtype));
    llvm::Expected<at::Tensor> whole =
        ReadFloats(reader, checkpoint::ShardedKind::kOptimizer, name, 0,
                   static_cast<int64_t>(*checkpoint::ElementCount(tensor.shape)));
    if (!whole) return whole.takeError();
    by_parameter[parameter].emplace_back(key, whole->view(tensor.shape));
  }
  // The optimizer first: it is checked completely before the parameters change.
  if (llvm::Error error = ImportOptimizer(*optimizer, std::move(by_parameter), index,
                                          ckpt.path + "/optimizer.json", trainer)) {
    return error;
  }
  for (const auto& [name, tensor] : ModelState(trainer))
    if (llvm::Error error = CopyWhole(reader, name, tensor, ckpt.path)) return error;
  return llvm::Error::success();
}

// A sharded checkpoint for the sharded engine: everything checked against this model, the
// buffers (whole on every rank) and the optimizer's hyper-parameters restored; the parameters
// and optimizer state are left to ImportShardedResume, each rank reading its own ranges.
llvm::Error PrepareShardedResume(const checkpoint::VerifiedCheckpoint& ckpt,
                                 const checkpoint::ShardedStateReader& reader, Trainer& trainer,
                                 ShardedResume& resume) {
  if (llvm::Error error = CheckShardedModelCount(reader, trainer, ckpt.path)) return error;
  llvm::Expected<OptimizerState> layout = ReadOptimizerLayout(ckpt);
  if (!layout) return layout.takeError();
  const std::string index = ckpt.path + "/" + std::string(checkpoint::kShardedIndexName);
  std::set<std::string> keys;
  for (const auto& [name, tensor] : reader.tensors(checkpoint::ShardedKind::kOptimizer)) {
    std::string parameter, key;
    if (!SplitStateName(name, parameter, key))
      return Fail(fmt::format("{}: optimizer tensor `{}` is not named state.<parameter>.<key>", index, name));
    keys.insert(key);
  }
  std::vector<std::pair<std::string, at::Tensor>> parameters = trainer.NamedParameters();
  for (const auto& [name, tensor] : parameters) {
    if (llvm::Error error =
            CheckShardedTensor(reader, checkpoint::ShardedKind::kModel, name, tensor, ckpt.path))
      return error;
    // The engine keeps every key for every parameter (as its whole-state import does).
    for (const std::string& key : keys) {
      if (llvm::Error error = CheckShardedTensor(reader, checkpoint::ShardedKind::kOptimizer,
                                                 fmt::format("state.{}.{}", name, key), tensor, ckpt.path))
        return error;
    }
  }
  if (reader.tensors(checkpoint::ShardedKind::kOptimizer).size() != keys.size() * parameters.size()) {
    return Fail(fmt::format("{}: optimizer state for a parameter this model does not have", index));
  }
  // The engine keeps one set of counters per unit; every parameter of a run has the same.
  for (const OptimizerState::Parameter& parameter : layout->parameters) {
    if (parameter.counters.empty()) continue;
    if (resume.counters.empty()) resume.counters = parameter.counters;
    if (parameter.counters != resume.counters) {
      return Fail(fmt::format("{}/optimizer.json: the counters of `{}` differ from the other parameters'",
                              ckpt.path, parameter.name));
    }
  }
  resume.state_keys.assign(keys.begin(), keys.end());
  // The hyper-parameters now (the engine takes them from the model); no state.
  for (OptimizerState::Parameter& parameter : layout->parameters) parameter.counters.clear();
  if (llvm::Error error = ImportOptimizer(*layout, {}, index, ckpt.path + "/optimizer.json", trainer))
    return error;
  for (const auto& [name, tensor] : trainer.NamedBuffers())
    if (llvm::Error error = CopyWhole(reader, name, tensor, ckpt.path)) return error;
  return llvm::Error::success();
}

// random_states_<rank>.safetensors: this rank's generator.
llvm::Error RestoreRng(const checkpoint::VerifiedCheckpoint& ckpt, int rank) {
  std::string rng_name = fmt::format("random_states_{}.safetensors", rank);
  llvm::Expected<checkpoint::SafetensorsFile> rng = ckpt.Safetensors(rng_name);
  if (!rng) return rng.takeError();
  auto info = rng->tensors().find(kRngTensor);
  if (info == rng->tensors().end() || info->second.dtype != "U8" || info->second.shape.size() != 1) {
    return Fail(fmt::format("{}/{}: expected a U8 vector `{}`", ckpt.path, rng_name, kRngTensor));
  }
  at::Tensor rng_state = at::empty(info->second.shape, at::kByte);
  std::string_view bytes = rng->Bytes(kRngTensor);
  std::memcpy(rng_state.data_ptr(), bytes.data(), bytes.size());
  try {
    RestoreRngState(rng_state);
  } catch (const std::exception& error) {
    std::string text = error.what();
    return Fail(fmt::format("{}/{}: {}", ckpt.path, rng_name, text.substr(0, text.find('\n'))));
  }
  return llvm::Error::success();
}

}  // namespace

llvm::Expected<Progress> RestoreTrainingState(const checkpoint::VerifiedCheckpoint& ckpt, Trainer& trainer,
                                              int rank, int world_size, int64_t data_seed,
                                              std::optional<ShardedResume>* sharded) {
  (void)world_size;  // any: the worker converts what depends on it (TrainingRun::Restore)
  llvm::Expected<Progress> progress = ReadProgress(ckpt, data_seed);
  if (!progress) return progress.takeError();
  if (checkpoint::IsShardedCheckpoint(ckpt)) {
    llvm::Expected<checkpoint::ShardedStateReader> reader = checkpoint::ShardedStateReader::Open(ckpt);
    if (!reader) return reader.takeError();
    if (sharded != nullptr) {
      ShardedResume resume;
      if (llvm::Error error = PrepareShardedResume(ckpt, *reader, trainer, resume)) return error;
      resume.reader = std::make_shared<checkpoint::ShardedStateReader>(std::move(*reader));
      *sharded = std::move(resume);
    } else if (llvm::Error error = RestoreShardedWhole(ckpt, *reader, trainer)) {
      return error;
    }
  } else {
    // The optimizer first: it is checked completely before the parameters change.
    if (llvm::Error error = RestoreOptimizer(ckpt, trainer)) return error;
    if (llvm::Error error = RestoreParameters(ckpt, trainer)) return error;
  }
  // On another world size, ranks past the saved ones reuse the saved ranks' generators.
  if (llvm::Error error = RestoreRng(ckpt, rank % static_cast<int>(progress->saved_world_size))) return error;
  return progress;
}

}  // namespace accel::rt::train
