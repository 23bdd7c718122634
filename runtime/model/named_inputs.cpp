#include "runtime/model/named_inputs.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "runtime/tensor/scalar_type.h"

namespace accel::rt::train {
namespace {

std::string Quoted(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "`" : ", `") + name + "`";
  return text.empty() ? "none" : text;
}

std::string ShapeOf(const at::Tensor& tensor) {
  std::ostringstream out;
  out << tensor::TorchName(tensor.scalar_type()) << " " << tensor.sizes();
  return out.str();
}

// A Python-style default: `None`, `0`, `True`.
std::string DefaultText(const c10::IValue& value) {
  if (value.isNone()) return "None";
  if (value.isBool()) return value.toBool() ? "True" : "False";
  if (value.isDouble()) {
    double number = value.toDouble();
    return number == std::floor(number) ? fmt::format("{:.1f}", number) : fmt::format("{}", number);
  }
  std::ostringstream out;
  out << value;
  return out.str();
}

}  // namespace

InputBinder::InputBinder(const torch::jit::Module& module, std::vector<plan::InputBinding> renames)
    : renames_(std::move(renames)) {
  auto forward = module.find_method("forward");
  if (!forward) throw std::invalid_argument("the TorchScript model has no `forward` method");
  const c10::FunctionSchema& schema = forward->function().getSchema();
  std::vector<std::string> shown;
  for (const c10::Argument& argument : schema.arguments()) {
    // A method's schema starts with `self`, the module itself.
    if (argument.type()->kind() == c10::TypeKind::ClassType) continue;
    Input input;
    input.name = argument.name();
    input.type = argument.type()->annotation_str();
    input.tensor = c10::TensorType::get()->isSubtypeOf(*argument.type());
    input.required = !argument.default_value().has_value();
    inputs_.push_back(input);
    shown.push_back(input.name + ": " + input.type +
                    (input.required ? "" : " = " + DefaultText(*argument.default_value())));
  }
  signature_ = fmt::format("forward({})", fmt::join(shown, ", "));
  if (inputs_.size() == 1) {
    const auto* dict =
        inputs_[0].tensor ? nullptr : schema.arguments().back().type()->castRaw<c10::DictType>();
    takes_dict_ = dict != nullptr && dict->getKeyType()->kind() == c10::TypeKind::StringType &&
                  dict->getValueType()->kind() == c10::TypeKind::TensorType;
  }
}

std::string InputBinder::InputOf(const std::string& column) const {
  for (const plan::InputBinding& rename : renames_) {
    if (rename.column == column) return rename.input;
  }
  return column;
}

std::string InputBinder::ColumnList(const data::Columns& columns) const {
  std::vector<std::string> names;
  for (const data::Column& column : columns) names.push_back(column.name);
  return Quoted(names);
}

