// A TorchScript file as a Trainer's model, and the check that one takes a dataset's rows.
#include "runtime/model/torch_model.h"

#include <caffe2/serialize/file_adapter.h>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>
#include <stdexcept>

#include "compiler/source/named_file.h"
#include "runtime/model/error_text.h"
#include "runtime/model/named_inputs.h"
#include "runtime/model/weight_storage.h"
#include "runtime/support/progress.h"

namespace accel::rt::train {
namespace {

// The model file read through LibTorch's own file adapter, a piece at a time, each piece saying
// that the rank is at work: a TorchScript file of many GiB loads for longer than the collective
// timeout, and LibTorch reads each tensor in one call.
class ReadSayingProgress final : public caffe2::serialize::ReadAdapterInterface {
 public:
  explicit ReadSayingProgress(const std::string& path) : file_(path) {}
  size_t size() const override { return file_.size(); }
  size_t read(uint64_t pos, void* buf, size_t n, const char* what = "") const override {
    constexpr size_t kPiece = size_t{64} << 20;
    size_t done = 0;
    while (done < n) {
      progress::StillWorking();
      const size_t want = std::min(kPiece, n - done);
      const size_t got = file_.read(pos + done, static_cast<char*>(buf) + done, want, what);
      done += got;
      if (got < want) break;  // the end of the file: LibTorch reports the short read
    }
    return done;
  }

 private:
  caffe2::serialize::FileAdapter file_;
};

torch::jit::Module LoadModule(const std::string& path, std::optional<c10::Device> device) {
  return torch::jit::load(std::make_shared<ReadSayingProgress>(path), device);
}

// A module saved with `torch.jit.save(torch.jit.script(model))`: its parameter names are the
// Python model's state_dict keys.
class ScriptedModel final : public Model {
 public:
  ScriptedModel(const plan::TorchScript& spec, bool shapes_only) {
    const std::string& path = spec.path;
    // The save hint is for a file that is there but is not a TorchScript archive.
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      throw std::invalid_argument(
          "cannot load the TorchScript model " + path +
          ": the file does not exist (a relative path in a plan is relative to the plan file's directory, in a "
          "spec to the spec's)");
    }
    if (std::string why = source::WhyNotReadable(path); !why.empty())
      throw std::invalid_argument("cannot load the TorchScript model " + path + ": " + why);
    try {
      // On the meta device the file's tensors are read one at a time and dropped.
      module_ = LoadModule(path, c10::Device(shapes_only ? c10::kMeta : c10::kCPU));
      if (shapes_only && !KeepShapesOnly()) module_ = LoadModule(path, std::nullopt);
    } catch (const c10::Error& error) {
      std::string text = error.what_without_backtrace();
      throw std::invalid_argument("cannot load the TorchScript model " + path + ": " +
                                  text.substr(0, text.find('\n')) +
                                  "; save it with torch.jit.save(torch.jit.script(model), path)");
    }
    module_.train();
    if (Parameters().empty()) {
      throw std::invalid_argument("the TorchScript model " + path + " has no trainable parameters");
    }
    binder_.emplace(module_, spec.inputs);
  }
  void CheckColumns(const data::Columns& columns) const override { binder_->Check(columns); }
  // One block: LibTorch has no hooks on a TorchScript submodule's forward. The trainer
  // gates the call (Forward, or the loss of ForwardColumns).
  torch::jit::IValue ForwardColumns(const data::Columns& columns) override {
    return binder_->Call(module_, columns);
  }
  std::vector<std::vector<std::string>> BlockPrefixes() const override { return {{""}}; }
  ModuleNode Modules(const std::map<std::string, size_t>& index) const override {
    return ScriptNode(module_, "", index);
  }
  std::string Signature() const override { return binder_->signature(); }
  torch::Tensor Forward(const torch::Tensor& features) override { return RunBlock(0, features); }
  // The whole forward.
  torch::Tensor ComputeBlock(size_t /*block*/, const torch::Tensor& input) override {
    torch::jit::IValue output = module_.forward({input});
    if (!output.isTensor()) {
      throw std::invalid_argument("the TorchScript model's forward returned " + output.tagKind() +
                                  ", not one tensor of predictions");
    }
    return output.toTensor();
  }
  // ForwardColumns's gate, around the call and on the loss it returned.
  void EnterColumns() override { Enter(0); }
  torch::Tensor LeaveColumns(const torch::Tensor& loss) override { return Leave(0, loss); }
  void SetTraining(bool training) override { module_.train(training); }
  void MoveTo(c10::Device device) override { module_.to(device); }
  std::vector<std::pair<std::string, torch::Tensor>> Parameters() const override {
    std::vector<std::pair<std::string, torch::Tensor>> named;
    for (const auto& item : module_.named_parameters(/*recurse=*/true)) {
      if (item.value.requires_grad()) named.emplace_back(item.name, item.value);
    }
    return named;
  }
  std::vector<std::pair<std::string, torch::Tensor>> Buffers() const override {
    std::vector<std::pair<std::string, torch::Tensor>> named;
    for (const auto& item : module_.named_buffers(/*recurse=*/true))
      named.emplace_back(item.name, item.value);
    // Frozen parameters are state the optimizer never touches: saved and broadcast with the
    // buffers, so model.safetensors holds the whole state_dict.
    for (const auto& item : module_.named_parameters(/*recurse=*/true)) {
      if (!item.value.requires_grad()) named.emplace_back(item.name, item.value);
    }
    return named;
  }

