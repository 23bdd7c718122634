// What the pickle reader makes of the callables a pickle may name, as data: tensors from their
// storages (`_rebuild_tensor_v2` of a persistent id), parameters, OrderedDicts, `torch.Size`,
// bytes (`_codecs.encode`) and NumPy arrays with their dtypes. The opcode machine
// (torch_pickle_read.cpp) only moves values; which globals are allowed and what each becomes
// is decided here, in one place, so that the list torch_pickle.h promises is this file.
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "runtime/checkpoint/torch_pickle_internal.h"

namespace accel::rt::checkpoint::pickle {
namespace {

// The callables a pickle may name: what torch.load(weights_only=True) allows for Accelerate's
// files. Each is rebuilt as data by Reduce below; none is ever called.
constexpr std::string_view kRebuildTensor = "torch._utils._rebuild_tensor_v2";
constexpr std::string_view kRebuildParameter = "torch._utils._rebuild_parameter";
constexpr std::string_view kOrderedDict = "collections.OrderedDict";
constexpr std::string_view kEncode = "_codecs.encode";
constexpr std::string_view kReconstruct = "numpy._core.multiarray._reconstruct";
constexpr std::string_view kReconstructNumpy1 = "numpy.core.multiarray._reconstruct";
constexpr std::string_view kNdarray = "numpy.ndarray";
constexpr std::string_view kNumpyDtype = "numpy.dtype";
constexpr std::string_view kTorchSize = "torch.Size";

std::string ArrayDtypeNames() {
  std::string names;
  for (const auto& [name, size] : kArrayDtypes)
    names += (names.empty() ? "" : ", ") + std::string(name);
  return names;
}

bool IsStorageClass(std::string_view name) {
  if (name.substr(0, 6) != "torch.") return false;
  for (const auto& [storage, dtype] : kStorageClasses)
    if (storage == name.substr(6)) return true;
  return false;
}

std::optional<std::vector<int64_t>> Ints(const Object& tuple) {
  if (tuple.kind != Object::Kind::kTuple) return std::nullopt;
  std::vector<int64_t> values;
  for (const Ref& item : tuple.items) {
    if (item->kind != Object::Kind::kInt) return std::nullopt;
    values.push_back(item->integer);
  }
  return values;
}

}  // namespace

bool Allowed(std::string_view name) {
  for (std::string_view known : {kRebuildTensor, kRebuildParameter, kOrderedDict, kEncode, kReconstruct,
                                 kReconstructNumpy1, kNdarray, kNumpyDtype, kTorchSize})
    if (known == name) return true;
  return IsStorageClass(name);
}

// `callable(*args)`, rebuilt as data.
llvm::Expected<Ref> Reduce(size_t at, const Object& callable, const Object& args) {
  if (callable.kind != Object::Kind::kCallable || args.kind != Object::Kind::kTuple)
    return ErrorAt(at, "REDUCE needs a known callable and a tuple of arguments");
  const std::string& name = callable.text;
  const std::vector<Ref>& a = args.items;
  auto bad = [&](std::string_view expected) {
    return ErrorAt(at, fmt::format("`{}` with arguments it does not take (expected {})", name, expected));
  };
  if (name == kRebuildTensor) {
    if (a.size() < 4 || a[0]->kind != Object::Kind::kStorage || a[1]->kind != Object::Kind::kInt)
      return bad("a storage, an offset, a size and a stride");
    std::optional<std::vector<int64_t>> shape = Ints(*a[2]), stride = Ints(*a[3]);
    if (!shape || !stride || shape->size() != stride->size()) return bad("a size and a stride of one rank");
    Ref tensor = Make(Object::Kind::kTensor);
    tensor->tensor = a[0]->tensor;
    tensor->tensor.offset = a[1]->integer;
    tensor->tensor.shape = std::move(*shape);
    tensor->tensor.stride = std::move(*stride);
    return tensor;
  }
  if (name == kRebuildParameter) {
    if (a.empty() || a[0]->kind != Object::Kind::kTensor) return bad("a tensor");
    return a[0];
  }
  if (name == kOrderedDict) {
    if (!a.empty()) return bad("no arguments");
    return Make(Object::Kind::kDict);
  }
  if (name == kTorchSize) {
    if (a.size() != 1 || !Ints(*a[0])) return bad("a tuple of integers");
    return a[0];
  }
  if (name == kEncode) {
    if (a.size() != 2 || a[0]->kind != Object::Kind::kString || a[1]->kind != Object::Kind::kString ||
        (a[1]->text != "latin1" && a[1]->text != "latin-1"))
      return bad("a string and 'latin1'");
    std::optional<std::string> bytes = Utf8ToLatin1(a[0]->text);
    if (!bytes) return bad("text of code points below 256");
    Ref value = Make(Object::Kind::kBytes);
    value->text = std::move(*bytes);
    return value;
  }
  if (name == kReconstruct || name == kReconstructNumpy1) {
    if (a.size() != 3 || a[0]->kind != Object::Kind::kCallable || a[0]->text != kNdarray)
      return bad("numpy.ndarray, a shape and a type code");
    return Make(Object::Kind::kArray);
  }
  if (name == kNumpyDtype) {
    if (a.empty() || a[0]->kind != Object::Kind::kString || !ArrayItemSize(a[0]->text))
      return bad(fmt::format("one of the dtypes {}", ArrayDtypeNames()));
    Ref dtype = Make(Object::Kind::kDtype);
    dtype->text = a[0]->text;
    return dtype;
  }
  return ErrorAt(at, fmt::format("`{}` cannot be called", name));
}

// `target.__setstate__(state)` for the kinds that have one.
llvm::Error Build(size_t at, Object& target, const Object& state) {
  if (target.kind == Object::Kind::kDtype) {
    // (version, byte order, ...): only little-endian or byte-sized arrays are read.
    if (state.kind != Object::Kind::kTuple || state.items.size() < 2 ||
        state.items[1]->kind != Object::Kind::kString ||
        (state.items[1]->text != "<" && state.items[1]->text != "|" && state.items[1]->text != "="))
      return ErrorAt(at, "a NumPy dtype that is not little-endian");
    return llvm::Error::success();
  }
  if (target.kind == Object::Kind::kArray) {
    const std::vector<Ref>& s = state.items;
    if (state.kind != Object::Kind::kTuple || s.size() != 5 || s[2]->kind != Object::Kind::kDtype ||
        s[4]->kind != Object::Kind::kBytes || !Ints(*s[1]))
      return ErrorAt(at, "a NumPy array state other than (version, shape, dtype, order, bytes)");
    std::vector<int64_t> shape = *Ints(*s[1]);
    uint64_t elements = 1;
    for (int64_t extent : shape) {
      if (extent < 0 || (extent > 0 && elements > s[4]->text.size() / static_cast<uint64_t>(extent)))
        return ErrorAt(at, "a NumPy array larger than its bytes");
      elements *= static_cast<uint64_t>(extent);
    }
    if (elements * *ArrayItemSize(s[2]->text) != s[4]->text.size())
      return ErrorAt(at, "a NumPy array whose bytes do not match its shape and dtype");
    if (shape.size() > 1 && s[3]->kind == Object::Kind::kBool && s[3]->boolean)
      return ErrorAt(at, "a NumPy array in Fortran order");
    target.array = ArrayInfo{s[2]->text, std::move(shape), s[4]->text};
    return llvm::Error::success();
  }
  if (target.kind == Object::Kind::kDict && (state.kind == Object::Kind::kNone ||
                                             (state.kind == Object::Kind::kDict && state.items.empty())))
    return llvm::Error::success();
  return ErrorAt(at, fmt::format("cannot set the state of a {}", KindName(target.kind)));
}

// ('storage', torch.<T>Storage, key, location, elements): a tensor's storage.
llvm::Expected<Ref> PersistentLoad(size_t at, const Object& id) {
  const std::vector<Ref>& p = id.items;
  if (id.kind != Object::Kind::kTuple || p.size() != 5 || p[0]->kind != Object::Kind::kString ||
      p[0]->text != "storage" || p[1]->kind != Object::Kind::kCallable || !IsStorageClass(p[1]->text) ||
      p[2]->kind != Object::Kind::kString || p[4]->kind != Object::Kind::kInt || p[4]->integer < 0)
    return ErrorAt(at, "a persistent id other than torch.save's ('storage', type, key, location, size)");
  Ref storage = Make(Object::Kind::kStorage);
  for (const auto& [name, dtype] : kStorageClasses)
    if (name == std::string_view(p[1]->text).substr(6)) storage->tensor.dtype = std::string(dtype);
  storage->tensor.storage = p[2]->text;
  storage->tensor.storage_elements = p[4]->integer;
  return storage;
}

}  // namespace accel::rt::checkpoint::pickle
