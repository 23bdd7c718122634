#ifndef ACCEL_COMPILER_CONFIG_SIMPLE_YAML_H_
#define ACCEL_COMPILER_CONFIG_SIMPLE_YAML_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <yaml-cpp/mark.h>
#include <yaml-cpp/node/type.h>

namespace accel::config {

// One node of a YAML file in the block style `accelerate config` writes: nested mappings of
// plain keys to plain or simply quoted scalars. It answers what the config reader asks of a
// yaml-cpp node, with the same answers (a test compares them on every config in the tests).
class SimpleNode {
 public:
  using Entry = std::pair<SimpleNode, SimpleNode>;

  YAML::NodeType::value Type() const { return type_; }
  bool IsDefined() const { return true; }
  bool IsMap() const { return type_ == YAML::NodeType::Map; }
  bool IsScalar() const { return type_ == YAML::NodeType::Scalar; }
  bool IsNull() const { return type_ == YAML::NodeType::Null; }
  // Where the node starts: a scalar's first character (its quote, if quoted), a mapping's
  // first key, a flow collection's bracket. Only `pos` is set.
  YAML::Mark Mark() const;
  // `!` for a quoted scalar, `?` for any other node, as yaml-cpp tags untagged nodes; empty for
  // a null.
  std::string_view Tag() const { return tag_; }
  std::string_view Scalar() const { return scalar_; }
  // A mapping's keys and values, in the file's order.
  const std::vector<Entry>& entries() const { return entries_; }
  // The value of `key` in a mapping, or null when it has none.
  const SimpleNode* Find(std::string_view key) const;

 private:
  friend class SimpleYamlParser;
  YAML::NodeType::value type_ = YAML::NodeType::Null;
  int pos_ = 0;
  std::string_view tag_;
  // Points into the parsed text: the subset has no escapes to resolve.
  std::string_view scalar_;
  std::vector<Entry> entries_;
};

// Parses `text` when every line is blank, a comment, or `key: value` / `key:` opening a more
// indented mapping (spaces only), every key a plain word, every value a plain scalar, a
// quoted one without escapes, `{}` or `[]`, and no key repeats in a mapping. Empty for any
// other text, valid YAML or not: the caller then reads it with yaml-cpp, which also gives the
// syntax errors their messages. Both readers give such a file the same tree. The tree points
// into `text`, which must outlive it.
std::optional<SimpleNode> ParseSimpleYaml(std::string_view text);

}  // namespace accel::config

#endif  // ACCEL_COMPILER_CONFIG_SIMPLE_YAML_H_
