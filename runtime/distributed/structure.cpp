#include "runtime/distributed/structure.h"

#include <ATen/ATen.h>

#include <algorithm>

#include <fmt/format.h>

namespace accel::rt::distributed {
namespace {

Value Apply(const Value& data, const std::function<Value(const Value&)>& func, const ApplyOptions& options,
            const std::string& path) {
  if (data.is_container()) {
    std::vector<Value> items;
    items.reserve(data.items().size());
    for (size_t i = 0; i < data.items().size(); ++i) {
      items.push_back(Apply(data.items()[i], func, options, ChildPath(path, data, i)));
    }
    return data.WithItems(std::move(items));
  }
  if (options.accepts(data)) return func(data);
  if (options.error_on_other_type) {
    throw OperationError(
        fmt::format("{}: the leaf at {} is a {}; only nested lists/tuples/dicts of tensors "
                    "are supported",
                    options.function_name, path.empty() ? "the top" : path, Value::KindName(data.kind())));
  }
  return data;
}

bool IsSkipped(const std::string& key, const std::vector<std::string>& skip_keys) {
  return std::find(skip_keys.begin(), skip_keys.end(), key) != skip_keys.end();
}

// Python's slice.indices(): clamps and resolves negative bounds against `length`.
void ResolveSlice(int64_t length, int64_t step, int64_t& start, int64_t& stop) {
  auto clamp = [&](int64_t index) {
    if (index < 0) index += length;
    return std::clamp<int64_t>(index, 0, length);
  };
  start = clamp(start);
  stop = std::max(clamp(stop), start);
  (void)step;
}

Value ListifyTensor(const at::Tensor& tensor) {
  if (tensor.dim() == 0) {
    if (tensor.scalar_type() == at::kBool) return Value::Bool(tensor.item<bool>());
    if (at::isIntegralType(tensor.scalar_type(), /*includeBool=*/false))
      return Value::Int(tensor.item<int64_t>());
    return Value::Float(tensor.item<double>());
  }
  std::vector<Value> items;
  items.reserve(static_cast<size_t>(tensor.size(0)));
  for (int64_t i = 0; i < tensor.size(0); ++i) items.push_back(ListifyTensor(tensor[i]));
  return Value::List(std::move(items));
}

}  // namespace

Value RecursivelyApply(const Value& data, const std::function<Value(const Value&)>& func,
                       const ApplyOptions& options) {
  return Apply(data, func, options, "");
}

Value SendToDevice(const Value& data, const c10::Device& device, bool non_blocking,
                   const std::vector<std::string>& skip_keys) {
  if (data.is_tensor()) return Value::Tensor(data.tensor().to(device, non_blocking));
  if (!data.is_container()) return data;
  std::vector<Value> items;
  items.reserve(data.items().size());
  for (size_t i = 0; i < data.items().size(); ++i) {
    bool skip = data.kind() == Value::Kind::kDict && IsSkipped(data.keys()[i], skip_keys);
    items.push_back(skip ? data.items()[i] : SendToDevice(data.items()[i], device, non_blocking, skip_keys));
  }
  return data.WithItems(std::move(items));
}

Value SliceTensors(const Value& data, int64_t start, int64_t stop, int64_t step) {
  if (step <= 0) throw OperationError(fmt::format("slice_tensors: the step must be positive, got {}", step));
  return RecursivelyApply(data, [&](const Value& leaf) {
    const at::Tensor& tensor = leaf.tensor();
    if (tensor.dim() == 0) throw OperationError("slice_tensors: a 0-dim tensor cannot be sliced");
    int64_t first = start;
    int64_t last = stop;
    ResolveSlice(tensor.size(0), step, first, last);
    return Value::Tensor(tensor.slice(0, first, last, step));
  });
}

Value Concatenate(const std::vector<Value>& data, int64_t dim) {
  if (data.empty()) throw OperationError("concatenate: the list of structures is empty");
  const Value& first = data[0];
  if (first.is_container()) {
    std::vector<Value> items;
    for (size_t i = 0; i < first.items().size(); ++i) {
      std::vector<Value> column;
      column.reserve(data.size());
      for (size_t k = 0; k < data.size(); ++k) {
        const Value& element = data[k];
        if (first.kind() == Value::Kind::kDict) {
          const Value* found = element.Find(first.keys()[i]);
          if (found == nullptr) {
            throw OperationError(fmt::format("concatenate: element {} has no key \"{}\" (element 0 has it)",
                                             k, first.keys()[i]));
          }
          column.push_back(*found);
        } else {
          if (!element.is_container() || element.items().size() <= i) {
            throw OperationError(
                fmt::format("concatenate: element {} is a {} of {} elements; element 0 is a {} "
                            "of {}",
                            k, Value::KindName(element.kind()), element.items().size(),
                            Value::KindName(first.kind()), first.items().size()));
          }
          column.push_back(element.items()[i]);
        }
      }
      items.push_back(Concatenate(column, dim));
    }
    return first.WithItems(std::move(items));
  }
  if (first.is_tensor()) {
    std::vector<at::Tensor> tensors;
    tensors.reserve(data.size());
    for (size_t k = 0; k < data.size(); ++k) {
      if (!data[k].is_tensor()) {
        throw OperationError(fmt::format("concatenate: element {} is a {} where element 0 has a tensor", k,
                                         Value::KindName(data[k].kind())));
      }
      tensors.push_back(data[k].tensor());
    }
    try {
      return Value::Tensor(at::cat(tensors, dim));
    } catch (const c10::Error& error) {
      std::string text = error.what_without_backtrace();
      throw OperationError(fmt::format("concatenate: {}", text.substr(0, text.find('\n'))));
    }
  }
  if (data.size() == 1) return first;
  throw OperationError(
      fmt::format("concatenate: can only concatenate tensors (and containers of them), not {} "
                  "{}s",
                  data.size(), Value::KindName(first.kind())));
}

Value ConvertToFp32(const Value& data) {
  return RecursivelyApply(data, [](const Value& leaf) {
    const at::Tensor& tensor = leaf.tensor();
    if (tensor.scalar_type() == at::kHalf || tensor.scalar_type() == at::kBFloat16) {
      return Value::Tensor(tensor.to(at::kFloat));
    }
    return leaf;
  });
}

Value Listify(const Value& data) {
  return RecursivelyApply(data, [](const Value& leaf) {
    at::Tensor tensor = leaf.tensor().detach().cpu();
    if (tensor.scalar_type() == at::kBFloat16) tensor = tensor.to(at::kFloat);
    return ListifyTensor(tensor);
  });
}

int64_t FindBatchSize(const Value& data) {
  const Value* current = &data;
  std::string path;
  while (current->is_container()) {
    if (current->items().empty()) {
      throw OperationError(fmt::format("find_batch_size: the {} at {} is empty; cannot find the batch size",
                                       Value::KindName(current->kind()), path.empty() ? "the top" : path));
    }
    path = ChildPath(path, *current, 0);
    current = &current->items()[0];
  }
  if (!current->is_tensor()) {
    throw OperationError(fmt::format("find_batch_size: the first leaf ({}) is a {}, not a tensor",
                                     path.empty() ? "the top" : path, Value::KindName(current->kind())));
  }
  if (current->tensor().dim() == 0) {
    throw OperationError(fmt::format("find_batch_size: the first tensor ({}) has no dimensions",
                                     path.empty() ? "the top" : path));
  }
  return current->tensor().size(0);
}

}  // namespace accel::rt::distributed
