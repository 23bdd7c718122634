#include "runtime/memory/live_module.h"

#include <ATen/ATen.h>
#include <c10/core/TensorImpl.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"
#include "runtime/checkpoint/atomic_file.h"
#include "runtime/checkpoint/file_bytes.h"
#include "runtime/checkpoint/safetensors.h"
#include "runtime/checkpoint/weights.h"

namespace accel::rt::memory {
namespace {

namespace fs = std::filesystem;

llvm::Error Fail(const std::string& message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", message.c_str());
}

// LibTorch reports with exceptions whose text ends in a C++ backtrace; the first line is the
// message.
std::string FirstLine(const char* what) {
  std::string text = what;
  size_t end = text.find('\n');
  return end == std::string::npos ? text : text.substr(0, end);
}

// The one boundary where LibTorch's exceptions become errors (STYLE: caught at one place each).
template <typename F>
llvm::Error CatchTorch(const std::string& context, F&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    return Fail(fmt::format("{}: {}", context, FirstLine(e.what())));
  }
}

struct DtypeRow {
  const char* safetensors;
  c10::ScalarType torch;
  const char* numpy;
};

// Safetensors, LibTorch 1.13 and NumPy names of the dtypes all three know.
constexpr DtypeRow kDtypes[] = {
    {"F64", c10::ScalarType::Double, "float64"},
    {"F32", c10::ScalarType::Float, "float32"},
    {"F16", c10::ScalarType::Half, "float16"},
    {"BF16", c10::ScalarType::BFloat16, "bfloat16"},
    {"I64", c10::ScalarType::Long, "int64"},
    {"I32", c10::ScalarType::Int, "int32"},
    {"I16", c10::ScalarType::Short, "int16"},
    {"I8", c10::ScalarType::Char, "int8"},
    {"U8", c10::ScalarType::Byte, "uint8"},
    {"BOOL", c10::ScalarType::Bool, "bool"},
    {"C64", c10::ScalarType::ComplexFloat, "complex64"},
};

// NumPy has these though LibTorch 1.13 does not: offloading raw bytes of them still works.
constexpr std::pair<const char*, const char*> kNumpyOnly[] = {
    {"U16", "uint16"}, {"U32", "uint32"}, {"U64", "uint64"}};

llvm::Expected<std::string> NumpyDtype(std::string_view safetensors_dtype) {
  for (const DtypeRow& row : kDtypes) {
    if (safetensors_dtype == row.safetensors) return std::string(row.numpy);
  }
  for (const auto& [st, numpy] : kNumpyOnly) {
    if (safetensors_dtype == st) return std::string(numpy);
  }
  return Fail(fmt::format("dtype {} cannot be offloaded: NumPy has no such dtype", safetensors_dtype));
}

llvm::Expected<c10::ScalarType> TorchDtypeOfNumpy(std::string_view numpy) {
  for (const DtypeRow& row : kDtypes) {
    if (numpy == row.numpy) return row.torch;
  }
  return Fail(fmt::format("offloaded dtype `{}` has no LibTorch counterpart", numpy));
}

bool IsIntegral(c10::ScalarType dtype) { return c10::isIntegralType(dtype, /*includeBool=*/true); }

// The tensor `name` registered on `module` (walking child modules), as a handle to the same
// TensorImpl the module holds; `is_buffer` tells which registry it is in.
llvm::Expected<at::Tensor> FindTensor(const torch::nn::Module& module, std::string_view name,
                                      bool* is_buffer) {
  const torch::nn::Module* current = &module;
  std::string walked;
  size_t start = 0;
  while (true) {
    size_t dot = name.find('.', start);
    std::string segment(
        name.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (dot == std::string_view::npos) {
      // named_parameters() returns its dict by value: keep it alive while `find`'s pointer is used.
      torch::OrderedDict<std::string, at::Tensor> parameters = current->named_parameters(false);
      if (const at::Tensor* t = parameters.find(segment)) {
        *is_buffer = false;
        return *t;
      }
      torch::OrderedDict<std::string, at::Tensor> buffers = current->named_buffers(false);
      if (const at::Tensor* t = buffers.find(segment)) {
        *is_buffer = true;
        return *t;
      }
      return Fail(fmt::format("module `{}` has no parameter or buffer named `{}`", walked, segment));
    }
    torch::OrderedDict<std::string, std::shared_ptr<torch::nn::Module>> children = current->named_children();
    const std::shared_ptr<torch::nn::Module>* child = children.find(segment);
    if (child == nullptr) {
      return Fail(fmt::format("module `{}` has no submodule `{}` (looking for `{}`)", walked, segment, name));
    }
    current = child->get();  // owned by its parent's registry, not by `children`
    walked = walked.empty() ? segment : walked + "." + segment;
    start = dot + 1;
  }
}

// Makes `target`'s TensorImpl take `source`'s storage, shape, strides, dtype and device. Every
// handle of that TensorImpl (the registry entry, a module's member, a tied name) sees it; its
// autograd state (requires_grad) is kept. This is how C++ modules change a tensor's device
// themselves (`Module::to` uses set_data), without set_data's refusal of the meta device.
void AssignInPlace(const at::Tensor& target, const at::Tensor& source) {
  if (target.unsafeGetTensorImpl() == source.unsafeGetTensorImpl()) return;
  at::Tensor plain = source.detach();
  target.unsafeGetTensorImpl()->shallow_copy_from(plain.getIntrusivePtr());
}

bool ValidOffloadName(const std::string& name) {
  if (name.empty() || name.front() == '.' || name.back() == '.') return false;
  if (name.find('/') != std::string::npos || name.find('\\') != std::string::npos) return false;
  if (name.find('\0') != std::string::npos || name.find("..") != std::string::npos) return false;
  return true;
}

std::string DatPath(const std::string& folder, const std::string& name) {
  return (fs::path(folder) / (name + ".dat")).string();
}

void Record(OffloadIndex& index, OffloadEntry entry) {
  for (OffloadEntry& existing : index) {
    if (existing.name == entry.name) {
      existing = std::move(entry);
      return;
    }
  }
  index.push_back(std::move(entry));
}

// The device the map gives `name`: its longest dotted prefix in the map, "" covering all.
const std::string* DeviceOf(const DeviceMapEntries& map, const std::string& name) {
  std::string prefix = name;
  while (true) {
    for (const auto& [key, device] : map) {
      if (key == prefix) return &device;
    }
    if (prefix.empty()) return nullptr;
    size_t dot = prefix.rfind('.');
    prefix = dot == std::string::npos ? "" : prefix.substr(0, dot);
  }
}

// A checkpoint tensor copied out of the mapped file into a fresh cpu tensor (the file's bytes
// may be unaligned, and the model must not keep the mapping alive).
llvm::Expected<at::Tensor> TensorFromBytes(const checkpoint::TensorInfo& info, std::string_view bytes,
                                           const std::string& name) {
  llvm::Expected<c10::ScalarType> dtype = TorchDtype(info.dtype);
  if (!dtype) return Fail(fmt::format("checkpoint tensor `{}`: {}", name, llvm::toString(dtype.takeError())));
  at::Tensor tensor = at::empty(info.shape, at::TensorOptions().dtype(*dtype));
  if (static_cast<size_t>(tensor.nbytes()) != bytes.size()) {
    return Fail(fmt::format("checkpoint tensor `{}` has {} bytes for {} elements", name, bytes.size(),
                            tensor.numel()));
  }
  if (!bytes.empty()) std::memcpy(tensor.data_ptr(), bytes.data(), bytes.size());
  return tensor;
}

}  // namespace

llvm::Expected<c10::Device> ParseTorchDevice(std::string_view device) {
  if (IsGpu(device)) {
    // c10::DeviceIndex is 8 bits.
    if (device.size() > 3 || std::stoi(std::string(device)) > 127) {
      return Fail(fmt::format("GPU index `{}` is out of range", device));
    }
    return c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(std::stoi(std::string(device))));
  }
  if (device == "disk") return Fail("`disk` is not a torch device; only a device map may name it");
  try {
    return c10::Device(std::string(device));
  } catch (const std::exception& e) {
    return Fail(fmt::format("unknown device `{}`; expected a GPU index, `cpu`, `meta` or `mps`", device));
  }
}