 private:
  // After a load onto the meta device: every parameter and buffer becomes a CPU tensor of its
  // shape without bytes. False, changing nothing, when a tensor attribute is neither (it
  // could not be filled from rank 0), or when two of them share their storage (tied weights,
  // which separate tensors would untie).
  bool KeepShapesOnly() {
    std::map<std::string, bool> state;  // name -> is a buffer
    for (const auto& item : module_.named_parameters(/*recurse=*/true)) state[item.name] = false;
    for (const auto& item : module_.named_buffers(/*recurse=*/true)) state[item.name] = true;
    std::set<const c10::StorageImpl*> storages;
    for (const auto& item : module_.named_attributes(/*recurse=*/true)) {
      if (!item.value.isTensor()) continue;
      if (state.count(item.name) == 0) return false;
      if (!storages.insert(item.value.toTensor().storage().unsafeGetStorageImpl()).second) return false;
    }
    std::map<std::string, torch::jit::Module> owners;
    for (const auto& item : module_.named_modules()) owners.emplace(item.name, item.value);
    for (const auto& [name, is_buffer] : state) {
      const size_t dot = name.rfind('.');
      torch::jit::Module& owner = owners.at(dot == std::string::npos ? "" : name.substr(0, dot));
      const std::string leaf = dot == std::string::npos ? name : name.substr(dot + 1);
      const torch::Tensor meta = owner.attr(leaf).toTensor();
      torch::Tensor shaped = ShapeOnly(meta.sizes(), meta.scalar_type());
      if (is_buffer) {
        owner.register_buffer(leaf, shaped);
      } else {
        shaped.set_requires_grad(meta.requires_grad());
        owner.register_parameter(leaf, shaped, /*is_buffer=*/false);
      }
    }
    return true;
  }

  static ModuleNode ScriptNode(const torch::jit::Module& module, const std::string& path,
                               const std::map<std::string, size_t>& index) {
    ModuleNode node{path, module.type()->name() ? module.type()->name()->qualifiedName() : "", {}, {}};
    for (const auto& item : module.named_parameters(/*recurse=*/false)) {
      if (auto found = index.find(JoinPath(path, item.name)); found != index.end())
        node.parameters.push_back(found->second);
    }
    for (const auto& child : module.named_children())
      node.children.push_back(ScriptNode(child.value, JoinPath(path, child.name), index));
    return node;
  }

  mutable torch::jit::Module module_;
  std::optional<InputBinder> binder_;
};

}  // namespace

std::unique_ptr<Model> MakeScriptedModel(const plan::TorchScript& spec, bool shapes_only) {
  return std::make_unique<ScriptedModel>(spec, shapes_only);
}

std::string CheckScriptedModelTakes(const plan::TorchScript& model, int64_t features) {
  torch::jit::Module module;
  try {
    module = LoadModule(model.path, c10::Device(c10::kMeta));
  } catch (const std::exception&) {
    return "";  // the trainer loads it again and says why it cannot
  }
  module.eval();
  try {
    torch::NoGradGuard no_grad;
    module.forward({at::empty({2, features}, at::TensorOptions().device(c10::kMeta).dtype(at::kFloat))});
  } catch (const std::exception& error) {
    ErrorText text = SplitErrorText(error.what());
    // An operation without a meta kernel says nothing about the data.
    bool meta = text.cause.find("meta") != std::string::npos || text.cause.find("Meta") != std::string::npos;
    if (meta) return "";
    return fmt::format("the TorchScript model {} does not take this data's rows of {} features: {}{}",
                       model.path, features, text.cause, text.details);
  }
  return "";
}

}  // namespace accel::rt::train
