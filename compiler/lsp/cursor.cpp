#include "compiler/lsp/cursor.h"

#include <cctype>
#include <functional>
#include <optional>

#include "compiler/diagnostics/explanations.h"

namespace accel::lsp {
namespace {

bool IsWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::string_view Trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

bool StartsWithWord(std::string_view text, std::string_view word) {
  return text.substr(0, word.size()) == word &&
         (text.size() == word.size() || !IsWordChar(text[word.size()]));
}

std::vector<std::string_view> SplitPath(std::string_view path) {
  std::vector<std::string_view> segments;
  for (size_t start = 0;;) {
    size_t dot = path.find('.', start);
    segments.push_back(Trim(path.substr(start, dot == std::string_view::npos ? dot : dot - start)));
    if (dot == std::string_view::npos) return segments;
    start = dot + 1;
  }
}

// `A2003`, `DS-019`, `ACC-008`: capitals, an optional dash, digits; and known to the compiler.
bool IsKnownCode(std::string_view word, const sema::Schema& schema) {
  size_t i = 0;
  while (i < word.size() && std::isupper(static_cast<unsigned char>(word[i]))) ++i;
  if (i == 0) return false;
  if (i < word.size() && word[i] == '-') ++i;
  if (i == word.size()) return false;
  for (size_t j = i; j < word.size(); ++j) {
    if (!std::isdigit(static_cast<unsigned char>(word[j]))) return false;
  }
  if (diag::Explanations().count(word) > 0) return true;
  for (const auto& [name, record] : schema.records) {
    for (const sema::RuleSchema& rule : record.rules) {
      if (rule.code == word) return true;
    }
  }
  return false;
}

// The field a dotted `path` names, starting in `record`; null when a segment is unknown.
const sema::FieldSchema* ResolvePath(std::string_view path, const sema::RecordSchema* record,
                                     const sema::Schema& schema, bool file_keys) {
  const sema::FieldSchema* field = nullptr;
  for (std::string_view segment : SplitPath(path)) {
    if (record == nullptr) return nullptr;
    field = LookupField(*record, segment, file_keys);
    if (field == nullptr) return nullptr;
    record = RecordOf(field->type, schema);
  }
  return field;
}

// The record a block is written in, from the text before its `{`: `job x`, `compute`,
// `optimizer = AdamW`, `AdamW` (in a list), `accelerator.init_process_group`.
const sema::RecordSchema* ResolveHeader(std::string_view header, const sema::RecordSchema* outer,
                                        const sema::Schema& schema) {
  header = Trim(header);
  if (StartsWithWord(header, "job")) {
    auto it = schema.records.find("Job");
    return it == schema.records.end() ? nullptr : &it->second;
  }
  size_t equals = header.find('=');
  if (equals != std::string_view::npos) {
    std::string_view type = Trim(header.substr(equals + 1));
    if (!type.empty()) {
      auto it = schema.records.find(type);
      return it == schema.records.end() ? nullptr : &it->second;
    }
    header = Trim(header.substr(0, equals));
  }
  if (const sema::FieldSchema* field = ResolvePath(header, outer, schema, false))
    return RecordOf(field->type, schema);
  auto it = schema.records.find(header);
  return it == schema.records.end() ? nullptr : &it->second;
}

// Walks `text` from `begin` to `end` (or to the `}` closing a `{` at `begin`), skipping
// comments and strings, and calls `on` for each structural character: `{`, `}`, and the ones
// that end a statement's start (`\n`, `;`, `[`, `,`, `(`). Returns where it stopped.
size_t Walk(std::string_view text, size_t begin, size_t end, const std::function<bool(size_t)>& on) {
  size_t i = begin;
  while (i < end) {
    char c = text[i];
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      while (i < text.size() && text[i] != '\n') ++i;
      continue;
    }
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      size_t close = text.find("*/", i + 2);
      i = close == std::string_view::npos ? text.size() : close + 2;
      continue;
    }
    if (c == '"') {
      ++i;
      while (i < text.size() && text[i] != '"' && text[i] != '\n') i += text[i] == '\\' ? 2 : 1;
      ++i;
      continue;
    }
    if (c == '{' || c == '}' || c == '\n' || c == ';' || c == '[' || c == ',' || c == '(') {
      if (!on(i)) return i;
    }
    ++i;
  }
  return i;
}

