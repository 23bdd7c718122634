// An Accel checkpoint written as the folder Accelerate's `load_state` reads.
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "llvm/Support/JSON.h"
#include "runtime/checkpoint/atomic_file.h"
#include "runtime/checkpoint/optimizer_format.h"
#include "runtime/checkpoint/python_rng.h"
#include "runtime/checkpoint/safetensors.h"
#include "runtime/checkpoint/sharded_index.h"
#include "runtime/checkpoint/sharded_reader.h"
#include "runtime/checkpoint/torch_zip.h"
#include "runtime/engine/checkpoint_limits.h"
#include "runtime/tools/accelerate_state.h"
#include "runtime/tools/accelerate_state_files.h"

namespace accel::tools {
namespace {

namespace ckpt = rt::checkpoint;
namespace pk = rt::checkpoint::pickle;
namespace json = llvm::json;

// A tensor of the checkpoint, wherever its bytes lie.
struct SavedTensor {
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<std::string_view> parts;
};

// The model and optimizer tensors of a full checkpoint (its safetensors files) or of a sharded
// one (the ranks' slices, assembled by views).
class SavedTensors {
 public:
  static llvm::Expected<SavedTensors> Open(const ckpt::VerifiedCheckpoint& checkpoint) {
    SavedTensors tensors;
    if (ckpt::IsShardedCheckpoint(checkpoint)) {
      llvm::Expected<ckpt::ShardedStateReader> reader = ckpt::ShardedStateReader::Open(checkpoint);
      if (!reader) return reader.takeError();
      for (auto [kind, into] : {std::pair{ckpt::ShardedKind::kModel, &tensors.model_},
                                std::pair{ckpt::ShardedKind::kOptimizer, &tensors.optimizer_}}) {
        for (const auto& [name, tensor] : reader->tensors(kind)) {
          llvm::Expected<std::vector<std::string_view>> views =
              reader->Views(kind, name, 0, ckpt::ElementCount(tensor.shape).value_or(0));
          if (!views) return views.takeError();
          (*into)[name] = {tensor.dtype, tensor.shape, std::move(*views)};
        }
      }
      tensors.sharded_ = true;
      return tensors;
    }
    for (auto [file, into] : {std::pair{"model.safetensors", &tensors.model_},
                              std::pair{"optimizer.safetensors", &tensors.optimizer_}}) {
      llvm::Expected<ckpt::SafetensorsFile> read = checkpoint.Safetensors(file);
      if (!read) return read.takeError();
      for (const auto& [name, info] : read->tensors()) (*into)[name] = {info.dtype, info.shape, {read->Bytes(name)}};
    }
    return tensors;
  }

  const std::map<std::string, SavedTensor>& model() const { return model_; }
  const std::map<std::string, SavedTensor>& optimizer() const { return optimizer_; }
  bool sharded() const { return sharded_; }

 private:
  std::map<std::string, SavedTensor> model_, optimizer_;
  bool sharded_ = false;
};

std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

// The tensors of one torch.save file, each its own storage as torch.save gives them.
class StorageList {
 public:
  pk::Ref Add(const std::string& dtype, const std::vector<int64_t>& shape, std::vector<std::string_view> parts) {
    std::string key = std::to_string(storages_.size());
    int64_t elements = 1;
    for (int64_t extent : shape) elements *= extent;
    storages_.push_back({key, std::move(parts)});
    return pk::Tensor({key, dtype, elements, 0, shape, RowMajorStrides(shape)});
  }
  // A 0-dim float32 tensor of `value`, its bytes kept here.
  pk::Ref Scalar(float value) {
    std::string bytes(sizeof value, '\0');
    std::memcpy(bytes.data(), &value, sizeof value);
    owned_.push_back(std::move(bytes));
    return Add("F32", {}, {owned_.back()});
  }
  const std::vector<ckpt::TorchStorage>& storages() const { return storages_; }