llvm::Expected<std::string> SafetensorsDtype(c10::ScalarType dtype) {
  for (const DtypeRow& row : kDtypes) {
    if (dtype == row.torch) return std::string(row.safetensors);
  }
  return Fail(fmt::format("dtype {} has no safetensors name", c10::toString(dtype)));
}

llvm::Expected<c10::ScalarType> TorchDtype(std::string_view safetensors_dtype) {
  for (const DtypeRow& row : kDtypes) {
    if (safetensors_dtype == row.safetensors) return row.torch;
  }
  return Fail(fmt::format("dtype {} has no LibTorch 1.13 counterpart", safetensors_dtype));
}

std::vector<std::vector<std::string>> FindTiedParameters(const torch::nn::Module& model) {
  // One tensor = one storage seen through the same window; a TensorImpl registered twice is the
  // simplest case of that.
  using Key = std::tuple<const void*, int64_t, std::vector<int64_t>, std::vector<int64_t>, int>;
  std::map<Key, size_t> group_of;
  std::vector<std::vector<std::string>> groups;
  auto visit = [&](const torch::OrderedDict<std::string, at::Tensor>& tensors) {
    for (const auto& item : tensors) {
      const at::Tensor& t = item.value();
      if (!t.defined() || !t.has_storage()) continue;
      Key key{t.storage().unsafeGetStorageImpl(), t.storage_offset(), t.sizes().vec(), t.strides().vec(),
              static_cast<int>(t.scalar_type())};
      auto [it, inserted] = group_of.emplace(key, groups.size());
      if (inserted) groups.emplace_back();
      groups[it->second].push_back(item.key());
    }
  };
  visit(model.named_parameters(true));
  visit(model.named_buffers(true));
  std::vector<std::vector<std::string>> tied;
  for (std::vector<std::string>& group : groups) {
    if (group.size() < 2) continue;
    std::sort(group.begin(), group.end());
    tied.push_back(std::move(group));
  }
  return tied;
}