// The first name of each statement directly inside the block opened at `open`.
std::vector<std::string> StatementHeads(std::string_view text, size_t open) {
  std::vector<std::string> heads;
  int depth = 0;
  auto head_at = [&](size_t start) {
    while (start < text.size() && (text[start] == ' ' || text[start] == '\t')) ++start;
    size_t end = start;
    while (end < text.size() && IsWordChar(text[end])) ++end;
    if (end > start) heads.emplace_back(text.substr(start, end - start));
  };
  Walk(text, open, text.size(), [&](size_t i) {
    char c = text[i];
    if (c == '{') ++depth;
    if (c == '}') --depth;
    if (depth == 0) return false;
    if (depth == 1 && (c == '{' || c == '\n' || c == ';')) head_at(i + 1);
    return true;
  });
  return heads;
}

// The word around `offset`; `extra` are further characters it may hold (`-` for codes).
source::Span WordAt(std::string_view text, uint32_t offset, std::string_view extra) {
  auto in_word = [&](char c) { return IsWordChar(c) || extra.find(c) != std::string_view::npos; };
  uint32_t begin = offset, end = offset;
  while (begin > 0 && in_word(text[begin - 1])) --begin;
  while (end < text.size() && in_word(text[end])) ++end;
  return {begin, end};
}

std::string_view LineAround(std::string_view text, uint32_t offset, size_t* line_begin) {
  size_t newline = offset == 0 ? std::string_view::npos : text.rfind('\n', offset - 1);
  size_t begin = newline == std::string_view::npos ? 0 : newline + 1;
  size_t end = text.find('\n', offset);
  *line_begin = begin;
  return text.substr(begin, (end == std::string_view::npos ? text.size() : end) - begin);
}

}  // namespace

const sema::FieldSchema* LookupField(const sema::RecordSchema& record, std::string_view name,
                                     bool file_keys) {
  if (file_keys) {
    if (const sema::FieldSchema* field = record.FindFileKey(name)) return field;
  }
  if (const sema::FieldSchema* field = record.Find(name)) return field;
  if (const sema::FieldSchema* field = record.FindAlias(name)) return field;
  return record.FindSynonym(name);
}

const sema::RecordSchema* RecordOf(const sema::Type& type, const sema::Schema& schema) {
  const sema::Type* t = &type;
  if (t->kind == sema::Type::Kind::Optional) t = &t->args[0];
  if (t->kind != sema::Type::Kind::Record) return nullptr;
  auto it = schema.records.find(t->name);
  return it == schema.records.end() ? nullptr : &it->second;
}

namespace {

// A diagnostic code or rule id under the cursor (`DS-019`, `A2003`), in a spec or a config file.
std::optional<Cursor> CodeAt(std::string_view text, uint32_t offset, const sema::Schema& schema) {
  source::Span code = WordAt(text, offset, "-");
  std::string_view code_text = text.substr(code.begin, code.end - code.begin);
  if (!IsKnownCode(code_text, schema)) return std::nullopt;
  Cursor cursor;
  cursor.kind = Cursor::Kind::kCode;
  cursor.word = std::string(code_text);
  cursor.word_span = code;
  return cursor;
}

}  // namespace

