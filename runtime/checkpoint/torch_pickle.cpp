#include "runtime/checkpoint/torch_pickle.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <limits>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "llvm/Support/ConvertUTF.h"

namespace accel::rt::checkpoint::pickle {
namespace {

// torch's legacy storage classes, which name a tensor's dtype in the pickle, by safetensors dtype.
constexpr std::array<std::pair<std::string_view, std::string_view>, 10> kStorageClasses = {{
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
constexpr std::array<std::pair<std::string_view, size_t>, 8> kArrayDtypes = {{
    {"u1", 1}, {"u4", 4}, {"u8", 8}, {"i4", 4}, {"i8", 8}, {"f4", 4}, {"f8", 8}, {"b1", 1}}};

std::optional<size_t> ArrayItemSize(std::string_view dtype) {
  for (const auto& [name, size] : kArrayDtypes)
    if (name == dtype) return size;
  return std::nullopt;
}

// The callables a pickle may name: what torch.load(weights_only=True) allows for Accelerate's
// files. Each is rebuilt as data by Reader::Reduce; none is ever called.
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
  for (const auto& [name, size] : kArrayDtypes) names += (names.empty() ? "" : ", ") + std::string(name);
  return names;
}

bool IsStorageClass(std::string_view name) {
  if (name.substr(0, 6) != "torch.") return false;
  for (const auto& [storage, dtype] : kStorageClasses)
    if (storage == name.substr(6)) return true;
  return false;
}

bool Allowed(std::string_view name) {
  for (std::string_view known : {kRebuildTensor, kRebuildParameter, kOrderedDict, kEncode, kReconstruct,
                                 kReconstructNumpy1, kNdarray, kNumpyDtype, kTorchSize})
    if (known == name) return true;
  return IsStorageClass(name);
}

Ref Make(Object::Kind kind) {
  auto object = std::make_shared<Object>();
  object->kind = kind;
  return object;
}

// Latin-1 text as UTF-8 (what `bytes.decode('latin1')` pickles as), and back.
std::string Latin1ToUtf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back(static_cast<char>(0xC0 | (c >> 6)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  }
  return out;
}

std::optional<std::string> Utf8ToLatin1(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else if ((c == 0xC2 || c == 0xC3) && i + 1 < text.size() &&
               (static_cast<unsigned char>(text[i + 1]) & 0xC0) == 0x80) {
      out.push_back(static_cast<char>(((c & 0x03) << 6) | (static_cast<unsigned char>(text[i + 1]) & 0x3F)));
      ++i;
    } else {
      return std::nullopt;  // a code point above U+00FF: not bytes
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Writer

class Writer {
 public:
  llvm::Error Put(const Object& value) {
    switch (value.kind) {
      case Object::Kind::kNone:
        out_ += 'N';
        break;
      case Object::Kind::kBool:
        out_ += value.boolean ? '\x88' : '\x89';
        break;
      case Object::Kind::kInt:
        PutInt(value.integer);
        break;
      case Object::Kind::kFloat: {
        uint64_t bits;
        std::memcpy(&bits, &value.number, sizeof bits);
        out_ += 'G';
        for (int shift = 56; shift >= 0; shift -= 8) out_ += static_cast<char>((bits >> shift) & 0xFF);
        break;
      }
      case Object::Kind::kString:
        PutText(value.text);
        break;
      case Object::Kind::kBytes:
        PutBytes(value.text);
        break;
      case Object::Kind::kTuple:
        return PutTuple(value.items);
      case Object::Kind::kList:
        out_ += ']';
        if (!value.items.empty()) {
          out_ += '(';
          for (const Ref& item : value.items)
            if (llvm::Error error = Put(*item)) return error;
          out_ += 'e';
        }
        break;
      case Object::Kind::kDict:
        out_ += '}';
        if (!value.items.empty()) {
          out_ += '(';
          for (const Ref& item : value.items)
            if (llvm::Error error = Put(*item)) return error;
          out_ += 'u';
        }
        break;
      case Object::Kind::kTensor:
        return PutTensor(value.tensor);
      case Object::Kind::kArray:
        return PutArray(value.array);
      case Object::Kind::kCallable:
      case Object::Kind::kStorage:
      case Object::Kind::kDtype:
        return llvm::createStringError(llvm::inconvertibleErrorCode(), "cannot write a %s on its own",
                                       std::string(KindName(value.kind)).c_str());
    }
    return llvm::Error::success();
  }

  std::string Finish() && {
    out_ += '.';
    return std::move(out_);
  }

 private:
  void PutInt(int64_t value) {
    if (value >= 0 && value < 256) {
      out_ += 'K';
      out_ += static_cast<char>(value);
    } else if (value >= 0 && value < 65536) {
      out_ += 'M';
      out_ += static_cast<char>(value & 0xFF);
      out_ += static_cast<char>(value >> 8);
    } else if (value >= std::numeric_limits<int32_t>::min() && value <= std::numeric_limits<int32_t>::max()) {
      out_ += 'J';
      PutLittle(static_cast<uint32_t>(static_cast<int32_t>(value)), 4);
    } else {
      // LONG1: the shortest two's complement, little-endian.
      std::string bytes;
      uint64_t bits = static_cast<uint64_t>(value);
      for (int i = 0; i < 8; ++i) bytes += static_cast<char>((bits >> (8 * i)) & 0xFF);
      while (bytes.size() > 1) {
        char last = bytes.back(), before = bytes[bytes.size() - 2];
        bool redundant = (last == 0 && !(before & 0x80)) || (last == '\xFF' && (before & 0x80));
        if (!redundant) break;
        bytes.pop_back();
      }
      out_ += '\x8a';
      out_ += static_cast<char>(bytes.size());
      out_ += bytes;
    }
  }

  void PutLittle(uint64_t value, int bytes) {
    for (int i = 0; i < bytes; ++i) out_ += static_cast<char>((value >> (8 * i)) & 0xFF);
  }

  void PutText(std::string_view text) {
    out_ += 'X';
    PutLittle(text.size(), 4);
    out_ += text;
  }

  void PutGlobal(std::string_view module, std::string_view name) { out_ += fmt::format("c{}\n{}\n", module, name); }

  // Protocol 2 has no bytes opcode: torch.save (through Python's pickler) writes
  // `_codecs.encode(bytes.decode('latin1'), 'latin1')`.
  void PutBytes(std::string_view bytes) {
    PutGlobal("_codecs", "encode");
    PutText(Latin1ToUtf8(bytes));
    PutText("latin1");
    out_ += "\x86R";
  }

  llvm::Error PutTuple(const std::vector<Ref>& items) {
    if (items.empty()) {
      out_ += ')';
      return llvm::Error::success();
    }
    if (items.size() > 3) out_ += '(';
    for (const Ref& item : items)
      if (llvm::Error error = Put(*item)) return error;
    static constexpr char kSmallTuples[] = {'\x85', '\x86', '\x87'};
    out_ += items.size() <= 3 ? kSmallTuples[items.size() - 1] : 't';
    return llvm::Error::success();
  }

  void PutInts(const std::vector<int64_t>& values) {
    std::vector<Ref> items;
    for (int64_t value : values) items.push_back(Int(value));
    llvm::consumeError(PutTuple(items));  // integers always write
  }

  llvm::Error PutTensor(const TensorInfo& tensor) {
    std::string_view storage;
    for (const auto& [name, dtype] : kStorageClasses)
      if (dtype == tensor.dtype) storage = name;
    if (storage.empty()) {
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "torch.save has no storage of dtype %s",
                                     tensor.dtype.c_str());
    }
    PutGlobal("torch._utils", "_rebuild_tensor_v2");
    out_ += '(';
    out_ += '(';
    PutText("storage");
    PutGlobal("torch", storage);
    PutText(tensor.storage);
    PutText("cpu");
    PutInt(tensor.storage_elements);
    out_ += "tQ";  // the tuple, as a persistent id
    PutInt(tensor.offset);
    PutInts(tensor.shape);
    PutInts(tensor.stride);
    out_ += '\x89';  // requires_grad
    PutGlobal("collections", "OrderedDict");
    out_ += ")R";  // no backward hooks
    out_ += "tR";
    return llvm::Error::success();
  }

  // What NumPy's ndarray.__reduce__ gives: `_reconstruct(ndarray, (0,), b'b')`, then its state
  // (version 1, shape, dtype, Fortran order, the raw bytes) through BUILD.
  llvm::Error PutArray(const ArrayInfo& array) {
    if (!ArrayItemSize(array.dtype)) {
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "no NumPy dtype %s",
                                     array.dtype.c_str());
    }
    PutGlobal("numpy._core.multiarray", "_reconstruct");
    PutGlobal("numpy", "ndarray");
    PutInt(0);
    out_ += '\x85';
    PutBytes("b");
    out_ += "\x87R";
    out_ += '(';
    PutInt(1);
    PutInts(array.shape);
    PutGlobal("numpy", "dtype");
    PutText(array.dtype);
    out_ += "\x89\x88\x87R";  // (name, align=False, copy=True)
    out_ += '(';
    PutInt(3);
    PutText(array.dtype == "u1" || array.dtype == "b1" ? "|" : "<");
    out_ += "NNN";
    PutInt(-1);
    PutInt(-1);
    PutInt(0);
    out_ += "tb";
    out_ += '\x89';  // C order
    PutBytes(array.bytes);
    out_ += "tb";
    return llvm::Error::success();
  }

  std::string out_ = "\x80\x02";
};

// ---------------------------------------------------------------------------------------------
// Reader

class Reader {
 public:
  Reader(std::string_view bytes, int max_depth) : in_(bytes), max_depth_(max_depth) {}

  llvm::Expected<Ref> Run() {
    llvm::Expected<Ref> result = ReadAll();
    // A container given itself through the memo (`l.append(l)`) is a cycle of references that
    // would never be freed; no state_dict has one. Each is broken, and the pickle refused.
    if (BreakCycles()) {
      if (!result) llvm::consumeError(result.takeError());
      return Error("the pickle puts a container inside itself, which no saved state does");
    }
    return result;
  }

 private:
  llvm::Expected<Ref> ReadAll() {
    while (true) {
      if (pos_ >= in_.size()) return Error("the pickle ends before its STOP opcode");
      size_t at = pos_;
      unsigned char op = static_cast<unsigned char>(in_[pos_++]);
      if (op == '.') {
        if (stack_.size() != 1 || !marks_.empty()) return ErrorAt(at, "STOP with no single value on the stack");
        return stack_.back();
      }
      if (llvm::Error error = Step(op, at)) return error;
    }
  }

  // Adds `items` to `container` after its creation: the only way a pickle makes a cycle.
  void Extend(const Ref& container, std::vector<Ref> items) {
    for (Ref& item : items) container->items.push_back(std::move(item));
    extended_.push_back(container);
  }

  // Whether any container extended after its creation reaches itself; if so, every such
  // container is emptied so that the cycles' memory is freed. One depth-first walk over what
  // they reach, without recursion.
  bool BreakCycles() {
    enum class Mark { kOnPath, kDone };
    std::map<const Object*, Mark> marks;
    bool cycle = false;
    for (const std::weak_ptr<Object>& weak : extended_) {
      Ref start = weak.lock();
      if (!start || marks.count(start.get()) != 0) continue;
      std::vector<std::pair<const Object*, size_t>> path{{start.get(), 0}};
      marks[start.get()] = Mark::kOnPath;
      while (!path.empty() && !cycle) {
        auto& [object, next] = path.back();
        if (next == object->items.size()) {
          marks[object] = Mark::kDone;
          path.pop_back();
          continue;
        }
        const Object* child = object->items[next++].get();
        auto found = marks.find(child);
        if (found == marks.end()) {
          marks[child] = Mark::kOnPath;
          path.emplace_back(child, 0);
        } else if (found->second == Mark::kOnPath) {
          cycle = true;
        }
      }
      if (cycle) break;
    }
    if (cycle) {
      for (const std::weak_ptr<Object>& weak : extended_)
        if (Ref container = weak.lock()) container->items.clear();
    }
    return cycle;
  }

  llvm::Error ErrorAt(size_t at, const std::string& what) const {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "byte %zu: %s", at, what.c_str());
  }
  llvm::Error Error(const std::string& what) const { return ErrorAt(pos_, what); }

  bool Take(size_t count, std::string_view& out) {
    if (in_.size() - pos_ < count) return false;
    out = in_.substr(pos_, count);
    pos_ += count;
    return true;
  }

  std::optional<uint64_t> Little(size_t count) {
    std::string_view bytes;
    if (!Take(count, bytes)) return std::nullopt;
    uint64_t value = 0;
    for (size_t i = 0; i < count; ++i) value |= uint64_t{static_cast<unsigned char>(bytes[i])} << (8 * i);
    return value;
  }

  std::optional<std::string_view> Line() {
    size_t end = in_.find('\n', pos_);
    if (end == std::string_view::npos) return std::nullopt;
    std::string_view line = in_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return line;
  }

  void Push(Ref value) { stack_.push_back(std::move(value)); }

  llvm::Expected<Ref> Pop(size_t at) {
    if (stack_.empty() || (!marks_.empty() && stack_.size() == marks_.back()))
      return ErrorAt(at, "an opcode needs a value, the stack has none");
    Ref value = std::move(stack_.back());
    stack_.pop_back();
    return value;
  }

  // The values above the topmost mark, which is removed.
  llvm::Expected<std::vector<Ref>> PopMark(size_t at) {
    if (marks_.empty()) return ErrorAt(at, "an opcode needs a MARK, there is none");
    size_t mark = marks_.back();
    marks_.pop_back();
    std::vector<Ref> items(std::make_move_iterator(stack_.begin() + static_cast<ptrdiff_t>(mark)),
                           std::make_move_iterator(stack_.end()));
    stack_.resize(mark);
    return items;
  }

  llvm::Error PushText(size_t at, size_t length_bytes, Object::Kind kind) {
    std::optional<uint64_t> length = Little(length_bytes);
    std::string_view text;
    if (!length || *length > in_.size() || !Take(static_cast<size_t>(*length), text))
      return ErrorAt(at, "a string runs past the end of the pickle");
    Ref value = Make(kind);
    value->text = std::string(text);
    if (kind == Object::Kind::kString) {
      const auto* begin = reinterpret_cast<const llvm::UTF8*>(value->text.data());
      if (!llvm::isLegalUTF8String(&begin, begin + value->text.size()))
        return ErrorAt(at, "a string is not UTF-8");
    }
    Push(std::move(value));
    return llvm::Error::success();
  }

  llvm::Error Memoize(size_t at, uint64_t index) {
    if (stack_.empty()) return ErrorAt(at, "nothing to memoise");
    if (index > in_.size()) return ErrorAt(at, "a memo index beyond any this pickle can fill");
    memo_[index] = stack_.back();
    return llvm::Error::success();
  }

  llvm::Error Recall(size_t at, uint64_t index) {
    auto found = memo_.find(index);
    if (found == memo_.end()) return ErrorAt(at, fmt::format("memo entry {} was never stored", index));
    Push(found->second);
    return llvm::Error::success();
  }

  llvm::Error PushGlobal(size_t at, std::string name) {
    // The name is the file's text: shown only when it is a dotted Python name.
    const bool printable = !name.empty() && name.size() <= 200 && std::all_of(name.begin(), name.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
    });
    if (!printable) return ErrorAt(at, "the pickle names a callable whose name is not a Python name");
    if (!Allowed(name)) {
      return ErrorAt(at, fmt::format("the pickle names `{}`, which could run code; Accel reads tensors, "
                                     "numbers, strings and containers only, and never runs a pickle",
                                     name));
    }
    Ref callable = Make(Object::Kind::kCallable);
    callable->text = std::move(name);
    Push(std::move(callable));
    return llvm::Error::success();
  }