 private:
  std::vector<ckpt::TorchStorage> storages_;
  std::deque<std::string> owned_;
};

llvm::Error WriteTorchFile(const std::string& path, const std::string& archive, const pk::Object& root,
                           const StorageList& storages) {
  llvm::Expected<std::string> pickled = pk::Write(root);
  if (!pickled) return Fail(fmt::format("{}: {}", path, llvm::toString(pickled.takeError())));
  llvm::Expected<ckpt::EncodedTorchFile> encoded =
      ckpt::EncodeTorchFile(archive, std::move(*pickled), storages.storages());
  if (!encoded) return Fail(fmt::format("{}: {}", path, llvm::toString(encoded.takeError())));
  return ckpt::WriteFileAtomically(path, encoded->parts());
}

pk::Ref Str(std::string text) { return pk::String(std::move(text)); }

// optimizer.json's hyper-parameters as PyTorch 2.x's param_groups[0] holds them, with the
// entries Accel's optimizers leave at torch's defaults (maximize, foreach, ...).
template <typename Format>
llvm::Expected<std::vector<std::pair<pk::Ref, pk::Ref>>> GroupEntries(const json::Object& group) {
  std::vector<std::pair<pk::Ref, pk::Ref>> entries;
  for (const ckpt::Hyperparameter& h : Format::kHyperparameters) {
    const std::string key(h.name);
    switch (h.kind) {
      case ckpt::Hyperparameter::Kind::kNumber: {
        llvm::Optional<double> value = group.getNumber(key);
        if (!value) return Fail(fmt::format("optimizer.json: the parameter group has no number `{}`", key));
        entries.emplace_back(Str(key), pk::Float(*value));
        break;
      }
      case ckpt::Hyperparameter::Kind::kFlag:
        entries.emplace_back(Str(key), pk::Bool(group.getBoolean(key).getValueOr(false)));
        break;
      case ckpt::Hyperparameter::Kind::kNumberPair: {
        const json::Array* pair = group.getArray(key);
        if (pair == nullptr || pair->size() != 2 || !(*pair)[0].getAsNumber() || !(*pair)[1].getAsNumber())
          return Fail(fmt::format("optimizer.json: the parameter group has no `{}` pair", key));
        entries.emplace_back(Str(key), pk::Tuple({pk::Float(*(*pair)[0].getAsNumber()),
                                                  pk::Float(*(*pair)[1].getAsNumber())}));
        break;
      }
    }
  }
  for (const ckpt::TorchGroupEntry& entry : Format::kTorchGroupEntries) {
    entries.emplace_back(Str(std::string(entry.name)),
                         entry.value == ckpt::TorchGroupEntry::Value::kFalse ? pk::Bool(false) : pk::None());
  }
  if (Format::kDecoupledWeightDecay)
    entries.emplace_back(Str("decoupled_weight_decay"), pk::Bool(*Format::kDecoupledWeightDecay));
  return entries;
}

llvm::Expected<pk::Ref> ParamGroup(const plan::Optimizer& optimizer, const json::Object& group, double initial_lr,
                                   size_t parameters) {
  llvm::Expected<std::vector<std::pair<pk::Ref, pk::Ref>>> read = std::visit(
      [&](const auto& o) { return GroupEntries<ckpt::OptimizerFormat<std::decay_t<decltype(o)>>>(group); },
      optimizer);
  if (!read) return read.takeError();
  std::vector<std::pair<pk::Ref, pk::Ref>> entries = std::move(*read);
  entries.emplace_back(Str("initial_lr"), pk::Float(initial_lr));
  std::vector<pk::Ref> positions;
  for (size_t i = 0; i < parameters; ++i) positions.push_back(pk::Int(static_cast<int64_t>(i)));
  entries.emplace_back(Str("params"), pk::List(std::move(positions)));
  return pk::Dict(std::move(entries));
}

}  // namespace

llvm::Expected<std::vector<std::string>> ExportAccelerateState(const ckpt::VerifiedCheckpoint& checkpoint,
                                                               const std::string& folder,
                                                               const ExportOptions& options) {
  if (checkpoint.files.count("scaler.json") != 0) {
    return Fail(fmt::format("{}: the checkpoint holds an fp16 loss scale (scaler.json), which export-state does "
                            "not write yet; export a checkpoint of a run without fp16",
                            checkpoint.path));
  }
  llvm::Expected<json::Object> optimizer = ReadStateJson(checkpoint, "optimizer.json");
  if (!optimizer) return optimizer.takeError();
  llvm::Expected<json::Object> scheduler = ReadStateJson(checkpoint, "scheduler.json");
  if (!scheduler) return scheduler.takeError();
  llvm::Expected<json::Object> data = ReadStateJson(checkpoint, "dataloader_0.json");
  if (!data) return data.takeError();
  llvm::Expected<json::Object> trainer = ReadStateJson(checkpoint, "trainer_state.json");
  if (!trainer) return trainer.takeError();
  llvm::Expected<SavedTensors> tensors = SavedTensors::Open(checkpoint);
  if (!tensors) return tensors.takeError();

  const std::string type = optimizer->getString("type").getValueOr("").str();
  const json::Array* groups = optimizer->getArray("param_groups");
  std::optional<plan::Optimizer> plan_optimizer = ckpt::OptimizerNamed(type);
  if (!plan_optimizer) {
    return Fail(fmt::format("{}/optimizer.json: unknown optimizer type `{}`; checkpoints store {}", checkpoint.path,
                            type, ckpt::OptimizerNames()));
  }
  if (groups == nullptr || groups->size() != 1 || groups->front().getAsObject() == nullptr)
    return Fail(fmt::format("{}/optimizer.json: expected one parameter group", checkpoint.path));
  const json::Object& group = *groups->front().getAsObject();
  const json::Array* params = group.getArray("params");
  if (params == nullptr) return Fail(fmt::format("{}/optimizer.json: the group has no `params`", checkpoint.path));
  const json::Array* base_lrs = scheduler->getArray("base_lrs");
  const json::Array* last_lrs = scheduler->getArray("last_lr");
  llvm::Optional<int64_t> scheduler_steps = scheduler->getInteger("last_epoch");
  llvm::Optional<int64_t> position = data->getInteger("position");
  llvm::Optional<int64_t> world = trainer->getInteger("world_size");
  if (!base_lrs || base_lrs->size() != 1 || !last_lrs || last_lrs->size() != 1 || !scheduler_steps)
    return Fail(fmt::format("{}/scheduler.json: expected `base_lrs`, `last_lr` and `last_epoch`", checkpoint.path));
  if (!position || !world || *world < 1 || *world > rt::train::kMaxCheckpointWorldSize)
    return Fail(fmt::format("{}: dataloader_0.json or trainer_state.json lacks its position or world size",
                            checkpoint.path));
  const double base_lr = (*base_lrs)[0].getAsNumber().getValueOr(0);

  // optimizer.bin: state by position in the parameter order, then the one group.
  StorageList optimizer_storages;
  const json::Object* counters = optimizer->getObject("state");
  std::vector<std::pair<pk::Ref, pk::Ref>> state;
  for (size_t i = 0; i < params->size(); ++i) {
    std::string name = (*params)[i].getAsString() ? (*params)[i].getAsString()->str()
                                                 : std::to_string((*params)[i].getAsInteger().getValueOr(-1));
    std::vector<std::pair<pk::Ref, pk::Ref>> entries;
    if (const json::Object* scalars = counters ? counters->getObject(name) : nullptr) {
      for (const auto& [key, value] : *scalars) {
        // PyTorch 2.x keeps Adam's step as a float32 tensor.
        llvm::Optional<int64_t> count = value.getAsInteger();
        if (!count) return Fail(fmt::format("{}/optimizer.json: state `{}.{}` is not an integer", checkpoint.path,
                                            name, key.str()));
        entries.emplace_back(Str(key.str()), optimizer_storages.Scalar(static_cast<float>(*count)));
      }
    }
    const std::string prefix = "state." + name + ".";
    for (const auto& [tensor_name, tensor] : tensors->optimizer()) {
      if (tensor_name.compare(0, prefix.size(), prefix) != 0 || tensor_name.find('.', prefix.size()) != std::string::npos)
        continue;
      entries.emplace_back(Str(tensor_name.substr(prefix.size())),
                           optimizer_storages.Add(tensor.dtype, tensor.shape, tensor.parts));
    }
    if (!entries.empty()) state.emplace_back(pk::Int(static_cast<int64_t>(i)), pk::Dict(std::move(entries)));
  }
  llvm::Expected<pk::Ref> param_group = ParamGroup(*plan_optimizer, group, base_lr, params->size());
  if (!param_group) return Fail(fmt::format("{}/{}", checkpoint.path, llvm::toString(param_group.takeError())));
  pk::Ref optimizer_root = pk::Dict({{Str("state"), pk::Dict(std::move(state))},
                                     {Str("param_groups"), pk::List({std::move(*param_group)})}});

  // scheduler.bin: what LambdaLR.state_dict() holds (its lambdas are code, saved as None).
  pk::Ref scheduler_root = pk::Dict({
      {Str("base_lrs"), pk::List({pk::Float(base_lr)})},
      {Str("last_epoch"), pk::Int(*scheduler_steps)},
      {Str("_step_count"), pk::Int(*scheduler_steps + 1)},
      {Str("_is_initial"), pk::Bool(false)},
      {Str("_get_lr_called_within_step"), pk::Bool(false)},
      {Str("_last_lr"), pk::List({pk::Float((*last_lrs)[0].getAsNumber().getValueOr(0))})},
      {Str("lr_lambdas"), pk::List({pk::None()})},
  });

  const uint64_t seed = options.seed.value_or(static_cast<uint64_t>(data->getInteger("seed").getValueOr(0)));
  std::error_code ec;
  if (std::filesystem::exists(folder, ec))
    return Fail(fmt::format("`{}` exists; export-state writes a new folder", folder));
  if (!std::filesystem::create_directories(folder, ec) || ec)
    return Fail(fmt::format("cannot create `{}`: {}", folder, ec.message()));
  std::vector<std::string> written;
  auto path = [&](const std::string& name) {
    written.push_back(name);
    return (std::filesystem::path(folder) / name).string();
  };

  // model.safetensors: the checkpoint's own file, or a sharded checkpoint's slices made whole.
  if (!tensors->sharded()) {
    if (llvm::Error error = ckpt::WriteFileAtomically(path("model.safetensors"),
                                                      {checkpoint.files.at("model.safetensors")->view()}))
      return error;
  } else {
    std::vector<ckpt::ScatteredTensorRef> whole;
    for (const auto& [name, tensor] : tensors->model()) whole.push_back({name, tensor.dtype, tensor.shape, tensor.parts});
    llvm::Expected<ckpt::EncodedSafetensors> encoded = ckpt::EncodeScatteredSafetensors(whole, {{"format", "pt"}});
    if (!encoded) return encoded.takeError();
    if (llvm::Error error = ckpt::WriteFileAtomically(path("model.safetensors"), encoded->Parts())) return error;
  }
  if (llvm::Error error = WriteTorchFile(path("optimizer.bin"), "optimizer", *optimizer_root, optimizer_storages))
    return error;
  if (llvm::Error error = WriteTorchFile(path("scheduler.bin"), "scheduler", *scheduler_root, StorageList()))
    return error;

  // random_states_<rank>.pkl: torch's CPU generator as saved; Python's and NumPy's as set_seed
  // leaves them; `step`, Accelerate's count of micro-batches in the epoch (gradient
  // accumulation's phase), is the data position.
  const ckpt::MersenneState python = ckpt::PythonSeededState(seed);
  const ckpt::MersenneState numpy = ckpt::NumpySeededState(static_cast<uint32_t>(seed));
  std::vector<pk::Ref> python_words;
  for (uint32_t word : python) python_words.push_back(pk::Int(word));
  python_words.push_back(pk::Int(ckpt::kMersenneWords));  // the next index: a fresh state
  std::string numpy_bytes(sizeof numpy, '\0');
  std::memcpy(numpy_bytes.data(), numpy.data(), sizeof numpy);  // little-endian hosts only (as is Accel)
  for (int64_t rank = 0; rank < *world; ++rank) {
    const std::string source = fmt::format("random_states_{}.safetensors", rank);
    llvm::Expected<ckpt::SafetensorsFile> rng = checkpoint.Safetensors(source);
    if (!rng) return rng.takeError();
    auto found = rng->tensors().find("torch_manual_seed");
    if (found == rng->tensors().end() || found->second.dtype != "U8")
      return Fail(fmt::format("{}/{}: no U8 tensor `torch_manual_seed`", checkpoint.path, source));
    StorageList storages;
    pk::Ref torch_state = storages.Add("U8", found->second.shape, {rng->Bytes("torch_manual_seed")});
    pk::Ref root = pk::Dict({
        {Str("step"), pk::Int(*position)},
        {Str("random_state"), pk::Tuple({pk::Int(3), pk::Tuple(python_words), pk::None()})},
        {Str("numpy_random_seed"),
         pk::Tuple({Str("MT19937"), pk::Array({"u4", {ckpt::kMersenneWords}, numpy_bytes}),
                    pk::Int(ckpt::kMersenneWords), pk::Int(0), pk::Float(0.0)})},
        {Str("torch_manual_seed"), std::move(torch_state)},
    });
    const std::string name = fmt::format("random_states_{}.pkl", rank);
    if (llvm::Error error = WriteTorchFile(path(name), fmt::format("random_states_{}", rank), *root, storages))
      return error;
  }
  return written;
}

}  // namespace accel::tools