llvm::Expected<ModuleTree> BuildModuleTree(const torch::nn::Module& model) {
  TreeOptions options;
  options.order_as_given = true;
  options.tied = FindTiedParameters(model);
  for (const auto& item : model.named_modules("", /*include_self=*/false))
    options.modules.push_back(item.key());
  std::vector<TensorEntry> tensors;
  for (bool buffers : {false, true}) {
    for (const auto& item : buffers ? model.named_buffers(true) : model.named_parameters(true)) {
      const at::Tensor& t = item.value();
      if (!t.defined()) continue;
      llvm::Expected<std::string> dtype = SafetensorsDtype(t.scalar_type());
      if (!dtype) return Fail(fmt::format("tensor `{}`: {}", item.key(), llvm::toString(dtype.takeError())));
      TensorEntry entry{item.key(), *dtype, t.sizes().vec(), "", buffers};
      tensors.push_back(std::move(entry));
    }
  }
  return ModuleTree::Build(tensors, options);
}

std::vector<NamePattern> NoSplitPatterns(const torch::nn::Module& model,
                                         const std::vector<std::string>& classes) {
  auto matches = [&](const std::string& type) {
    size_t colon = type.rfind("::");
    std::string last = colon == std::string::npos ? type : type.substr(colon + 2);
    for (const std::string& c : classes) {
      if (c == type || c == last || c + "Impl" == last) return true;
    }
    return false;
  };
  std::vector<NamePattern> patterns;
  for (const auto& item : model.named_modules("", /*include_self=*/false)) {
    if (!matches(item.value()->name())) continue;
    // Torch names hold no `*` or `?`, so the pattern matches exactly this name.
    llvm::Expected<NamePattern> pattern = NamePattern::Parse(item.key());
    if (pattern) {
      patterns.push_back(std::move(*pattern));
    } else {
      llvm::consumeError(pattern.takeError());
    }
  }
  return patterns;
}

std::vector<std::pair<std::string, std::shared_ptr<torch::nn::Module>>> GetModuleChildrenBottomUp(
    const std::shared_ptr<torch::nn::Module>& model) {
  std::vector<std::pair<std::string, std::shared_ptr<torch::nn::Module>>> order;
  std::function<void(const std::string&, const std::shared_ptr<torch::nn::Module>&)> visit =
      [&](const std::string& name, const std::shared_ptr<torch::nn::Module>& module) {
        for (const auto& child : module->named_children()) {
          visit(name.empty() ? child.key() : name + "." + child.key(), child.value());
        }
        order.emplace_back(name, module);
      };
  visit("", model);
  return order;
}

bool IsParallelWrapper(const torch::nn::Module& module) {
  if (!module.named_parameters(false).is_empty() || !module.named_buffers(false).is_empty()) return false;
  auto children = module.named_children();
  return children.size() == 1 && (children[0].key() == "module" || children[0].key() == "_orig_mod");
}

