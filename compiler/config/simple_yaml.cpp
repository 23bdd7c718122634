#include "compiler/config/simple_yaml.h"

#include <unordered_set>

namespace accel::config {

YAML::Mark SimpleNode::Mark() const {
  YAML::Mark mark;
  mark.pos = pos_;
  return mark;
}

const SimpleNode* SimpleNode::Find(std::string_view key) const {
  for (const Entry& entry : entries_) {
    if (entry.first.scalar_ == key) return &entry.second;
  }
  return nullptr;
}

// Declines (returns false, Run returns empty) at the first thing outside the subset; it never
// reports an error itself.
class SimpleYamlParser {
 public:
  explicit SimpleYamlParser(std::string_view text) : text_(text) {}

  std::optional<SimpleNode> Run() {
    if (!SplitLines() || lines_.empty() || lines_[0].indent != 0) return std::nullopt;
    SimpleNode root;
    if (!Map(0, root) || next_ != lines_.size()) return std::nullopt;
    return root;
  }

 private:
  // A line with content: not blank, not only a comment.
  struct Line {
    size_t start;  // offset of the line in the text
    size_t indent;
    std::string_view content;  // after the indentation, without the line break
  };

  bool SplitLines() {
    for (size_t start = 0; start < text_.size();) {
      size_t end = text_.find('\n', start);
      if (end == std::string_view::npos) end = text_.size();
      std::string_view line = text_.substr(start, end - start);
      // Tabs, carriage returns, other control characters and non-ASCII bytes (a BOM, UTF-8
      // text) are yaml-cpp's to read.
      for (char c : line) {
        if (c < 0x20 || c > 0x7e) return false;
      }
      size_t indent = line.find_first_not_of(' ');
      if (indent != std::string_view::npos && line[indent] != '#') {
        std::string_view content = line.substr(indent);
        // Directives and document markers.
        if (indent == 0 &&
            (content[0] == '%' || content.substr(0, 3) == "---" || content.substr(0, 3) == "...")) {
          return false;
        }
        lines_.push_back({start, indent, content});
      }
      start = end + 1;
    }
    return true;
  }

  static bool IsKeyCharacter(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
  }

  // PyYAML's and yaml-cpp's null words: yaml-cpp makes such a plain scalar a null node.
  static bool IsNullWord(std::string_view text) {
    return text == "~" || text == "null" || text == "Null" || text == "NULL";
  }

  // Whether `rest`, what follows a value on its line, is nothing or a comment.
  static bool OnlyComment(std::string_view rest) {
    size_t at = rest.find_first_not_of(' ');
    return at == std::string_view::npos || (at > 0 && rest[at] == '#');
  }

  // The mapping whose keys are the lines at `indent` from the next line on.
  bool Map(size_t indent, SimpleNode& map) {
    map.type_ = YAML::NodeType::Map;
    map.tag_ = "?";
    map.pos_ = static_cast<int>(lines_[next_].start + indent);
    // The keys so far, for the repeat check: searching the entries instead was quadratic, and a
    // file of 100,000 keys took 30 s.
    std::unordered_set<std::string_view> keys;
    while (next_ < lines_.size() && lines_[next_].indent == indent) {
      const Line line = lines_[next_++];
      size_t colon = line.content.find(':');
      if (colon == 0 || colon == std::string_view::npos) return false;
      std::string_view key = line.content.substr(0, colon);
      if (key[0] == '-' || key[0] == '.' || IsNullWord(key)) return false;
      for (char c : key) {
        if (!IsKeyCharacter(c)) return false;
      }
      if (!keys.insert(key).second) return false;  // yaml-cpp's handling of repeats is its own
      std::string_view after = line.content.substr(colon + 1);
      if (!after.empty() && after[0] != ' ') return false;
      SimpleNode key_node;
      key_node.type_ = YAML::NodeType::Scalar;
      key_node.tag_ = "?";
      key_node.scalar_ = key;
      key_node.pos_ = static_cast<int>(line.start + indent);
      SimpleNode value;
      size_t value_at = after.find_first_not_of(' ');
      if (value_at == std::string_view::npos || after[value_at] == '#') {
        // `key:` alone opens a mapping on the lines below; with nothing below it is a null,
        // whose position is yaml-cpp's own business.
        if (next_ == lines_.size() || lines_[next_].indent <= indent) return false;
        if (!Map(lines_[next_].indent, value)) return false;
      } else {
        std::string_view text = after.substr(value_at);
        size_t pos = line.start + indent + colon + 1 + value_at;
        if (!Value(text, pos, value)) return false;
      }
      map.entries_.emplace_back(std::move(key_node), std::move(value));
    }
    return true;
  }

  // A value on its key's line: `{}`, `[]`, a quoted scalar without escapes, or a plain one.
  bool Value(std::string_view text, size_t pos, SimpleNode& value) {
    value.pos_ = static_cast<int>(pos);
    value.tag_ = "?";
    if (text.substr(0, 2) == "{}" || text.substr(0, 2) == "[]") {
      value.type_ = text[0] == '{' ? YAML::NodeType::Map : YAML::NodeType::Sequence;
      return OnlyComment(text.substr(2));
    }
    value.type_ = YAML::NodeType::Scalar;
    if (text[0] == '\'' || text[0] == '"') {
      size_t close = text.find(text[0], 1);
      if (close == std::string_view::npos) return false;
      std::string_view inner = text.substr(1, close - 1);
      if (inner.find('\\') != std::string_view::npos) return false;
      value.tag_ = "!";
      value.scalar_ = inner;
      // A second quote right after the closing one is an escaped quote: not OnlyComment.
      return OnlyComment(text.substr(close + 1));
    }
    // Indicators that start something other than a plain scalar; `-3` is one.
    bool negative = text[0] == '-' && text.size() > 1 && text[1] != ' ';
    if (!negative && std::string_view("-?:,[]{}#&*!|>%@`").find(text[0]) != std::string_view::npos)
      return false;
    size_t comment = text.find(" #");
    std::string_view plain = text.substr(0, comment);
    plain = plain.substr(0, plain.find_last_not_of(' ') + 1);
    if (plain.find(": ") != std::string_view::npos || plain.back() == ':') return false;
    if (plain.find_first_of("[]{}") != std::string_view::npos) return false;
    if (IsNullWord(plain)) {
      value.type_ = YAML::NodeType::Null;
      value.tag_ = {};
      return true;
    }
    value.scalar_ = plain;
    return true;
  }

  std::string_view text_;
  std::vector<Line> lines_;
  size_t next_ = 0;
};

std::optional<SimpleNode> ParseSimpleYaml(std::string_view text) { return SimpleYamlParser(text).Run(); }

}  // namespace accel::config
