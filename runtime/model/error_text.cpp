#include "runtime/model/error_text.h"

#include <vector>

#include <fmt/format.h>

namespace accel::rt::train {
namespace {

// LibTorch's interpreter (torch/csrc/jit/runtime/interpreter.cpp, handleError) starts every
// message of a failed scripted operation with this line.
constexpr std::string_view kInterpreterFailed =
    "The following operation failed in the TorchScript interpreter.";

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    size_t end = text.find('\n');
    lines.push_back(text.substr(0, end));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return lines;
}

bool Indented(std::string_view line) {
  return !line.empty() && (line.front() == ' ' || line.front() == '\t');
}

bool IsTracebackHeader(std::string_view line) { return line.rfind("Traceback of TorchScript", 0) == 0; }

ErrorText SplitInterpreterError(const std::vector<std::string_view>& lines) {
  // The cause starts at the first line after the (last) traceback header that is not indented,
  // as the frames are, and runs to the end: a message may span lines.
  size_t header = 0;
  for (size_t i = 1; i < lines.size(); ++i)
    if (IsTracebackHeader(lines[i])) header = i;
  size_t cause = lines.size();
  for (size_t i = header + 1; i < lines.size(); ++i) {
    if (!lines[i].empty() && !Indented(lines[i])) {
      cause = i;
      break;
    }
  }
  ErrorText text;
  if (cause == lines.size()) {
    text.summary = "the TorchScript model failed (the interpreter gave no cause)";
    text.cause = text.summary;
  } else {
    std::string joined;
    for (size_t i = cause; i < lines.size(); ++i) {
      if (lines[i].empty()) continue;
      if (!joined.empty()) joined += ' ';
      joined += lines[i];
    }
    text.cause = joined;
    text.summary = "the TorchScript model failed: " + joined;
  }
  std::vector<std::string_view> traceback;
  for (size_t i = 1; i < cause && i < lines.size(); ++i)
    if (!lines[i].empty()) traceback.push_back(lines[i]);
  size_t skipped = traceback.size() > kMaxTracebackLines ? traceback.size() - kMaxTracebackLines : 0;
  if (skipped > 0) text.details += fmt::format("\n  ... {} outer traceback lines left out", skipped);
  for (size_t i = skipped; i < traceback.size(); ++i) text.details += fmt::format("\n  {}", traceback[i]);
  return text;
}

}  // namespace

ErrorText SplitErrorText(std::string_view what) {
  std::vector<std::string_view> lines = Lines(what);
  if (lines.empty()) return {};
  if (lines.front() == kInterpreterFailed) return SplitInterpreterError(lines);
  ErrorText text{std::string(lines.front()), std::string(lines.front()), ""};
  for (size_t i = 1; i < lines.size() && Indented(lines[i]); ++i)
    text.details += fmt::format("\n{}", lines[i]);
  return text;
}

}  // namespace accel::rt::train