Cursor LocateInSpec(std::string_view text, uint32_t offset, const sema::Schema& schema) {
  if (offset > text.size()) offset = static_cast<uint32_t>(text.size());
  if (std::optional<Cursor> code = CodeAt(text, offset, schema)) return *code;
  Cursor cursor;
  cursor.word_span = WordAt(text, offset, "");
  cursor.word =
      std::string(text.substr(cursor.word_span.begin, cursor.word_span.end - cursor.word_span.begin));

  size_t line_begin = 0;
  std::string_view line = LineAround(text, offset, &line_begin);
  std::string_view trimmed = Trim(line);
  if (StartsWithWord(trimmed, "import")) {
    size_t open = line.find('"'), close = open == std::string_view::npos ? open : line.find('"', open + 1);
    if (close != std::string_view::npos) {
      cursor.kind = Cursor::Kind::kImport;
      cursor.target = std::string(line.substr(open + 1, close - open - 1));
    }
    return cursor;
  }
  // On `job name extends base` before its `{`: the base is the only thing to resolve.
  size_t brace = line.find('{');
  if (StartsWithWord(trimmed, "job") && (brace == std::string_view::npos || offset <= line_begin + brace)) {
    size_t extends = line.find(" extends ");
    if (extends != std::string_view::npos && cursor.word_span.begin >= line_begin + extends + 9) {
      cursor.kind = Cursor::Kind::kExtends;
      cursor.target = cursor.word;
    }
    return cursor;
  }

  // The blocks open at the cursor, innermost last, each with the record it is written in.
  struct Frame {
    const sema::RecordSchema* record;
    size_t open;
  };
  std::vector<Frame> frames{{nullptr, std::string_view::npos}};
  size_t statement_start = 0;
  Walk(text, 0, cursor.word_span.begin, [&](size_t i) {
    char c = text[i];
    if (c == '{') {
      frames.push_back(
          {ResolveHeader(text.substr(statement_start, i - statement_start), frames.back().record, schema),
           i});
    } else if (c == '}' && frames.size() > 1) {
      frames.pop_back();
    }
    statement_start = i + 1;
    return true;
  });
  cursor.record = frames.back().record;
  if (cursor.record == nullptr) return cursor;
  if (frames.back().open != std::string_view::npos)
    cursor.set_fields = StatementHeads(text, frames.back().open);

  std::string_view before = text.substr(statement_start, cursor.word_span.begin - statement_start);
  size_t equals = before.find('=');
  if (equals != std::string_view::npos) {
    cursor.field = ResolvePath(before.substr(0, equals), cursor.record, schema, false);
    cursor.kind = schema.records.count(cursor.word) > 0 ? Cursor::Kind::kTypeName : Cursor::Kind::kValue;
    return cursor;
  }
  // A dotted path: the segments before the word pick the record the word is a field of.
  std::string_view prefix = Trim(before);
  if (!prefix.empty()) {
    if (prefix.back() != '.') return cursor;
    const sema::FieldSchema* parent =
        ResolvePath(prefix.substr(0, prefix.size() - 1), cursor.record, schema, false);
    cursor.record = parent ? RecordOf(parent->type, schema) : nullptr;
    cursor.set_fields.clear();
    if (cursor.record == nullptr) return cursor;
  }
  cursor.kind = Cursor::Kind::kFieldName;
  cursor.field = LookupField(*cursor.record, cursor.word, false);
  return cursor;
}

namespace {

struct YamlLine {
  size_t begin = 0;                       // byte offset of the line
  std::string_view text;                  // without its `\n`
  size_t key_column = 0;                  // where the key starts (after indentation and `- `)
  std::string_view key;                   // empty when the line holds no `key:`
  size_t colon = std::string_view::npos;  // column of the `:` after the key
  bool blank = true;                      // empty or a comment
};

YamlLine ReadYamlLine(std::string_view text, size_t begin) {
  YamlLine line;
  line.begin = begin;
  size_t end = text.find('\n', begin);
  line.text = text.substr(begin, (end == std::string_view::npos ? text.size() : end) - begin);
  if (!line.text.empty() && line.text.back() == '\r') line.text.remove_suffix(1);
  size_t i = 0;
  while (i < line.text.size() && line.text[i] == ' ') ++i;
  // A list item's mapping starts after `- `.
  while (i + 1 < line.text.size() && line.text[i] == '-' && line.text[i + 1] == ' ') {
    i += 2;
    while (i < line.text.size() && line.text[i] == ' ') ++i;
  }
  line.key_column = i;
  line.blank = i == line.text.size() || line.text[i] == '#';
  size_t key_end = i;
  while (key_end < line.text.size() &&
         (IsWordChar(line.text[key_end]) || line.text[key_end] == '-' || line.text[key_end] == '.')) {
    ++key_end;
  }
  line.key = line.text.substr(i, key_end - i);
  size_t colon = key_end;
  while (colon < line.text.size() && line.text[colon] == ' ') ++colon;
  if (colon < line.text.size() && line.text[colon] == ':') line.colon = colon;
  return line;
}

}  // namespace

