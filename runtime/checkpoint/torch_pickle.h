#ifndef ACCEL_RUNTIME_CHECKPOINT_TORCH_PICKLE_H_
#define ACCEL_RUNTIME_CHECKPOINT_TORCH_PICKLE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "llvm/Support/Error.h"

// The pickles inside the files `torch.save` writes (`data.pkl` of its zip archive), as data:
// a writer of what `torch.load(weights_only=True)` reads, and a reader that builds the same
// kind of tree and never runs anything. The reader knows a fixed list of callables (tensor and
// storage rebuilding, OrderedDict, NumPy arrays and dtypes, `_codecs.encode`: the list
// `torch.load(weights_only=True)` allows for Accelerate's state files); a pickle naming any
// other is refused, naming it. Torch-free: a tensor is its storage's key, dtype, offset, shape
// and strides; its bytes are the archive's record `data/<key>` (torch_zip.h).
namespace accel::rt::checkpoint::pickle {

struct Object;
using Ref = std::shared_ptr<Object>;

// A tensor of the pickle: `dtype` is the safetensors name (`F32`), `storage` the record key.
struct TensorInfo {
  std::string storage;
  std::string dtype;
  int64_t storage_elements = 0;
  int64_t offset = 0;  // in elements
  std::vector<int64_t> shape;
  std::vector<int64_t> stride;
};

// A NumPy array of the pickle (`dtype` as NumPy spells it: `u4`, `f8`), its bytes little-endian.
struct ArrayInfo {
  std::string dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};

// One value. Containers hold references, so that a value the pickle memoised and refers to
// twice is one object, as in Python.
struct Object {
  enum class Kind { kNone, kBool, kInt, kFloat, kString, kBytes, kTuple, kList, kDict, kTensor, kArray,
                    // What only the reader's stack holds while it rebuilds the kinds above.
                    kCallable, kStorage, kDtype };
  Kind kind = Kind::kNone;
  bool boolean = false;
  int64_t integer = 0;
  double number = 0;
  std::string text;          // kString (UTF-8), kBytes, kCallable ("module.name"), kDtype
  std::vector<Ref> items;    // kTuple, kList; kDict: key, value, key, value, ...
  TensorInfo tensor;         // kTensor, kStorage (storage, dtype, storage_elements)
  ArrayInfo array;           // kArray

  Object() = default;
  Object(const Object&) = delete;
  Object& operator=(const Object&) = delete;
  // Frees what only this object holds without recursing: a pickle can nest values far deeper
  // than MARKs count (a 1-tuple of a 1-tuple of ...), and a recursive free would overflow.
  ~Object();

  // The value of `key` in a dict with string keys, or null.
  const Object* Find(std::string_view key) const;
  // The value of integer `key` in a dict, or null.
  const Object* Find(int64_t key) const;
};

Ref None();
Ref Bool(bool value);
Ref Int(int64_t value);
Ref Float(double value);
Ref String(std::string value);
Ref Bytes(std::string value);
Ref Tuple(std::vector<Ref> items);
Ref List(std::vector<Ref> items);
Ref Dict(std::vector<std::pair<Ref, Ref>> entries);
Ref Tensor(TensorInfo info);
Ref Array(ArrayInfo info);

// The kind's name as Python would print the type (`dict`, `torch.Tensor`), for messages.
std::string_view KindName(Object::Kind kind);

// `value` as protocol-2 pickle bytes, in the form torch.save gives them: a tensor is
// `torch._utils._rebuild_tensor_v2` of a persistent `('storage', torch.<T>Storage, key, 'cpu',
// elements)`, bytes are `_codecs.encode(text, 'latin1')`, an array is NumPy's `_reconstruct`
// with its state. Fails on a tensor or array dtype the format has no name for.
llvm::Expected<std::string> Write(const Object& value);

// Reads pickle `bytes` (protocols 2 to 5) into a tree, running nothing. Fails, saying where
// and why, on a callable outside the list above (a pickle that would run code), an opcode this
// reader does not take, a truncated or malformed stream, an integer beyond 64 bits, MARKs
// nested deeper than `max_depth`, or a container placed inside itself. The tree is built from
// the input alone: it holds at most one object per opcode and no more text than the input.
// Values nested without MARKs (1-tuples of 1-tuples) may be deep: read them without recursion.
llvm::Expected<Ref> Read(std::string_view bytes, int max_depth = 1000);

}  // namespace accel::rt::checkpoint::pickle

#endif  // ACCEL_RUNTIME_CHECKPOINT_TORCH_PICKLE_H_
