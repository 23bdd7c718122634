#include "runtime/distributed/object_codec.h"

#include <ATen/ATen.h>

#include <cstring>

#include <fmt/format.h>

namespace accel::rt::distributed {
namespace {

// Format version in the first byte, so a rank built from another version fails clearly.
constexpr uint8_t kFormat = 1;
// Deep enough for any real batch; bounds the decoder's recursion on malformed bytes.
constexpr int kMaxDepth = 256;

// The dtypes a payload may carry (the ones Accel's runtime produces).
bool IsSupportedDtype(at::ScalarType type) {
  switch (type) {
    case at::kFloat:
    case at::kDouble:
    case at::kHalf:
    case at::kBFloat16:
    case at::kByte:
    case at::kChar:
    case at::kShort:
    case at::kInt:
    case at::kLong:
    case at::kBool:
      return true;
    default:
      return false;
  }
}

class Writer {
 public:
  void Byte(uint8_t value) { out_.push_back(static_cast<char>(value)); }
  void Int(int64_t value) { Raw(&value, sizeof(value)); }
  void Float(double value) { Raw(&value, sizeof(value)); }
  void Text(const std::string& text) {
    Int(static_cast<int64_t>(text.size()));
    out_.append(text);
  }
  void Raw(const void* data, size_t size) { out_.append(static_cast<const char*>(data), size); }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  uint8_t Byte() { return static_cast<uint8_t>(*Take(1)); }
  int64_t Int() {
    int64_t value = 0;
    std::memcpy(&value, Take(sizeof(value)), sizeof(value));
    return value;
  }
  double Float() {
    double value = 0;
    std::memcpy(&value, Take(sizeof(value)), sizeof(value));
    return value;
  }
  std::string Text() {
    size_t length = Length();
    return std::string(Take(length), length);
  }
  size_t Length() {
    int64_t length = Int();
    if (length < 0 || static_cast<uint64_t>(length) > bytes_.size() - offset_)
      Corrupt("a length past the end");
    return static_cast<size_t>(length);
  }
  const char* Take(size_t size) {
    if (size > bytes_.size() - offset_) Corrupt("truncated data");
    const char* at = bytes_.data() + offset_;
    offset_ += size;
    return at;
  }
  bool AtEnd() const { return offset_ == bytes_.size(); }
  [[noreturn]] void Corrupt(const char* what) const {
    throw OperationError(
        fmt::format("object payload is corrupt at byte {} of {}: {}", offset_, bytes_.size(), what));
  }

