// The pickle writer: a tree of values as the protocol-2 bytes torch.save gives them, so that
// `torch.load(weights_only=True)` reads what `accelrun export-state` writes. Apart from the
// reader because it shares nothing with the opcode machine but the names of dtypes.
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "runtime/checkpoint/torch_pickle_internal.h"

namespace accel::rt::checkpoint::pickle {
namespace {

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

  void PutGlobal(std::string_view module, std::string_view name) {
    out_ += fmt::format("c{}\n{}\n", module, name);
  }

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

}  // namespace

llvm::Expected<std::string> Write(const Object& value) {
  Writer writer;
  if (llvm::Error error = writer.Put(value)) return error;
  return std::move(writer).Finish();
}

}  // namespace accel::rt::checkpoint::pickle
