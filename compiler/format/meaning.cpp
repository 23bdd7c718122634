#include "compiler/format/meaning.h"

#include <string_view>

namespace accel::format {
namespace {

// Drops the ` @line:column` at the end of each line of an AST dump.
std::string WithoutPositions(const std::string& dump) {
  std::string out;
  size_t start = 0;
  while (start < dump.size()) {
    size_t end = dump.find('\n', start);
    if (end == std::string::npos) end = dump.size();
    std::string_view line = std::string_view(dump).substr(start, end - start);
    size_t at = line.rfind(" @");
    if (at != std::string_view::npos) line = line.substr(0, at);
    out.append(line);
    out += '\n';
    start = end + 1;
  }
  return out;
}

// A comment as the formatter writes it: no CR, no blanks at the ends of its lines.
std::string Normalized(std::string_view comment) {
  std::string out;
  std::string line;
  for (char c : comment) {
    if (c == '\r') continue;
    if (c == '\n') {
      out += line.substr(0, line.find_last_not_of(" \t") + 1);
      out += '\n';
      line.clear();
      continue;
    }
    line += c;
  }
  out += line.substr(0, line.find_last_not_of(" \t") + 1);
  return out;
}

}  // namespace

std::string MeaningKey(const source::SourceFile& source, const parse::SyntaxTree& syntax,
                       const ast::File& file) {
  std::string key = WithoutPositions(ast::Dump(file));
  key += "--- tokens\n";
  for (const parse::SyntaxToken& token : syntax.tokens) {
    std::string_view text = source.Slice(token.span);
    if (token.kind == parse::TokenKind::kCode) {
      if (text == ";" || text == ",") continue;
      key.append(text);
    } else {
      key += Normalized(text);
    }
    key += '\n';
  }
  return key;
}

}  // namespace accel::format
