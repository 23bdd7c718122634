#ifndef ACCEL_RUNTIME_CHECKPOINT_TORCH_PICKLE_INTERNAL_H_
#define ACCEL_RUNTIME_CHECKPOINT_TORCH_PICKLE_INTERNAL_H_

#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "llvm/Support/Error.h"
#include "runtime/checkpoint/torch_pickle.h"

// What the pickle's writer (torch_pickle_write.cpp), its opcode reader (torch_pickle_read.cpp)
// and the rebuilding of the callables it names (torch_pickle_rebuild.cpp) share: the names
// torch.save gives dtypes, and how a value or a reader's error is made. Not for other folders.
namespace accel::rt::checkpoint::pickle {

// torch's legacy storage classes, which name a tensor's dtype in the pickle, by safetensors dtype.
inline constexpr std::array<std::pair<std::string_view, std::string_view>, 10> kStorageClasses = {{
    {"FloatStorage", "F32"},
    {"DoubleStorage", "F64"},
    {"HalfStorage", "F16"},
    {"BFloat16Storage", "BF16"},
    {"LongStorage", "I64"},
    {"IntStorage", "I32"},
    {"ShortStorage", "I16"},
    {"CharStorage", "I8"},
    {"ByteStorage", "U8"},
    {"BoolStorage", "BOOL"},
}};

// NumPy's names of the array dtypes a state file holds, with their element sizes.
inline constexpr std::array<std::pair<std::string_view, size_t>, 8> kArrayDtypes = {{
    {"u1", 1}, {"u4", 4}, {"u8", 8}, {"i4", 4}, {"i8", 8}, {"f4", 4}, {"f8", 8}, {"b1", 1}}};

inline std::optional<size_t> ArrayItemSize(std::string_view dtype) {
  for (const auto& [name, size] : kArrayDtypes)
    if (name == dtype) return size;
  return std::nullopt;
}

inline Ref Make(Object::Kind kind) {
  auto object = std::make_shared<Object>();
  object->kind = kind;
  return object;
}

// The reader's errors name the byte offset of the opcode that failed.
inline llvm::Error ErrorAt(size_t at, const std::string& what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "byte %zu: %s", at, what.c_str());
}

// Latin-1 text as UTF-8 (what `bytes.decode('latin1')` pickles as), and back; the way back
// fails on a code point above U+00FF, which is not a byte.
std::string Latin1ToUtf8(std::string_view bytes);
std::optional<std::string> Utf8ToLatin1(std::string_view text);

// Whether a pickle may name the global `name` ("module.name"): the list torch_pickle.h gives.
bool Allowed(std::string_view name);

// `callable(*args)` (REDUCE at byte `at`), rebuilt as data; fails on arguments the callable
// does not take.
llvm::Expected<Ref> Reduce(size_t at, const Object& callable, const Object& args);

// `target.__setstate__(state)` (BUILD at byte `at`) for the kinds that have one: a NumPy
// array's shape, dtype and bytes, a NumPy dtype's byte order, an OrderedDict's empty state.
llvm::Error Build(size_t at, Object& target, const Object& state);

// The storage a persistent id (BINPERSID at byte `at`) names: torch.save's ('storage',
// torch.<T>Storage, key, location, elements), and nothing else.
llvm::Expected<Ref> PersistentLoad(size_t at, const Object& id);

}  // namespace accel::rt::checkpoint::pickle

#endif  // ACCEL_RUNTIME_CHECKPOINT_TORCH_PICKLE_INTERNAL_H_