 private:
  std::string_view bytes_;
  size_t offset_ = 0;
};

void Encode(const Value& value, Writer& out) {
  out.Byte(static_cast<uint8_t>(value.kind()));
  switch (value.kind()) {
    case Value::Kind::kNone:
      return;
    case Value::Kind::kBool:
      out.Byte(value.as_bool() ? 1 : 0);
      return;
    case Value::Kind::kInt:
      out.Int(value.as_int());
      return;
    case Value::Kind::kFloat:
      out.Float(value.as_float());
      return;
    case Value::Kind::kString:
      out.Text(value.as_string());
      return;
    case Value::Kind::kTensor: {
      // Refused here, before anything is sent, so that no peer receives what it cannot decode.
      if (!value.tensor().defined()) throw OperationError("an undefined tensor cannot be sent as an object");
      if (!IsSupportedDtype(value.tensor().scalar_type())) {
        throw OperationError(
            fmt::format("a {} tensor cannot be sent as an object; convert it to one of float16/32/64, "
                        "bfloat16, int8/16/32/64, uint8 or bool",
                        c10::toString(value.tensor().scalar_type())));
      }
      at::Tensor tensor = value.tensor().detach().cpu().contiguous();
      out.Byte(static_cast<uint8_t>(tensor.scalar_type()));
      out.Int(tensor.dim());
      for (int64_t size : tensor.sizes()) out.Int(size);
      out.Int(static_cast<int64_t>(tensor.nbytes()));
      if (tensor.nbytes() > 0) out.Raw(tensor.data_ptr(), tensor.nbytes());
      return;
    }
    default:
      break;
  }
  if (value.kind() == Value::Kind::kNamedTuple) out.Text(value.type_name());
  out.Int(static_cast<int64_t>(value.items().size()));
  for (size_t i = 0; i < value.items().size(); ++i) {
    if (!value.keys().empty()) out.Text(value.keys()[i]);
    Encode(value.items()[i], out);
  }
}

at::ScalarType DecodeDtype(Reader& in) {
  auto type = static_cast<at::ScalarType>(in.Byte());
  if (!IsSupportedDtype(type)) in.Corrupt("unknown tensor dtype");
  return type;
}

Value Decode(Reader& in, int depth) {
  if (depth > kMaxDepth) in.Corrupt("nesting deeper than 256 levels");
  auto kind = static_cast<Value::Kind>(in.Byte());
  switch (kind) {
    case Value::Kind::kNone:
      return Value();
    case Value::Kind::kBool:
      return Value::Bool(in.Byte() != 0);
    case Value::Kind::kInt:
      return Value::Int(in.Int());
    case Value::Kind::kFloat:
      return Value::Float(in.Float());
    case Value::Kind::kString:
      return Value::String(in.Text());
    case Value::Kind::kTensor: {
      at::ScalarType dtype = DecodeDtype(in);
      int64_t dims = in.Int();
      if (dims < 0 || dims > 64) in.Corrupt("a tensor with more than 64 dimensions");
      std::vector<int64_t> sizes;
      int64_t numel = 1;
      for (int64_t d = 0; d < dims; ++d) {
        int64_t size = in.Int();
        if (size < 0 || (size > 0 && numel > (int64_t{1} << 50) / size))
          in.Corrupt("a tensor dimension out of range");
        sizes.push_back(size);
        numel *= size;
      }
      size_t nbytes = in.Length();
      if (static_cast<int64_t>(nbytes) != numel * static_cast<int64_t>(c10::elementSize(dtype))) {
        in.Corrupt("tensor bytes do not match its shape and dtype");
      }
      at::Tensor tensor = at::empty(sizes, at::TensorOptions().dtype(dtype));
      const char* bytes = in.Take(nbytes);
      // An empty tensor has no storage: its data pointer is null, which memcpy must not see.
      if (nbytes > 0) std::memcpy(tensor.data_ptr(), bytes, nbytes);
      return Value::Tensor(std::move(tensor));
    }
    case Value::Kind::kList:
    case Value::Kind::kTuple:
    case Value::Kind::kNamedTuple:
    case Value::Kind::kDict: {
      std::string type_name = kind == Value::Kind::kNamedTuple ? in.Text() : "";
      int64_t count = in.Int();
      // Every element takes at least one byte: a count beyond the bytes left is corrupt.
      if (count < 0 || count > (int64_t{1} << 40)) in.Corrupt("an element count out of range");
      std::vector<std::string> keys;
      std::vector<Value> items;
      for (int64_t i = 0; i < count; ++i) {
        if (kind == Value::Kind::kNamedTuple || kind == Value::Kind::kDict) keys.push_back(in.Text());
        items.push_back(Decode(in, depth + 1));
      }
      if (kind == Value::Kind::kList) return Value::List(std::move(items));
      if (kind == Value::Kind::kTuple) return Value::Tuple(std::move(items));
      if (kind == Value::Kind::kNamedTuple)
        return Value::NamedTuple(type_name, std::move(keys), std::move(items));
      std::vector<std::pair<std::string, Value>> entries;
      for (size_t i = 0; i < keys.size(); ++i) entries.emplace_back(std::move(keys[i]), std::move(items[i]));
      return Value::Dict(std::move(entries));
    }
  }
  in.Corrupt("unknown value kind");
}

}  // namespace

std::string EncodeValue(const Value& value) {
  Writer out;
  out.Byte(kFormat);
  Encode(value, out);
  return out.Take();
}

Value DecodeValue(std::string_view bytes) {
  Reader in(bytes);
  if (bytes.empty() || in.Byte() != kFormat) in.Corrupt("not an object payload of this Accel version");
  Value value = Decode(in, 0);
  if (!in.AtEnd()) in.Corrupt("bytes left after the value");
  return value;
}

}  // namespace accel::rt::distributed