namespace {

// The wrapped child when `module` is a wrapper whose child has the name `link`.
std::shared_ptr<torch::nn::Module> Wrapped(const torch::nn::Module& module, const char* link) {
  if (!IsParallelWrapper(module)) return nullptr;
  auto children = module.named_children();
  return children[0].key() == link ? children[0].value() : nullptr;
}

std::shared_ptr<torch::nn::Module> UnwrapAll(std::shared_ptr<torch::nn::Module> module) {
  while (IsParallelWrapper(*module)) module = module->named_children()[0].value();
  // Each child in turn, replaced under its own name when it was a wrapper.
  for (const auto& child : module->named_children()) {
    std::shared_ptr<torch::nn::Module> inner = UnwrapAll(child.value());
    if (inner != child.value()) module->replace_module(child.key(), inner);
  }
  return module;
}

}  // namespace

std::shared_ptr<torch::nn::Module> ExtractModelFromParallel(std::shared_ptr<torch::nn::Module> model,
                                                            bool keep_torch_compile, bool recursive) {
  std::shared_ptr<torch::nn::Module> shell;
  if (std::shared_ptr<torch::nn::Module> inner = Wrapped(*model, "_orig_mod")) {
    shell = model;
    model = inner;
  }
  while (std::shared_ptr<torch::nn::Module> inner = Wrapped(*model, "module")) model = inner;
  if (recursive) model = UnwrapAll(model);
  if (keep_torch_compile && shell != nullptr) {
    shell->replace_module("_orig_mod", model);
    return shell;
  }
  return model;
}

std::vector<std::string> StripParallelPrefixes(std::vector<std::string> keys) {
  if (keys.empty()) return keys;
  while (true) {
    bool stripped = false;
    for (std::string_view prefix : {"module.", "_orig_mod."}) {
      bool all = std::all_of(keys.begin(), keys.end(), [&](const std::string& k) {
        return k.size() > prefix.size() && k.compare(0, prefix.size(), prefix) == 0;
      });
      if (!all) continue;
      for (std::string& k : keys) k.erase(0, prefix.size());
      stripped = true;
    }
    if (!stripped) return keys;
  }
}

llvm::Error SetModuleTensorToDevice(torch::nn::Module& module, std::string_view tensor_name,
                                    const c10::Device& device, const std::optional<at::Tensor>& value,
                                    std::optional<c10::ScalarType> dtype) {
  bool is_buffer = false;
  llvm::Expected<at::Tensor> found = FindTensor(module, tensor_name, &is_buffer);
  if (!found) return found.takeError();
  at::Tensor old = *found;
  return CatchTorch(fmt::format("setting `{}`", tensor_name), [&]() -> llvm::Error {
    if (old.is_meta() && !device.is_meta() && !value) {
      return Fail(fmt::format("`{}` is on the meta device; a value is needed to put it on {}", tensor_name,
                              device.str()));
    }
    at::NoGradGuard no_grad;
    at::Tensor result;
    if (value) {
      if (!value->defined())
        return Fail(fmt::format("the value for `{}` is an undefined tensor", tensor_name));
      if (value->sizes() != old.sizes()) {
        return Fail(fmt::format("a tensor of shape [{}] cannot be set in `{}` of shape [{}]",
                                fmt::join(value->sizes(), ", "), tensor_name, fmt::join(old.sizes(), ", ")));
      }
      // Without a dtype the model's dtype wins, as `load_state_dict` copies into it.
      at::Tensor cast = *value;
      if (!dtype) {
        cast = cast.to(old.scalar_type());
      } else if (!IsIntegral(cast.scalar_type())) {
        cast = cast.to(*dtype);
      }
      result = cast.to(device);
    } else {
      result = old.to(device);
      if (dtype && device.is_meta() && !IsIntegral(old.scalar_type())) result = result.to(*dtype);
    }
    // `requires_grad` is the TensorImpl's own autograd state, kept by AssignInPlace. A gradient
    // of the old data would not fit the new (Python's fresh Parameter has none either).
    // Only a dense tensor's metadata can be taken over by another dense TensorImpl.
    if (result.layout() != c10::kStrided || result.is_quantized() || result.is_mkldnn() ||
        old.layout() != c10::kStrided || old.is_quantized()) {
      return Fail(fmt::format("only a dense tensor can be set in place in `{}`", tensor_name));
    }
    if (!is_buffer && old.grad().defined()) old.mutable_grad() = at::Tensor();
    AssignInPlace(old, result);
    return llvm::Error::success();
  });
}