  static std::optional<std::vector<int64_t>> Ints(const Object& tuple) {
    if (tuple.kind != Object::Kind::kTuple) return std::nullopt;
    std::vector<int64_t> values;
    for (const Ref& item : tuple.items) {
      if (item->kind != Object::Kind::kInt) return std::nullopt;
      values.push_back(item->integer);
    }
    return values;
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
  llvm::Error PersistentLoad(size_t at, const Object& id) {
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
    Push(std::move(storage));
    return llvm::Error::success();
  }

  llvm::Error Step(unsigned char op, size_t at) {
    switch (op) {
      case 0x80: {  // PROTO
        std::optional<uint64_t> version = Little(1);
        if (!version || *version < 2 || *version > 5)
          return ErrorAt(at, "a pickle protocol other than 2 to 5");
        return llvm::Error::success();
      }
      case 0x95:  // FRAME: a length hint
        return Little(8) ? llvm::Error::success() : ErrorAt(at, "a truncated FRAME");
      case '(':
        if (marks_.size() >= static_cast<size_t>(max_depth_))
          return ErrorAt(at, fmt::format("nested deeper than {} levels", max_depth_));
        marks_.push_back(stack_.size());
        return llvm::Error::success();
      case '0': {  // POP
        llvm::Expected<Ref> value = Pop(at);
        return value ? llvm::Error::success() : value.takeError();
      }
      case '1': {  // POP_MARK
        llvm::Expected<std::vector<Ref>> items = PopMark(at);
        return items ? llvm::Error::success() : items.takeError();
      }
      case 'N':
        Push(Make(Object::Kind::kNone));
        return llvm::Error::success();
      case 0x88:
      case 0x89:
        Push(pickle::Bool(op == 0x88));
        return llvm::Error::success();
      case 'J': {
        std::optional<uint64_t> value = Little(4);
        if (!value) return ErrorAt(at, "a truncated integer");
        Push(Int(static_cast<int32_t>(static_cast<uint32_t>(*value))));
        return llvm::Error::success();
      }
      case 'K':
      case 'M': {
        std::optional<uint64_t> value = Little(op == 'K' ? 1 : 2);
        if (!value) return ErrorAt(at, "a truncated integer");
        Push(Int(static_cast<int64_t>(*value)));
        return llvm::Error::success();
      }
      case 0x8a: {  // LONG1
        std::optional<uint64_t> length = Little(1);
        if (!length || *length > 8) return ErrorAt(at, "an integer beyond 64 bits");
        std::optional<uint64_t> bits = *length == 0 ? 0 : Little(static_cast<size_t>(*length));
        if (!bits) return ErrorAt(at, "a truncated integer");
        int64_t value = static_cast<int64_t>(*bits);
        if (*length > 0 && *length < 8 && (*bits >> (8 * *length - 1)) & 1)
          value = static_cast<int64_t>(*bits | (~uint64_t{0} << (8 * *length)));  // sign-extend
        Push(Int(value));
        return llvm::Error::success();
      }
      case 'G': {
        std::string_view bytes;
        if (!Take(8, bytes)) return ErrorAt(at, "a truncated float");
        uint64_t bits = 0;
        for (char c : bytes) bits = (bits << 8) | static_cast<unsigned char>(c);
        double value;
        std::memcpy(&value, &bits, sizeof value);
        Push(Float(value));
        return llvm::Error::success();
      }
      case 'X':
        return PushText(at, 4, Object::Kind::kString);
      case 0x8c:  // SHORT_BINUNICODE
        return PushText(at, 1, Object::Kind::kString);
      case 0x8d:  // BINUNICODE8
        return PushText(at, 8, Object::Kind::kString);
      case 'B':
        return PushText(at, 4, Object::Kind::kBytes);
      case 'C':  // SHORT_BINBYTES
        return PushText(at, 1, Object::Kind::kBytes);
      case 0x8e:  // BINBYTES8
        return PushText(at, 8, Object::Kind::kBytes);
      case ')':
        Push(Make(Object::Kind::kTuple));
        return llvm::Error::success();
      case 't': {
        llvm::Expected<std::vector<Ref>> items = PopMark(at);
        if (!items) return items.takeError();
        Push(Tuple(std::move(*items)));
        return llvm::Error::success();
      }
      case 0x85:
      case 0x86:
      case 0x87: {
        std::vector<Ref> items(op - 0x84);
        for (size_t i = items.size(); i-- > 0;) {
          llvm::Expected<Ref> item = Pop(at);
          if (!item) return item.takeError();
          items[i] = std::move(*item);
        }
        Push(Tuple(std::move(items)));
        return llvm::Error::success();
      }
      case ']':
        Push(Make(Object::Kind::kList));
        return llvm::Error::success();
      case 'l': {
        llvm::Expected<std::vector<Ref>> items = PopMark(at);
        if (!items) return items.takeError();
        Push(List(std::move(*items)));
        return llvm::Error::success();
      }
      case 'a':
      case 'e': {
        std::vector<Ref> items;
        if (op == 'a') {
          llvm::Expected<Ref> item = Pop(at);
          if (!item) return item.takeError();
          items.push_back(std::move(*item));
        } else {
          llvm::Expected<std::vector<Ref>> popped = PopMark(at);
          if (!popped) return popped.takeError();
          items = std::move(*popped);
        }
        if (stack_.empty() || stack_.back()->kind != Object::Kind::kList)
          return ErrorAt(at, "APPEND to something that is not a list");
        Extend(stack_.back(), std::move(items));
        return llvm::Error::success();
      }
      case '}':
        Push(Make(Object::Kind::kDict));
        return llvm::Error::success();
      case 'd':
      case 's':
      case 'u': {
        std::vector<Ref> items;
        if (op == 's') {
          llvm::Expected<Ref> value = Pop(at);
          if (!value) return value.takeError();
          llvm::Expected<Ref> key = Pop(at);
          if (!key) return key.takeError();
          items = {std::move(*key), std::move(*value)};
        } else {
          llvm::Expected<std::vector<Ref>> popped = PopMark(at);
          if (!popped) return popped.takeError();
          items = std::move(*popped);
        }
        if (items.size() % 2 != 0) return ErrorAt(at, "a dict of an odd number of keys and values");
        if (op == 'd') {
          Push(Make(Object::Kind::kDict));
        } else if (stack_.empty() || stack_.back()->kind != Object::Kind::kDict) {
          return ErrorAt(at, "SETITEM on something that is not a dict");
        }
        Extend(stack_.back(), std::move(items));
        return llvm::Error::success();
      }
      case 'q':
      case 'r': {
        std::optional<uint64_t> index = Little(op == 'q' ? 1 : 4);
        if (!index) return ErrorAt(at, "a truncated memo index");
        return Memoize(at, *index);
      }
      case 0x94:  // MEMOIZE
        return Memoize(at, memo_.size());
      case 'h':
      case 'j': {
        std::optional<uint64_t> index = Little(op == 'h' ? 1 : 4);
        if (!index) return ErrorAt(at, "a truncated memo index");
        return Recall(at, *index);
      }
      case 'c': {
        std::optional<std::string_view> module = Line();
        std::optional<std::string_view> name = module ? Line() : std::nullopt;
        if (!name) return ErrorAt(at, "a truncated GLOBAL");
        return PushGlobal(at, fmt::format("{}.{}", *module, *name));
      }
      case 0x93: {  // STACK_GLOBAL
        llvm::Expected<Ref> name = Pop(at);
        if (!name) return name.takeError();
        llvm::Expected<Ref> module = Pop(at);
        if (!module) return module.takeError();
        if ((*name)->kind != Object::Kind::kString || (*module)->kind != Object::Kind::kString)
          return ErrorAt(at, "STACK_GLOBAL of something other than two strings");
        return PushGlobal(at, fmt::format("{}.{}", (*module)->text, (*name)->text));
      }
      case 'R': {
        llvm::Expected<Ref> args = Pop(at);
        if (!args) return args.takeError();
        llvm::Expected<Ref> callable = Pop(at);
        if (!callable) return callable.takeError();
        llvm::Expected<Ref> value = Reduce(at, **callable, **args);
        if (!value) return value.takeError();
        Push(std::move(*value));
        return llvm::Error::success();
      }
      case 'b': {
        llvm::Expected<Ref> state = Pop(at);
        if (!state) return state.takeError();
        if (stack_.empty()) return ErrorAt(at, "BUILD with no object");
        return Build(at, *stack_.back(), **state);
      }
      case 'Q': {
        llvm::Expected<Ref> id = Pop(at);
        if (!id) return id.takeError();
        return PersistentLoad(at, **id);
      }
      default:
        return ErrorAt(at, fmt::format("opcode 0x{:02x} is not one this reader takes", op));
    }
  }

  std::string_view in_;
  size_t pos_ = 0;
  int max_depth_;
  std::vector<Ref> stack_;
  std::vector<size_t> marks_;
  std::map<uint64_t, Ref> memo_;
  std::vector<std::weak_ptr<Object>> extended_;  // Extend's containers, for BreakCycles
};

}  // namespace

Object::~Object() {
  std::vector<Ref> pending = std::move(items);
  while (!pending.empty()) {
    Ref object = std::move(pending.back());
    pending.pop_back();
    // The last holder takes the children over, so the object's own destructor has none.
    if (object.use_count() == 1) {
      for (Ref& child : object->items) pending.push_back(std::move(child));
      object->items.clear();
    }
  }
}

const Object* Object::Find(std::string_view key) const {
  if (kind != Kind::kDict) return nullptr;
  for (size_t i = 0; i + 1 < items.size(); i += 2)
    if (items[i]->kind == Kind::kString && items[i]->text == key) return items[i + 1].get();
  return nullptr;
}

const Object* Object::Find(int64_t key) const {
  if (kind != Kind::kDict) return nullptr;
  for (size_t i = 0; i + 1 < items.size(); i += 2)
    if (items[i]->kind == Kind::kInt && items[i]->integer == key) return items[i + 1].get();
  return nullptr;
}

Ref None() { return Make(Object::Kind::kNone); }
Ref Bool(bool value) {
  Ref object = Make(Object::Kind::kBool);
  object->boolean = value;
  return object;
}
Ref Int(int64_t value) {
  Ref object = Make(Object::Kind::kInt);
  object->integer = value;
  return object;
}
Ref Float(double value) {
  Ref object = Make(Object::Kind::kFloat);
  object->number = value;
  return object;
}
Ref String(std::string value) {
  Ref object = Make(Object::Kind::kString);
  object->text = std::move(value);
  return object;
}
Ref Bytes(std::string value) {
  Ref object = Make(Object::Kind::kBytes);
  object->text = std::move(value);
  return object;
}
Ref Tuple(std::vector<Ref> items) {
  Ref object = Make(Object::Kind::kTuple);
  object->items = std::move(items);
  return object;
}
Ref List(std::vector<Ref> items) {
  Ref object = Make(Object::Kind::kList);
  object->items = std::move(items);
  return object;
}
Ref Dict(std::vector<std::pair<Ref, Ref>> entries) {
  Ref object = Make(Object::Kind::kDict);
  for (auto& [key, value] : entries) {
    object->items.push_back(std::move(key));
    object->items.push_back(std::move(value));
  }
  return object;
}
Ref Tensor(TensorInfo info) {
  Ref object = Make(Object::Kind::kTensor);
  object->tensor = std::move(info);
  return object;
}
Ref Array(ArrayInfo info) {
  Ref object = Make(Object::Kind::kArray);
  object->array = std::move(info);
  return object;
}

std::string_view KindName(Object::Kind kind) {
  switch (kind) {
    case Object::Kind::kNone:
      return "None";
    case Object::Kind::kBool:
      return "bool";
    case Object::Kind::kInt:
      return "int";
    case Object::Kind::kFloat:
      return "float";
    case Object::Kind::kString:
      return "str";
    case Object::Kind::kBytes:
      return "bytes";
    case Object::Kind::kTuple:
      return "tuple";
    case Object::Kind::kList:
      return "list";
    case Object::Kind::kDict:
      return "dict";
    case Object::Kind::kTensor:
      return "torch.Tensor";
    case Object::Kind::kArray:
      return "numpy.ndarray";
    case Object::Kind::kCallable:
      return "callable";
    case Object::Kind::kStorage:
      return "storage";
    case Object::Kind::kDtype:
      return "numpy.dtype";
  }
  return "?";
}

llvm::Expected<std::string> Write(const Object& value) {
  Writer writer;
  if (llvm::Error error = writer.Put(value)) return error;
  return std::move(writer).Finish();
}

llvm::Expected<Ref> Read(std::string_view bytes, int max_depth) { return Reader(bytes, max_depth).Run(); }

}  // namespace accel::rt::checkpoint::pickle
