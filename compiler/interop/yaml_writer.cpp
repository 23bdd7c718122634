// ExportAccelerateYaml: a checked config as the YAML `accelerate config` writes.
#include <algorithm>
#include <optional>
#include <utility>
#include <variant>
#include <vector>

#include "compiler/interop/interop.h"
#include "compiler/interop/values.h"
#include "compiler/interop/yaml_scalar.h"

namespace accel::interop {
namespace {

// The document before layout: dropping `none` and empty sections needs the children first
// (a section whose every key is dropped is itself empty), so the values become this tree.
struct Node {
  std::string scalar;  // formatted, for a leaf
  bool is_mapping = false;
  bool is_sequence = false;
  std::vector<std::pair<std::string, Node>> entries;  // a mapping's, sorted by key
  std::vector<Node> items;                            // a sequence's
};

Node Leaf(std::string text) {
  Node node;
  node.scalar = std::move(text);
  return node;
}

// A mapping of `entries`, sorted as PyYAML's `sort_keys` does (code points, which UTF-8 byte
// order preserves); empty when every entry was dropped.
Node Mapping(std::vector<std::pair<std::string, Node>> entries) {
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  Node node;
  node.is_mapping = true;
  node.entries = std::move(entries);
  return node;
}

// `list<string> | string`: names given as a list or as one comma-separated string.
// `accelerate launch` passes such a key to the plugin through `str()` and the plugin splits
// the text at commas, so only the string form survives the trip.
bool TakesCommaSeparatedNames(const sema::Type& declared) {
  const sema::Type& type = declared.kind == sema::Type::Kind::Optional ? declared.args[0] : declared;
  if (type.kind != sema::Type::Kind::Union) return false;
  bool list = false, string = false;
  for (const sema::Type& alternative : type.args) {
    list |= alternative.kind == sema::Type::Kind::List && alternative.args.size() == 1 &&
            alternative.args[0].kind == sema::Type::Kind::String;
    string |= alternative.kind == sema::Type::Kind::String;
  }
  return list && string;
}

std::string CommaSeparated(const sema::Value& names) {
  std::string text;
  for (const sema::Value& name : names.items) text += (text.empty() ? "" : ",") + name.text;
  return text;
}

class Builder {
 public:
  explicit Builder(const sema::Schema& schema) : schema_(schema) {}

  // The node for `value`, or none when Accelerate's writer drops it: `None`, and mappings with
  // nothing in them (its `to_dict` turns `{}` into None before dropping None values).
  std::optional<Node> Build(const sema::Value& value) {
    switch (value.kind) {
      case sema::Value::Kind::None:
        return std::nullopt;
      case sema::Value::Kind::Bool:
        return Leaf(value.bool_value ? "true" : "false");
      case sema::Value::Kind::Int:
        return Leaf(std::to_string(value.int_value));
      case sema::Value::Kind::Float:
        return Leaf(YamlFloat(value.float_value));
      case sema::Value::Kind::Duration:
        // Accelerate's timeouts are seconds.
        return Leaf(value.int_value % 1000 == 0 ? std::to_string(value.int_value / 1000)
                                                : YamlFloat(static_cast<double>(value.int_value) / 1000));
      case sema::Value::Kind::Bytes:
        return Leaf(std::to_string(value.int_value));
      case sema::Value::Kind::String:
        return Leaf(YamlString(value.text));
      case sema::Value::Kind::Enum:
        return Leaf(YamlString(value.enum_value));
      case sema::Value::Kind::List: {
        Node node;
        node.is_sequence = true;
        // Inside a list nothing is dropped (Accelerate's writer does not look into lists):
        // `None` stays `null`, an empty section stays `{}`.
        for (const sema::Value& item : value.items) {
          std::optional<Node> built = Build(item);
          node.items.push_back(built                                  ? std::move(*built)
                               : item.kind == sema::Value::Kind::None ? Leaf("null")
                                                                      : Mapping({}));
        }
        return node;
      }
      case sema::Value::Kind::Map: {
        std::vector<std::pair<std::string, Node>> entries;
        for (size_t i = 0; i < value.items.size(); ++i) {
          if (std::optional<Node> item = Build(value.items[i]))
            entries.emplace_back(value.keys[i], std::move(*item));
        }
        if (entries.empty()) return std::nullopt;
        return Mapping(std::move(entries));
      }
      case sema::Value::Kind::Record: {
        std::vector<std::pair<std::string, Node>> entries;
        for (const WrittenField& field : FieldsToWrite(value, schema_)) {
          if (field.value->kind == sema::Value::Kind::List && !field.value->items.empty() &&
              TakesCommaSeparatedNames(field.field->type)) {
            entries.emplace_back(FileKey(*field.field), Leaf(YamlString(CommaSeparated(*field.value))));
            continue;
          }
          if (std::optional<Node> item = Build(*field.value))
            entries.emplace_back(FileKey(*field.field), std::move(*item));
        }
        if (entries.empty()) return std::nullopt;
        return Mapping(std::move(entries));
      }
    }
    return std::nullopt;
  }

 private:
  const sema::Schema& schema_;
};

// PyYAML's block layout: two spaces per mapping level, sequences not indented under their
// key, and a mapping or sequence inside a sequence starting on the dash's line.
class Emitter {
 public:
  std::string Document(const Node& root) {
    if (root.entries.empty()) return "{}\n";
    EmitMapping(root, 0, false);
    return out_;
  }

 private:
  // `inline_first`: the first line continues a `- ` already written.
  void EmitMapping(const Node& node, size_t indent, bool inline_first) {
    for (size_t i = 0; i < node.entries.size(); ++i) {
      if (i > 0 || !inline_first) out_ += std::string(indent, ' ');
      const auto& [key, value] = node.entries[i];
      out_ += YamlString(key) + ":";
      if (value.is_mapping && !value.entries.empty()) {
        out_ += "\n";
        EmitMapping(value, indent + 2, false);
      } else if (value.is_sequence && !value.items.empty()) {
        out_ += "\n";
        EmitSequence(value, indent, false);
      } else {
        out_ += " " + Inline(value) + "\n";
      }
    }
  }

  void EmitSequence(const Node& node, size_t indent, bool inline_first) {
    for (size_t i = 0; i < node.items.size(); ++i) {
      if (i > 0 || !inline_first) out_ += std::string(indent, ' ');
      out_ += "- ";
      const Node& item = node.items[i];
      if (item.is_mapping && !item.entries.empty()) {
        EmitMapping(item, indent + 2, true);
      } else if (item.is_sequence && !item.items.empty()) {
        EmitSequence(item, indent + 2, true);
      } else {
        out_ += Inline(item) + "\n";
      }
    }
  }

  // A scalar, or an empty collection in flow style.
  static std::string Inline(const Node& node) {
    if (node.is_mapping) return "{}";
    if (node.is_sequence) return "[]";
    return node.scalar;
  }

  std::string out_;
};

}  // namespace

std::string ExportAccelerateYaml(const sema::Value& config, const sema::Schema& schema) {
  std::optional<Node> root = Builder(schema).Build(config);
  return Emitter().Document(root ? *root : Mapping({}));
}

}  // namespace accel::interop