llvm::Error RetieParameters(torch::nn::Module& model,
                            const std::vector<std::vector<std::string>>& tied_params) {
  for (const std::vector<std::string>& group : tied_params) {
    std::vector<at::Tensor> members;
    for (const std::string& name : group) {
      bool is_buffer = false;
      llvm::Expected<at::Tensor> t = FindTensor(model, name, &is_buffer);
      if (!t) return t.takeError();
      members.push_back(*t);
    }
    auto source =
        std::find_if(members.begin(), members.end(), [](const at::Tensor& t) { return !t.is_meta(); });
    if (source == members.end()) continue;
    at::Tensor shared = *source;
    for (const at::Tensor& member : members) AssignInPlace(member, shared);
  }
  return llvm::Error::success();
}

llvm::Error OffloadBytes(std::string_view bytes, const std::string& safetensors_dtype,
                         const std::vector<int64_t>& shape, const std::string& name,
                         const std::string& folder, OffloadIndex& index) {
  if (!ValidOffloadName(name)) return Fail(fmt::format("`{}` cannot be an offload file name", name));
  llvm::Expected<std::string> numpy = NumpyDtype(safetensors_dtype);
  if (!numpy) return Fail(fmt::format("offloading `{}`: {}", name, llvm::toString(numpy.takeError())));
  if (std::error_code ec = llvm::sys::fs::create_directories(folder)) {
    return Fail(fmt::format("cannot create offload folder {}: {}", folder, ec.message()));
  }
  // Host byte order is the file's (safetensors is little-endian): LibTorch's targets here are.
  static_assert(llvm::sys::IsLittleEndianHost, "offload files are written in host byte order");
  std::string path = DatPath(folder, name);
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec);
  if (ec) return Fail(fmt::format("cannot write {}: {}", path, ec.message()));
  out << bytes;
  out.close();
  if (out.has_error()) {
    std::error_code error = out.error();
    out.clear_error();
    return Fail(fmt::format("cannot write {}: {}", path, error.message()));
  }
  Record(index, OffloadEntry{name, *numpy, shape, "", ""});
  return llvm::Error::success();
}

llvm::Error OffloadWeight(const at::Tensor& tensor, const std::string& name, const std::string& folder,
                          OffloadIndex& index) {
  llvm::Expected<std::string> dtype = SafetensorsDtype(tensor.scalar_type());
  if (!dtype) return Fail(fmt::format("offloading `{}`: {}", name, llvm::toString(dtype.takeError())));
  at::Tensor host;
  llvm::Error moved = CatchTorch(fmt::format("offloading `{}`", name), [&]() -> llvm::Error {
    if (tensor.is_meta())
      return Fail(fmt::format("`{}` is on the meta device: it has no data to offload", name));
    host = tensor.detach().to(at::kCPU).contiguous();
    return llvm::Error::success();
  });
  if (moved) return moved;
  std::string_view bytes(static_cast<const char*>(host.data_ptr()), host.nbytes());
  return OffloadBytes(bytes, *dtype, tensor.sizes().vec(), name, folder, index);
}

