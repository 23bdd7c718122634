#include "compiler/diagnostics/render.h"

#include <algorithm>
#include <map>

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace accel::diag {
namespace {

bool IsContinuationByte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

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
  out += fmt::format("{}{}:{}:{}: {}{}{}{}: {}{}", bold, d.file->name(), begin.line, begin.column, reset,
                     style.color ? SeverityColor(d.severity) : "", SeverityName(d.severity), reset, bold,
                     d.message);
  if (!d.code.empty() && d.severity != Severity::Note) out += fmt::format(" [{}]", d.code);
  out += reset;
  out += '\n';

  // The source line with a caret under the first character and tildes under the rest of
  // the span (clamped to the first line of a multi-line span). Long lines show a window
  // around the span, so a 100 MB line prints as a few hundred bytes.
  std::string_view line = d.file->LineText(begin.line);
  source::LineColumn end = d.file->Locate(d.span.end);
  // 0-based byte offsets within the shown line. The span may lie past the shown text: the
  // line's trailing `\r`s are not shown, and a diagnostic at the end of such a file sits after
  // them, so clamp to one past the end.
  uint32_t line_size = static_cast<uint32_t>(line.size());
  uint32_t first = std::min(begin.column - 1, line_size);
  uint32_t last = end.line == begin.line ? std::min(end.column - 1, line_size) : line_size;
  if (last <= first) last = first + 1;
  uint32_t window_begin = first > kContext ? first - kContext : 0;
  // A span longer than the context (a 10 MB literal) shows its start only.
  uint32_t shown_last = std::min(std::max(last, first + 1), first + 2 * kContext);
  uint32_t window_end = std::min<uint32_t>(static_cast<uint32_t>(line.size()), shown_last + kContext);
  std::string prefix = window_begin > 0 ? "..." : "";
  std::string suffix = window_end < line.size() ? "..." : "";
  std::string shown = Printable(line.substr(window_begin, window_end - window_begin));
  std::string gutter = fmt::format("{:>5}", begin.line);
  out += fmt::format("{} | {}{}{}\n", gutter, prefix, shown, suffix);
  // One marker column per character (code point), not per byte, so the caret sits under the
  // span after `é` or `日本`; tabs are kept so it lines up under tab-indented source.
  std::string marker = prefix.empty() ? "" : std::string(prefix.size(), ' ');
  for (uint32_t i = window_begin; i < first && i < line.size(); ++i) {
    if (IsContinuationByte(line[i])) continue;
    marker += line[i] == '\t' ? '\t' : ' ';
  }
  uint32_t span_end = std::min<uint32_t>(last, window_end > first ? window_end : first + 1);
  uint32_t width = 0;
  for (uint32_t i = first; i < span_end; ++i) {
    if (i >= line.size() || !IsContinuationByte(line[i])) ++width;
  }
  marker += '^';
  marker += std::string(width > 1 ? width - 1 : 0, '~');
  out += fmt::format("{} | {}{}{}\n", std::string(gutter.size(), ' '), green, marker, reset);
  if (d.fixit) {
    out +=
        fmt::format("{} = help: replace with `{}`\n", std::string(gutter.size(), ' '), d.fixit->replacement);
  }
  for (const Diagnostic& note : d.notes) RenderOne(note, style, out);
}

llvm::json::Object JsonOne(const Diagnostic& d) {
  llvm::json::Object object{
      {"severity", std::string(SeverityName(d.severity))}, {"code", d.code}, {"message", d.message}};
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

namespace {

llvm::json::Object SarifLocation(const Diagnostic& d) {
  source::LineColumn begin = d.file->Locate(d.span.begin);
  source::LineColumn end = d.file->Locate(std::max(d.span.end, d.span.begin + 1));
  return llvm::json::Object{
      {"physicalLocation",
       llvm::json::Object{{"artifactLocation", llvm::json::Object{{"uri", d.file->name()}}},
                          {"region", llvm::json::Object{{"startLine", begin.line},
                                                        {"startColumn", begin.column},
                                                        {"endLine", end.line},
                                                        {"endColumn", end.column}}}}}};
}

std::string Print(const llvm::json::Value& value) {
  std::string out;
  llvm::raw_string_ostream stream(out);
  stream << llvm::formatv("{0:2}", value) << "\n";
  stream.flush();
  return out;
}

// Escapes for a workflow command's message (`data`) and its properties.
std::string GithubEscape(std::string_view text, bool property) {
  std::string out;
  for (char c : text) {
    if (c == '%')
      out += "%25";
    else if (c == '\r')
      out += "%0D";
    else if (c == '\n')
      out += "%0A";
    else if (property && c == ':')
      out += "%3A";
    else if (property && c == ',')
      out += "%2C";
    else
      out += c;
  }
  return out;
}

}  // namespace

std::string RenderSarif(const std::vector<Diagnostic>& diagnostics, const std::string& tool_version) {
  llvm::json::Array results;
  std::map<std::string, std::string> rules;  // code -> a description
  for (const Diagnostic& d : diagnostics) {
    llvm::json::Object result{{"ruleId", d.code.empty() ? "accelc" : d.code},
                              {"level", std::string(SeverityName(d.severity))},
                              {"message", llvm::json::Object{{"text", d.message}}}};
    rules.emplace(d.code.empty() ? "accelc" : d.code, d.message);
    if (d.file != nullptr) result["locations"] = llvm::json::Array{SarifLocation(d)};
    llvm::json::Array related;
    for (const Diagnostic& note : d.notes) {
      if (note.file == nullptr) continue;
      llvm::json::Object location = SarifLocation(note);
      location["message"] = llvm::json::Object{{"text", note.message}};
      related.push_back(std::move(location));
    }
    if (!related.empty()) result["relatedLocations"] = std::move(related);
    if (d.fixit && d.file != nullptr) {
      source::LineColumn begin = d.file->Locate(d.fixit->span.begin);
      source::LineColumn end = d.file->Locate(d.fixit->span.end);
      result["fixes"] = llvm::json::Array{llvm::json::Object{
          {"description", llvm::json::Object{{"text", "replace with `" + d.fixit->replacement + "`"}}},
          {"artifactChanges",
           llvm::json::Array{llvm::json::Object{
               {"artifactLocation", llvm::json::Object{{"uri", d.file->name()}}},
               {"replacements",
                llvm::json::Array{llvm::json::Object{
                    {"deletedRegion", llvm::json::Object{{"startLine", begin.line},
                                                         {"startColumn", begin.column},
                                                         {"endLine", end.line},
                                                         {"endColumn", end.column}}},
                    {"insertedContent", llvm::json::Object{{"text", d.fixit->replacement}}}}}}}}}}};
    }
    results.push_back(std::move(result));
  }
  llvm::json::Array rule_list;
  for (const auto& [code, description] : rules) {
    rule_list.push_back(
        llvm::json::Object{{"id", code}, {"shortDescription", llvm::json::Object{{"text", description}}}});
  }
  llvm::json::Object driver{{"name", "accelc"}, {"version", tool_version}, {"rules", std::move(rule_list)}};
  llvm::json::Object log{{"version", "2.1.0"},
                         {"runs", llvm::json::Array{llvm::json::Object{
                                      {"tool", llvm::json::Object{{"driver", std::move(driver)}}},
                                      {"results", std::move(results)}}}}};
  return Print(llvm::json::Value(std::move(log)));
}

std::string RenderGithub(const std::vector<Diagnostic>& diagnostics) {
  std::string out;
  for (const Diagnostic& d : diagnostics) {
    const char* command = d.severity == Severity::Error     ? "error"
                          : d.severity == Severity::Warning ? "warning"
                                                            : "notice";
    std::string properties;
    if (d.file != nullptr) {
      source::LineColumn begin = d.file->Locate(d.span.begin);
      source::LineColumn end = d.file->Locate(d.span.end);
      properties =
          fmt::format("file={},line={},col={},endLine={},endColumn={},", GithubEscape(d.file->name(), true),
                      begin.line, begin.column, end.line, end.column);
    }
    properties += "title=" + GithubEscape(d.code.empty() ? "accelc" : d.code, true);
    out += fmt::format("::{} {}::{}\n", command, properties, GithubEscape(d.message, false));
  }
  return out;
}

}  // namespace accel::diag
