#include "runtime/distributed/value.h"

#include <ATen/ATen.h>

#include <unordered_set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/tensor/scalar_type.h"

namespace accel::rt::distributed {
namespace {

std::string Quote(const std::string& text) { return fmt::format("\"{}\"", text); }

void Render(const Value& value, bool layout, bool dims_only, std::string& out) {
  switch (value.kind()) {
    case Value::Kind::kNone:
      out += layout ? "none" : "None";
      return;
    case Value::Kind::kBool:
      out += layout ? "bool" : (value.as_bool() ? "True" : "False");
      return;
    case Value::Kind::kInt:
      out += layout ? "int" : std::to_string(value.as_int());
      return;
    case Value::Kind::kFloat:
      out += layout ? "float" : fmt::format("{}", value.as_float());
      return;
    case Value::Kind::kString:
      out += layout ? "str" : Quote(value.as_string());
      return;
    case Value::Kind::kTensor: {
      const at::Tensor& tensor = value.tensor();
      if (!tensor.defined()) {
        out += "undefined tensor";
        return;
      }
      // What torch prints (`float32`, `bfloat16`), from the dtype table.
      out += rt::tensor::TorchName(tensor.scalar_type());
      if (dims_only) {
        out += fmt::format("[{} dims]", tensor.dim());
      } else {
        out += fmt::format("[{}]", fmt::join(tensor.sizes(), ", "));
      }
      return;
    }
    default:
      break;
  }
  const char* open = value.kind() == Value::Kind::kList   ? "["
                     : value.kind() == Value::Kind::kDict ? "{"
                                                          : "(";
  const char* close = value.kind() == Value::Kind::kList   ? "]"
                      : value.kind() == Value::Kind::kDict ? "}"
                                                           : ")";
  if (value.kind() == Value::Kind::kNamedTuple) out += value.type_name();
  out += open;
  for (size_t i = 0; i < value.items().size(); ++i) {
    if (i > 0) out += ", ";
    if (value.kind() == Value::Kind::kDict) out += Quote(value.keys()[i]) + ": ";
    if (value.kind() == Value::Kind::kNamedTuple) out += value.keys()[i] + "=";
    Render(value.items()[i], layout, dims_only, out);
  }
  if (value.kind() == Value::Kind::kTuple && value.items().size() == 1) out += ",";
  out += close;
}

void Visit(const Value& value, const std::string& path,
           const std::function<void(const std::string&, const at::Tensor&)>& visit) {
  if (value.is_tensor()) {
    visit(path, value.tensor());
    return;
  }
  for (size_t i = 0; i < value.items().size(); ++i) Visit(value.items()[i], ChildPath(path, value, i), visit);
}

}  // namespace

Value Value::Bool(bool value) {
  Value v;
  v.kind_ = Kind::kBool;
  v.bool_ = value;
  return v;
}

Value Value::Int(int64_t value) {
  Value v;
  v.kind_ = Kind::kInt;
  v.int_ = value;
  return v;
}

Value Value::Float(double value) {
  Value v;
  v.kind_ = Kind::kFloat;
  v.float_ = value;
  return v;
}

Value Value::String(std::string value) {
  Value v;
  v.kind_ = Kind::kString;
  v.text_ = std::move(value);
  return v;
}

Value Value::Tensor(at::Tensor tensor) {
  Value v;
  v.kind_ = Kind::kTensor;
  v.tensor_ = std::move(tensor);
  return v;
}

Value Value::List(std::vector<Value> items) {
  Value v;
  v.kind_ = Kind::kList;
  v.items_ = std::move(items);
  return v;
}

Value Value::Tuple(std::vector<Value> items) {
  Value v;
  v.kind_ = Kind::kTuple;
  v.items_ = std::move(items);
  return v;
}

Value Value::NamedTuple(std::string type_name, std::vector<std::string> fields, std::vector<Value> items) {
  if (fields.size() != items.size()) {
    throw OperationError(
        fmt::format("named tuple `{}` has {} fields but {} values", type_name, fields.size(), items.size()));
  }
  Value v;
  v.kind_ = Kind::kNamedTuple;
  v.text_ = std::move(type_name);
  v.keys_ = std::move(fields);
  v.items_ = std::move(items);
  return v;
}

Value Value::Dict(std::vector<std::pair<std::string, Value>> entries) {
  Value v;
  v.kind_ = Kind::kDict;
  std::unordered_set<std::string> seen;
  for (auto& [key, item] : entries) {
    if (!seen.insert(key).second) throw OperationError(fmt::format("dict has the key \"{}\" twice", key));
    v.keys_.push_back(key);
    v.items_.push_back(std::move(item));
  }
  return v;
}

bool Value::as_bool() const {
  if (kind_ != Kind::kBool) throw OperationError(fmt::format("expected a bool, got {}", KindName(kind_)));
  return bool_;
}

int64_t Value::as_int() const {
  if (kind_ != Kind::kInt) throw OperationError(fmt::format("expected an int, got {}", KindName(kind_)));
  return int_;
}

double Value::as_float() const {
  if (kind_ != Kind::kFloat) throw OperationError(fmt::format("expected a float, got {}", KindName(kind_)));
  return float_;
}

const std::string& Value::as_string() const {
  if (kind_ != Kind::kString) throw OperationError(fmt::format("expected a string, got {}", KindName(kind_)));
  return text_;
}

const at::Tensor& Value::tensor() const {
  if (kind_ != Kind::kTensor) throw OperationError(fmt::format("expected a tensor, got {}", KindName(kind_)));
  return tensor_;
}

const Value* Value::Find(std::string_view key) const {
  for (size_t i = 0; i < keys_.size(); ++i) {
    if (keys_[i] == key) return &items_[i];
  }
  return nullptr;
}

Value Value::WithItems(std::vector<Value> items) const {
  if (!is_container() || items.size() != items_.size()) {
    throw OperationError(fmt::format("cannot rebuild a {} of {} elements from {} elements", KindName(kind_),
                                     items_.size(), items.size()));
  }
  Value v = *this;
  v.items_ = std::move(items);
  return v;
}

const char* Value::KindName(Kind kind) {
  switch (kind) {
    case Kind::kNone:
      return "none";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "string";
    case Kind::kTensor:
      return "tensor";
    case Kind::kList:
      return "list";
    case Kind::kTuple:
      return "tuple";
    case Kind::kNamedTuple:
      return "named tuple";
    case Kind::kDict:
      return "dict";
  }
  return "value";
}

std::string ChildPath(const std::string& parent, const Value& container, size_t index) {
  if (container.kind() == Value::Kind::kDict)
    return fmt::format("{}[\"{}\"]", parent, container.keys()[index]);
  if (container.kind() == Value::Kind::kNamedTuple)
    return fmt::format("{}.{}", parent, container.keys()[index]);
  return fmt::format("{}[{}]", parent, index);
}

void ForEachTensor(const Value& value,
                   const std::function<void(const std::string&, const at::Tensor&)>& visit) {
  Visit(value, "", visit);
}

std::string Describe(const Value& value) {
  std::string out;
  Render(value, /*layout=*/false, /*dims_only=*/false, out);
  return out;
}

std::string Layout(const Value& value, bool dims_only) {
  std::string out;
  Render(value, /*layout=*/true, dims_only, out);
  return out;
}

bool Identical(const Value& a, const Value& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kBool:
      return a.as_bool() == b.as_bool();
    case Value::Kind::kInt:
      return a.as_int() == b.as_int();
    case Value::Kind::kFloat:
      return a.as_float() == b.as_float();
    case Value::Kind::kString:
      return a.as_string() == b.as_string();
    case Value::Kind::kTensor: {
      const at::Tensor& x = a.tensor();
      const at::Tensor& y = b.tensor();
      return x.scalar_type() == y.scalar_type() && x.sizes() == y.sizes() && at::equal(x, y);
    }
    default:
      break;
  }
  if (a.keys() != b.keys() || a.type_name() != b.type_name() || a.items().size() != b.items().size())
    return false;
  for (size_t i = 0; i < a.items().size(); ++i) {
    if (!Identical(a.items()[i], b.items()[i])) return false;
  }
  return true;
}

}  // namespace accel::rt::distributed