llvm::Expected<OffloadIndex> ReadOffloadIndex(const std::string& folder) {
  std::string path = (fs::path(folder) / "index.json").string();
  if (!fs::exists(path)) return OffloadIndex{};
  llvm::Expected<std::shared_ptr<const checkpoint::FileBytes>> bytes = checkpoint::FileBytes::Map(path);
  if (!bytes) return bytes.takeError();
  llvm::Expected<llvm::json::Value> json = llvm::json::parse((*bytes)->view());
  if (!json) return Fail(fmt::format("{}: {}", path, llvm::toString(json.takeError())));
  const llvm::json::Object* object = json->getAsObject();
  if (object == nullptr) return Fail(fmt::format("{}: the offload index is not a JSON object", path));
  OffloadIndex index;
  for (const auto& [key, value] : *object) {
    std::string name = key.str();
    const llvm::json::Object* fields = value.getAsObject();
    if (fields == nullptr) return Fail(fmt::format("{}: entry `{}` is not an object", path, name));
    OffloadEntry entry;
    entry.name = name;
    if (auto dtype = fields->getString("dtype")) entry.dtype = dtype->str();
    if (auto file = fields->getString("safetensors_file")) {
      entry.safetensors_file = file->str();
      auto weight = fields->getString("weight_name");
      if (!weight)
        return Fail(fmt::format("{}: entry `{}` has a safetensors_file but no weight_name", path, name));
      entry.weight_name = weight->str();
    } else {
      const llvm::json::Array* shape = fields->getArray("shape");
      if (entry.dtype.empty() || shape == nullptr) {
        return Fail(fmt::format("{}: entry `{}` needs `dtype` and `shape`", path, name));
      }
      for (const llvm::json::Value& d : *shape) {
        auto n = d.getAsInteger();
        if (!n || *n < 0) return Fail(fmt::format("{}: entry `{}` has a bad shape", path, name));
        entry.shape.push_back(*n);
      }
    }
    index.push_back(std::move(entry));
  }
  // A JSON object has no order; the index lists its entries by name.
  std::sort(index.begin(), index.end(),
            [](const OffloadEntry& a, const OffloadEntry& b) { return a.name < b.name; });
  return index;
}

llvm::Error SaveOffloadIndex(const OffloadIndex& index, const std::string& folder) {
  llvm::Expected<OffloadIndex> merged = ReadOffloadIndex(folder);
  if (!merged) return merged.takeError();
  for (const OffloadEntry& entry : index) Record(*merged, entry);
  llvm::json::Object object;
  for (const OffloadEntry& entry : *merged) {
    llvm::json::Object fields;
    if (!entry.safetensors_file.empty()) {
      fields["safetensors_file"] = entry.safetensors_file;
      fields["weight_name"] = entry.weight_name;
      if (!entry.dtype.empty()) fields["dtype"] = entry.dtype;
    } else {
      fields["dtype"] = entry.dtype;
      llvm::json::Array shape;
      for (int64_t d : entry.shape) shape.push_back(d);
      fields["shape"] = std::move(shape);
    }
    object[entry.name] = std::move(fields);
  }
  std::string text = llvm::formatv("{0:2}", llvm::json::Value(std::move(object))).str();
  return checkpoint::WriteFileAtomically((fs::path(folder) / "index.json").string(), {text});
}

llvm::Error OffloadStateDict(const std::string& folder,
                             const std::vector<std::pair<std::string, at::Tensor>>& tensors) {
  OffloadIndex index;
  for (const auto& [name, tensor] : tensors) {
    if (llvm::Error error = OffloadWeight(tensor, name, folder, index)) return error;
  }
  return SaveOffloadIndex(index, folder);
}

llvm::Expected<at::Tensor> LoadOffloadedWeight(const std::string& folder, const OffloadEntry& entry) {
  if (!entry.safetensors_file.empty()) {
    llvm::Expected<checkpoint::SafetensorsFile> file =
        checkpoint::SafetensorsFile::Read(entry.safetensors_file);
    if (!file) return file.takeError();
    auto info = file->tensors().find(entry.weight_name);
    if (info == file->tensors().end()) {
      return Fail(fmt::format("{} has no tensor `{}` (offload entry `{}`)", entry.safetensors_file,
                              entry.weight_name, entry.name));
    }
    llvm::Expected<at::Tensor> tensor =
        TensorFromBytes(info->second, file->Bytes(entry.weight_name), entry.name);
    if (!tensor || entry.dtype.empty()) return tensor;
    llvm::Expected<c10::ScalarType> dtype = TorchDtypeOfNumpy(entry.dtype);
    if (!dtype) return dtype.takeError();
    return tensor->to(*dtype);
  }
  if (!ValidOffloadName(entry.name))
    return Fail(fmt::format("`{}` cannot be an offload file name", entry.name));
  llvm::Expected<c10::ScalarType> dtype = TorchDtypeOfNumpy(entry.dtype);
  if (!dtype)
    return Fail(fmt::format("offload entry `{}`: {}", entry.name, llvm::toString(dtype.takeError())));
  std::string path = DatPath(folder, entry.name);
  llvm::Expected<std::shared_ptr<const checkpoint::FileBytes>> bytes =
      checkpoint::FileBytes::Map(path, checkpoint::FileBytes::Access::kWhole);
  if (!bytes) return bytes.takeError();
  at::Tensor tensor = at::empty(entry.shape, at::TensorOptions().dtype(*dtype));
  // A 0-dim tensor was written as one element, which is what numel() counts.
  std::string_view view = (*bytes)->view();
  if (static_cast<size_t>(tensor.nbytes()) != view.size()) {
    return Fail(fmt::format("{} has {} bytes; `{}` needs {} ({} × [{}])", path, view.size(), entry.name,
                            tensor.nbytes(), entry.dtype, fmt::join(entry.shape, ", ")));
  }
  if (!view.empty()) std::memcpy(tensor.data_ptr(), view.data(), view.size());
  return tensor;
}

