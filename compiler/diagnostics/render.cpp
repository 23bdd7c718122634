#include "compiler/diagnostics/render.h"

#include <algorithm>

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace accel::diag {
namespace {

const char* SeverityColor(Severity severity) {
  switch (severity) {
    case Severity::Note:
      return "\x1b[1;36m";
    case Severity::Warning:
      return "\x1b[1;35m";
    case Severity::Error:
      return "\x1b[1;31m";
  }
  return "";
}

void RenderOne(const Diagnostic& d, TextStyle style, std::string& out) {
  const char* bold = style.color ? "\x1b[1m" : "";
  const char* reset = style.color ? "\x1b[0m" : "";
  const char* green = style.color ? "\x1b[1;32m" : "";
  if (d.file == nullptr) {
    out += fmt::format("{}accelc: {}{}{}: {}{}", bold, style.color ? SeverityColor(d.severity) : "",
                       SeverityName(d.severity), reset, d.message, reset);
    if (!d.code.empty()) out += fmt::format(" [{}]", d.code);
    out += '\n';
    return;
  }
  source::LineColumn begin = d.file->Locate(d.span.begin);
  out += fmt::format("{}{}:{}:{}: {}{}{}{}: {}{}", bold, d.file->name(), begin.line, begin.column,
                     reset, style.color ? SeverityColor(d.severity) : "", SeverityName(d.severity),
                     reset, bold, d.message);
  if (!d.code.empty() && d.severity != Severity::Note) out += fmt::format(" [{}]", d.code);
  out += reset;
  out += '\n';

  // The source line with a caret under the first character and tildes under the rest of
  // the span (clamped to the first line of a multi-line span).
  std::string_view line = d.file->LineText(begin.line);
  std::string gutter = fmt::format("{:>5}", begin.line);
  out += fmt::format("{} | {}\n", gutter, line);
  source::LineColumn end = d.file->Locate(d.span.end);
  uint32_t last_column = end.line == begin.line ? end.column : static_cast<uint32_t>(line.size()) + 1;
  uint32_t width = std::max<uint32_t>(1, last_column > begin.column ? last_column - begin.column : 1);
  std::string marker(begin.column - 1, ' ');
  // Keep tabs so the caret lines up under tab-indented source.
  for (uint32_t i = 0; i + 1 < begin.column && i < line.size(); ++i) {
    if (line[i] == '\t') marker[i] = '\t';
  }
  marker += '^';
  marker += std::string(width - 1, '~');
  out += fmt::format("{} | {}{}{}\n", std::string(gutter.size(), ' '), green, marker, reset);
  if (d.fixit) {
    out += fmt::format("{} = help: replace with `{}`\n", std::string(gutter.size(), ' '),
                       d.fixit->replacement);
  }
  for (const Diagnostic& note : d.notes) RenderOne(note, style, out);
}

llvm::json::Object JsonOne(const Diagnostic& d) {
  llvm::json::Object object{{"severity", std::string(SeverityName(d.severity))},
                            {"code", d.code},
                            {"message", d.message}};
  if (d.file != nullptr) {
    source::LineColumn begin = d.file->Locate(d.span.begin);
    source::LineColumn end = d.file->Locate(d.span.end);
    object["file"] = d.file->name();
    object["line"] = begin.line;
    object["column"] = begin.column;
    object["end_line"] = end.line;
    object["end_column"] = end.column;
  }
  llvm::json::Array notes;
  for (const Diagnostic& note : d.notes) notes.push_back(JsonOne(note));
  object["notes"] = std::move(notes);
  if (d.fixit) object["fixit"] = d.fixit->replacement;
  return object;
}

}  // namespace

std::string RenderText(const std::vector<Diagnostic>& diagnostics, TextStyle style) {
  std::string out;
  for (const Diagnostic& d : diagnostics) RenderOne(d, style, out);
  return out;
}

std::string RenderJson(const std::vector<Diagnostic>& diagnostics) {
  llvm::json::Array array;
  for (const Diagnostic& d : diagnostics) array.push_back(JsonOne(d));
  std::string out;
  llvm::raw_string_ostream stream(out);
  stream << llvm::formatv("{0:2}", llvm::json::Value(std::move(array)));
  stream.flush();
  return out;
}

}  // namespace accel::diag
