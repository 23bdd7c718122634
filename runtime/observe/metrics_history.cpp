#include "runtime/observe/metrics_history.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <regex>

#include <fmt/format.h>

#include "compiler/plan/plan.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

namespace accel::rt::observe {
namespace {

namespace json = llvm::json;

llvm::Error LineError(std::string_view name, size_t line, size_t column, const std::string& message) {
  return llvm::createStringError(std::errc::invalid_argument, "%s",
                                 fmt::format("{}:{}:{}: {}", name, line, column, message).c_str());
}

// LLVM's JSON parser says `[1:5, byte=4]: Expected , or } after object property`; the file's
// own line number replaces its line, and its column is kept.
llvm::Error NotJson(std::string_view name, size_t line, llvm::Error error) {
  std::string message = llvm::toString(std::move(error));
  static const std::regex kPosition(R"(^\[\d+:(\d+), byte=\d+\]: (.*)$)");
  std::smatch match;
  size_t column = 1;
  if (std::regex_match(message, match, kPosition)) {
    column = std::stoul(match[1].str());
    message = match[2].str();
  }
  return LineError(name, line, column,
                   fmt::format("not a JSON object: {}; each line of metrics.jsonl is one object such as "
                               "{{\"step\":20,\"time\":1718000000.5,\"loss\":0.25}}",
                               message));
}

std::string KindOf(const json::Value& value) {
  switch (value.kind()) {
    case json::Value::Null:
      return "null";
    case json::Value::Boolean:
      return "a boolean";
    case json::Value::Number:
      return "a number";
    case json::Value::String:
      return "a string";
    case json::Value::Array:
      return "an array";
    case json::Value::Object:
      return "an object";
  }
  return "a value";
}

// The column (from 1) where `"step"` appears on `line`, or 1.
size_t ColumnOfStep(std::string_view line) {
  size_t at = line.find("\"step\"");
  return at == std::string_view::npos ? 1 : at + 1;
}

}  // namespace

const Series* MetricsHistory::Find(std::string_view name) const {
  for (const Series& one : series)
    if (one.name == name) return &one;
  return nullptr;
}

llvm::Expected<MetricsHistory> ParseMetricsHistory(std::string_view text, std::string_view name) {
  MetricsHistory history;
  // While reading: each series as step -> value, so a later record replaces an earlier one.
  std::map<std::string, std::map<int64_t, double>> columns;
  int64_t highest_step = -1;
  size_t line_number = 0;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    bool complete = end != std::string_view::npos;
    std::string_view line = text.substr(start, complete ? end - start : std::string_view::npos);
    start = complete ? end + 1 : text.size();
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;

    // LLVM's parser recurses once per level: a hostile line must not exhaust the stack. A
    // record nests one level; plan files' bound is far above that.
    if (plan::JsonNestsDeeperThan(line, plan::kMaxJsonDepth)) {
      return LineError(name, line_number, 1,
                       fmt::format("nested deeper than {} levels; a metrics record is one flat object",
                                   plan::kMaxJsonDepth));
    }
    llvm::Expected<json::Value> parsed = json::parse(line);
    if (!parsed) {
      if (!complete) {
        // The writer puts each line down in one write(2): only a kill leaves half of one.
        llvm::consumeError(parsed.takeError());
        history.dropped_partial_last_line = true;
        break;
      }
      return NotJson(name, line_number, parsed.takeError());
    }
    const json::Object* record = parsed->getAsObject();
    if (record == nullptr) {
      if (!complete) {
        history.dropped_partial_last_line = true;
        break;
      }
      return LineError(name, line_number, 1,
                       fmt::format("found {}; each line of metrics.jsonl is one JSON object such as "
                                   "{{\"step\":20,\"time\":1718000000.5,\"loss\":0.25}}",
                                   KindOf(*parsed)));
    }
    const json::Value* step_value = record->get("step");
    llvm::Optional<int64_t> step = step_value ? step_value->getAsInteger() : llvm::None;
    if (!step || *step < 0) {
      return LineError(name, line_number, ColumnOfStep(line),
                       step_value == nullptr
                           ? std::string("the record has no `step`; every record names its step as "
                                         "\"step\": N, an integer >= 0")
                           : fmt::format("`step` is {}; expected an integer >= 0",
                                         step ? std::to_string(*step) : KindOf(*step_value)));
    }
    ++history.records;

    // Marker lines (`event`) carry no metrics: a resume says where the run went back to.
    if (const json::Value* event = record->get("event")) {
      if (event->getAsString() == llvm::StringRef("resume")) {
        // The run continued from its checkpoint at `step`: values logged after it are the
        // abandoned attempt's.
        ResumePoint& resume = history.resumes.emplace_back(ResumePoint{*step, line_number, ""});
        if (llvm::Optional<llvm::StringRef> checkpoint = record->getString("checkpoint"))
          resume.checkpoint = checkpoint->str();
        for (auto& [key, values] : columns) values.erase(values.upper_bound(*step), values.end());
        highest_step = *step;
      }
      continue;
    }
    // A step below one already read, with no marker before it: the run went back to a
    // checkpoint and repeats steps, and the values from there on are the abandoned attempt's.
    if (*step < highest_step) {
      // Resumed at the step before the first one repeated.
      history.resumes.push_back({*step - 1, line_number, ""});
      for (auto& [key, values] : columns) values.erase(values.lower_bound(*step), values.end());
      highest_step = *step;
    }
    highest_step = std::max(highest_step, *step);

    for (const auto& [key, value] : *record) {
      if (key == "step" || key == "time") continue;
      if (value.kind() == json::Value::Null) {
        columns[key.str()][*step] = std::numeric_limits<double>::quiet_NaN();
      } else if (llvm::Optional<double> number = value.getAsNumber()) {
        columns[key.str()][*step] = *number;
      }
    }
  }
  for (auto& [key, values] : columns) {
    Series& one = history.series.emplace_back();
    one.name = key;
    one.points.assign(values.begin(), values.end());
  }
  return history;
}

llvm::Expected<MetricsHistory> ReadMetricsHistory(const std::string& path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!buffer) {
    return llvm::createStringError(
        buffer.getError(), "%s",
        fmt::format("cannot read `{}`: {}", path, buffer.getError().message()).c_str());
  }
  return ParseMetricsHistory((*buffer)->getBuffer(), path);
}

std::vector<double> Values(const Series& series) {
  std::vector<double> values;
  values.reserve(series.points.size());
  for (const auto& [step, value] : series.points) values.push_back(value);
  return values;
}

}  // namespace accel::rt::observe