llvm::Error LoadOffloadedWeights(torch::nn::Module& model, const OffloadIndex& index,
                                 const std::string& folder) {
  for (const OffloadEntry& entry : index) {
    // 8-bit statistics ride along with their weights in Accelerate; LibTorch has no 8-bit
    // parameters to give them to.
    if (entry.name.find("SCB") != std::string::npos) continue;
    llvm::Expected<at::Tensor> weight = LoadOffloadedWeight(folder, entry);
    if (!weight) return weight.takeError();
    if (llvm::Error error = SetModuleTensorToDevice(model, entry.name, c10::Device(c10::kCPU), *weight))
      return error;
  }
  return llvm::Error::success();
}

llvm::Expected<LoadCheckpointReport> LoadCheckpointInModel(torch::nn::Module& model,
                                                           const std::string& checkpoint,
                                                           const LoadCheckpointOptions& options) {
  llvm::Expected<checkpoint::Weights> weights = checkpoint::Weights::Load(checkpoint);
  if (!weights) return weights.takeError();
  LoadCheckpointReport report;
  report.warnings = weights->warnings();

  std::set<std::string> parameters, buffers;
  for (const auto& item : model.named_parameters(true)) parameters.insert(item.key());
  for (const auto& item : model.named_buffers(true)) buffers.insert(item.key());
  auto in_model = [&](const std::string& name) { return parameters.count(name) + buffers.count(name) > 0; };
  // Ties as they are before loading, to retie at the end.
  std::vector<std::vector<std::string>> tied = FindTiedParameters(model);
  std::vector<std::string> names = weights->names();

  auto value_of = [&](const std::string& name) -> llvm::Expected<at::Tensor> {
    checkpoint::Weights::Tensor t = weights->Find(name);
    return TensorFromBytes(*t.info, t.bytes, name);
  };

  if (!options.device_map) {
    // `load_state_dict(strict)`: into the model's own tensors, at their dtype and device.
    for (const std::string& name : names) {
      if (name.find("SCB") != std::string::npos) continue;
      if (!in_model(name)) {
        report.unexpected.push_back(name);
        continue;
      }
      bool is_buffer = false;
      llvm::Expected<at::Tensor> target = FindTensor(model, name, &is_buffer);
      if (!target) return target.takeError();
      llvm::Expected<at::Tensor> value = value_of(name);
      if (!value) return value.takeError();
      if (llvm::Error error = SetModuleTensorToDevice(model, name, target->device(), *value)) return error;
    }
    std::set<std::string> stored(names.begin(), names.end());
    for (const std::set<std::string>* set : {&parameters, &buffers}) {
      for (const std::string& name : *set) {
        if (!stored.count(name)) report.missing.push_back(name);
      }
    }
    if (options.strict && (!report.unexpected.empty() || !report.missing.empty())) {
      return Fail(fmt::format("strict load of {}: {} missing ({}), {} unexpected ({})", checkpoint,
                              report.missing.size(), fmt::join(report.missing, ", "),
                              report.unexpected.size(), fmt::join(report.unexpected, ", ")));
    }
  } else {
    const DeviceMapEntries& map = *options.device_map;
    bool uses_disk = std::any_of(map.begin(), map.end(), [](const auto& e) { return e.second == "disk"; });
    if (uses_disk && options.offload_folder.empty()) {
      return Fail("the device map offloads to `disk`; an offload folder is needed");
    }
    std::string spill_folder;
    if (options.offload_state_dict) {
      llvm::SmallString<128> dir;
      if (std::error_code ec = llvm::sys::fs::createUniqueDirectory("accel-offload", dir)) {
        return Fail(fmt::format("cannot create a temporary folder: {}", ec.message()));
      }
      spill_folder = dir.str().str();
    }
    // The spill folder goes away however the load ends.
    struct RemoveOnExit {
      const std::string& path;
      ~RemoveOnExit() {
        std::error_code ignored;
        if (!path.empty()) fs::remove_all(path, ignored);
      }
    } remove_spill{spill_folder};
    OffloadIndex offload_index, spill_index;

    for (const std::string& name : names) {
      if (name.find("SCB") != std::string::npos) continue;
      if (!in_model(name)) {
        report.unexpected.push_back(name);
        if (!options.strict) continue;
        return Fail(fmt::format("`{}` is in the checkpoint but not in the model", name));
      }
      const std::string* device = DeviceOf(map, name);
      if (device == nullptr) {
        return Fail(fmt::format("`{}` has no device in the device map", name));
      }
      checkpoint::Weights::Tensor stored = weights->Find(name);
      llvm::Expected<c10::ScalarType> stored_dtype = TorchDtype(stored.info->dtype);
      if (!stored_dtype)
        return Fail(
            fmt::format("checkpoint tensor `{}`: {}", name, llvm::toString(stored_dtype.takeError())));
      std::optional<c10::ScalarType> new_dtype;
      if (options.dtype && c10::isFloatingType(*stored_dtype)) {
        new_dtype = options.dtype;
        if (*options.dtype == c10::ScalarType::Half) {
          for (const std::string& key : options.keep_in_fp32_modules) {
            // Accelerate's test, substrings included.
            if ((name.find(key) != std::string::npos && name.find(key + ".") != std::string::npos) ||
                key == name) {
              new_dtype = c10::ScalarType::Float;
              break;
            }
          }
        }
      }
      bool offload_to_disk = *device == "disk" && (options.offload_buffers || !buffers.count(name));
      bool spill = *device == "cpu" && options.offload_state_dict;
      if (offload_to_disk || spill) {
        bool is_buffer = false;
        llvm::Expected<at::Tensor> target = FindTensor(model, name, &is_buffer);
        if (!target) return target.takeError();
        if (target->sizes().vec() != stored.info->shape) {
          return Fail(fmt::format("a tensor of shape [{}] cannot be set in `{}` of shape [{}]",
                                  fmt::join(stored.info->shape, ", "), name,
                                  fmt::join(target->sizes(), ", ")));
        }
        // The stored bytes go to the folder; the model keeps only the tensor's description.
        if (llvm::Error error = OffloadBytes(stored.bytes, stored.info->dtype, stored.info->shape, name,
                                             offload_to_disk ? options.offload_folder : spill_folder,
                                             offload_to_disk ? offload_index : spill_index)) {
          return error;
        }
        if (llvm::Error error = SetModuleTensorToDevice(model, name, c10::Device(c10::kMeta), std::nullopt,
                                                        new_dtype.value_or(*stored_dtype))) {
          return error;
        }
        if (offload_to_disk) report.offloaded.push_back(name);
        continue;
      }
      // A buffer mapped to disk without offload_buffers stays in memory, on the cpu.
      llvm::Expected<c10::Device> target = ParseTorchDevice(*device == "disk" ? "cpu" : *device);
      if (!target) return target.takeError();
      llvm::Expected<at::Tensor> value = value_of(name);
      if (!value) return value.takeError();
      if (llvm::Error error = SetModuleTensorToDevice(model, name, *target, *value, new_dtype)) return error;
    }
    if (!offload_index.empty()) {
      if (llvm::Error error = SaveOffloadIndex(offload_index, options.offload_folder)) return error;
    }
    if (!spill_folder.empty()) {
      if (llvm::Error error = LoadOffloadedWeights(model, spill_index, spill_folder)) return error;
    }

    for (const std::vector<std::string>& group : tied) {
      std::set<std::string> devices;
      for (const std::string& name : group) {
        if (const std::string* device = DeviceOf(map, name)) devices.insert(*device);
      }
      if (devices.size() > 1) {
        report.warnings.push_back(fmt::format("tied tensors {} are on different devices ({})",
                                              fmt::join(group, ", "), fmt::join(devices, ", ")));
      }
    }
  }
  if (llvm::Error error = RetieParameters(model, tied)) return error;
  if (!report.unexpected.empty() && !options.strict) {
    report.warnings.push_back(fmt::format("{} checkpoint tensor(s) not in the model: {}",
                                          report.unexpected.size(), fmt::join(report.unexpected, ", ")));
  }
  return report;
}

}  // namespace accel::rt::memory