void InputBinder::Check(const data::Columns& columns) const {
  for (const plan::InputBinding& rename : renames_) {
    bool present = std::any_of(columns.begin(), columns.end(),
                               [&](const data::Column& column) { return column.name == rename.column; });
    if (!present) {
      throw std::invalid_argument(
          fmt::format("`model.inputs` maps column `{}` to input `{}`, but the dataset has no column `{}`; "
                      "its columns are {}",
                      rename.column, rename.input, rename.column, ColumnList(columns)));
    }
  }
  // Which column feeds each input, to find two columns for one input.
  std::unordered_map<std::string, std::string> fed;
  for (const data::Column& column : columns) {
    std::string input = InputOf(column.name);
    auto [previous, inserted] = fed.emplace(input, column.name);
    if (!inserted) {
      throw std::invalid_argument(
          fmt::format("columns `{}` and `{}` both feed input `{}` of {}; map one of them "
                      "to another input in `model.inputs`",
                      previous->second, column.name, input, signature_));
    }
  }
  if (takes_dict_) return;  // the dict takes any key; forward itself says which it reads
  std::vector<std::string> names;
  for (const Input& input : inputs_) names.push_back(input.name);
  for (const data::Column& column : columns) {
    std::string input = InputOf(column.name);
    auto found =
        std::find_if(inputs_.begin(), inputs_.end(), [&](const Input& in) { return in.name == input; });
    if (found == inputs_.end()) {
      throw std::invalid_argument(fmt::format(
          "column `{}` feeds input `{}`, which {} does not take; its inputs are {}: map the column with "
          "`model.inputs = {{ {}: \"...\" }}`, or leave it out of the dataset's `columns`",
          column.name, input, signature_, Quoted(names), column.name));
    }
    if (!found->tensor) {
      throw std::invalid_argument(
          fmt::format("column `{}` feeds input `{}` of {}, which is `{}`, not a tensor", column.name, input,
                      signature_, found->type));
    }
  }
  for (const Input& input : inputs_) {
    if (input.required && fed.count(input.name) == 0) {
      throw std::invalid_argument(
          fmt::format("input `{}` of {} has no default and no column feeds it; the dataset's columns are {} "
                      "(map one with "
                      "`model.inputs`)",
                      input.name, signature_, ColumnList(columns)));
    }
  }
}

torch::jit::IValue InputBinder::Call(torch::jit::Module& module, const data::Columns& columns) const {
  if (takes_dict_) {
    c10::Dict<std::string, at::Tensor> batch;
    for (const data::Column& column : columns) batch.insert(InputOf(column.name), column.values);
    return module.forward({batch});
  }
  std::unordered_map<std::string, c10::IValue> named;
  for (const data::Column& column : columns) named.emplace(InputOf(column.name), column.values);
  return module.get_method("forward")(std::vector<c10::IValue>{}, named);
}

ModelOutputs ReadModelOutputs(const torch::jit::IValue& output, const std::string& signature) {
  const std::string expected =
      "a model on named columns returns its loss: a tensor, a dict with `loss`, or a tuple whose first "
      "element "
      "is the loss";
  ModelOutputs result;
  c10::IValue loss;
  if (output.isTensor()) {
    loss = output;
  } else if (output.isGenericDict()) {
    std::vector<std::string> keys;
    for (const auto& entry : output.toGenericDict()) {
      if (!entry.key().isString()) continue;
      std::string key = entry.key().toStringRef();
      keys.push_back(key);
      if (key == "loss") {
        loss = entry.value();
      } else if (key == "logits" && entry.value().isTensor()) {
        result.logits = entry.value().toTensor().detach();
      } else if (entry.value().isTensor() && entry.value().toTensor().dim() == 0) {
        result.metrics.emplace_back(key, entry.value().toTensor().detach().to(at::kFloat));
      }
    }
    if (loss.isNone()) {
      throw std::invalid_argument(fmt::format("{} returned a dict without `loss` (its keys are {}); {}",
                                              signature, Quoted(keys), expected));
    }
  } else if (output.isTuple() && !output.toTupleRef().elements().empty()) {
    loss = output.toTupleRef().elements()[0];
  } else if (output.isList() && !output.toListRef().empty()) {
    loss = output.toListRef()[0];
  } else {
    throw std::invalid_argument(fmt::format("{} returned {}; {}", signature, output.tagKind(), expected));
  }
  if (!loss.isTensor()) {
    throw std::invalid_argument(
        fmt::format("the loss {} returned is {}, not a tensor", signature, loss.tagKind()));
  }
  at::Tensor value = loss.toTensor();
  if (value.numel() != 1 || !at::isFloatingType(value.scalar_type())) {
    throw std::invalid_argument(fmt::format(
        "{} returned a loss of {}, not one floating-point value; {} (reduce it, e.g. with `.mean()`)",
        signature, ShapeOf(value), expected));
  }
  result.loss = value.reshape({}).to(at::kFloat);
  return result;
}

}  // namespace accel::rt::train