Cursor LocateInYaml(std::string_view text, uint32_t offset, const sema::Schema& schema,
                    const std::string& root) {
  if (offset > text.size()) offset = static_cast<uint32_t>(text.size());
  if (std::optional<Cursor> code = CodeAt(text, offset, schema)) return *code;
  Cursor cursor;
  std::vector<YamlLine> lines;
  size_t current = 0;
  for (size_t begin = 0; begin <= text.size();) {
    lines.push_back(ReadYamlLine(text, begin));
    if (offset >= begin && offset <= begin + lines.back().text.size()) current = lines.size() - 1;
    size_t newline = text.find('\n', begin);
    if (newline == std::string_view::npos) break;
    begin = newline + 1;
  }
  const YamlLine& here = lines[current];
  size_t column = offset - here.begin;
  // A line being typed has its key where the text starts, or where the cursor is.
  size_t indent = here.blank && here.key.empty() ? std::min(column, here.key_column) : here.key_column;

  // The keys of the mappings the line is nested in, innermost first.
  std::vector<std::string_view> parents;
  size_t parent_line = std::string_view::npos;
  for (size_t i = current, level = indent; i-- > 0 && level > 0;) {
    const YamlLine& line = lines[i];
    if (line.blank || line.key_column >= level) continue;
    if (parent_line == std::string_view::npos) parent_line = i;
    parents.push_back(line.key);
    level = line.key_column;
  }
  auto root_it = schema.records.find(root);
  const sema::RecordSchema* record = root_it == schema.records.end() ? nullptr : &root_it->second;
  for (auto it = parents.rbegin(); it != parents.rend() && record != nullptr; ++it) {
    const sema::FieldSchema* field = LookupField(*record, *it, true);
    if (field == nullptr) {
      record = nullptr;
      break;
    }
    const sema::Type* type = &field->type;
    if (type->kind == sema::Type::Kind::Optional) type = &type->args[0];
    // A list of records: the item's keys are the element record's.
    record = type->kind == sema::Type::Kind::List ? RecordOf(type->args[0], schema) : RecordOf(*type, schema);
  }
  cursor.record = record;
  if (record == nullptr) return cursor;
  // The sibling keys: lines at this indentation between the parent and the next line above it.
  size_t first = parent_line == std::string_view::npos ? 0 : parent_line + 1;
  for (size_t i = first; i < lines.size(); ++i) {
    const YamlLine& line = lines[i];
    if (line.blank) continue;
    if (line.key_column < indent && i > current) break;
    if (line.key_column == indent && !line.key.empty() && i != current)
      cursor.set_fields.emplace_back(line.key);
  }
  cursor.word_span = WordAt(text, offset, "");
  cursor.word =
      std::string(text.substr(cursor.word_span.begin, cursor.word_span.end - cursor.word_span.begin));
  if (here.colon != std::string_view::npos && column > here.colon) {
    cursor.kind = Cursor::Kind::kValue;
    cursor.field = LookupField(*record, here.key, true);
    return cursor;
  }
  cursor.kind = Cursor::Kind::kFieldName;
  cursor.field = LookupField(*record, cursor.word, true);
  return cursor;
}

}  // namespace accel::lsp
