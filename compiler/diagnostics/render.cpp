#include "compiler/diagnostics/render.h"

#include <algorithm>

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace accel::diag {
namespace {

// Source bytes shown on either side of a diagnostic's span.
constexpr uint32_t kContext = 100;

// Control characters (a NUL, an escape) would corrupt the terminal: show each as `?`, one
// character for one, so columns still line up for everything after them.
std::string Printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    out += (u < 0x20 && c != '\t') || u == 0x7f ? '?' : c;
  }
  return out;
}

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
  // the span (clamped to the first line of a multi-line span). Long lines show a window
  // around the span, so a 100 MB line prints as a few hundred bytes.
  std::string_view line = d.file->LineText(begin.line);
  source::LineColumn end = d.file->Locate(d.span.end);
  uint32_t first = begin.column - 1;  // 0-based byte offsets within the line
  uint32_t last = end.line == begin.line ? end.column - 1 : static_cast<uint32_t>(line.size());
  if (last <= first) last = first + 1;
  uint32_t window_begin = first > kContext ? first - kContext : 0;
  uint32_t window_end = std::min<uint32_t>(static_cast<uint32_t>(line.size()), std::max(last, first + 1) + kContext);
  std::string prefix = window_begin > 0 ? "..." : "";
  std::string suffix = window_end < line.size() ? "..." : "";
  std::string shown = Printable(line.substr(window_begin, window_end - window_begin));
  std::string gutter = fmt::format("{:>5}", begin.line);
  out += fmt::format("{} | {}{}{}\n", gutter, prefix, shown, suffix);
  std::string marker(prefix.size() + (first - window_begin), ' ');
  // Keep tabs so the caret lines up under tab-indented source.
  for (uint32_t i = window_begin; i < first && i < line.size(); ++i) {
    if (line[i] == '\t') marker[prefix.size() + (i - window_begin)] = '\t';
  }
  uint32_t width = std::min<uint32_t>(last, window_end > first ? window_end : first + 1) - first;
  marker += '^';
  marker += std::string(width > 1 ? width - 1 : 0, '~');
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
