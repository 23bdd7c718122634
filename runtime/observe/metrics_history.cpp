#include "runtime/observe/metrics_history.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <regex>

#include <fmt/format.h>

#include "compiler/plan/plan.h"
#include "llvm/Support/JSON.h"

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

namespace {

// ParseMetricsHistory's rules applied one line at a time, so that a file is read as a stream:
// each series is kept as a vector in step order (the order a run logs them), which costs 16
// bytes a point where a map of steps cost about 64.
class HistoryBuilder {
 public:
  explicit HistoryBuilder(std::string_view name) : name_(name) {}

  // Reads line `line_number`; `complete` when it ended with a newline. Sets `*cut_short` when
  // it is the cut-short last line of a killed write, which ends the file.
  llvm::Error Add(std::string_view line, size_t line_number, bool complete, bool* cut_short) {
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) return llvm::Error::success();
    // LLVM's parser recurses once per level: a hostile line must not exhaust the stack. A
    // record nests one level; plan files' bound is far above that.
    if (plan::JsonNestsDeeperThan(line, plan::kMaxJsonDepth)) {
      return LineError(name_, line_number, 1,
                       fmt::format("nested deeper than {} levels; a metrics record is one flat object",
                                   plan::kMaxJsonDepth));
    }
    llvm::Expected<json::Value> parsed = json::parse(line);
    if (!parsed) {
      if (!complete) {
        // The writer puts each line down in one write(2): only a kill leaves half of one.
        llvm::consumeError(parsed.takeError());
        *cut_short = true;
        return llvm::Error::success();
      }
      return NotJson(name_, line_number, parsed.takeError());
    }
    const json::Object* record = parsed->getAsObject();
    if (record == nullptr) {
      if (!complete) {
        *cut_short = true;
        return llvm::Error::success();
      }
      return LineError(name_, line_number, 1,
                       fmt::format("found {}; each line of metrics.jsonl is one JSON object such as "
                                   "{{\"step\":20,\"time\":1718000000.5,\"loss\":0.25}}",
                                   KindOf(*parsed)));
    }
    const json::Value* step_value = record->get("step");
    llvm::Optional<int64_t> step = step_value ? step_value->getAsInteger() : llvm::None;
    if (!step || *step < 0) {
      return LineError(name_, line_number, ColumnOfStep(line),
                       step_value == nullptr
                           ? std::string("the record has no `step`; every record names its step as "
                                         "\"step\": N, an integer >= 0")
                           : fmt::format("`step` is {}; expected an integer >= 0",
                                         step ? std::to_string(*step) : KindOf(*step_value)));
    }
    ++history_.records;

    // Marker lines (`event`) carry no metrics: a resume says where the run went back to.
    if (const json::Value* event = record->get("event")) {
      if (event->getAsString() == llvm::StringRef("resume")) {
        // The run continued from its checkpoint at `step`: values logged after it are the
        // abandoned attempt's.
        ResumePoint& resume = history_.resumes.emplace_back(ResumePoint{*step, line_number, ""});
        if (llvm::Optional<llvm::StringRef> checkpoint = record->getString("checkpoint"))
          resume.checkpoint = checkpoint->str();
        DropAfter(*step);
        highest_step_ = *step;
      }
      return llvm::Error::success();
    }
    // A step below one already read, with no marker before it: the run went back to a
    // checkpoint and repeats steps, and the values from there on are the abandoned attempt's.
    if (*step < highest_step_) {
      // Resumed at the step before the first one repeated.
      history_.resumes.push_back({*step - 1, line_number, ""});
      DropFrom(*step);
      highest_step_ = *step;
    }
    highest_step_ = std::max(highest_step_, *step);

    for (const auto& [key, value] : *record) {
      if (key == "step" || key == "time") continue;
      if (value.kind() == json::Value::Null) {
        Put(key.str(), *step, std::numeric_limits<double>::quiet_NaN());
      } else if (llvm::Optional<double> number = value.getAsNumber()) {
        Put(key.str(), *step, *number);
      }
    }
    return llvm::Error::success();
  }

  MetricsHistory Finish(bool cut_short) && {
    history_.dropped_partial_last_line = cut_short;
    for (auto& [key, points] : columns_) {
      Series& one = history_.series.emplace_back();
      one.name = key;
      one.points = std::move(points);
    }
    return std::move(history_);
  }

 private:
  // Step `step`'s value of `key`: a later record for a step replaces the earlier value.
  void Put(const std::string& key, int64_t step, double value) {
    std::vector<std::pair<int64_t, double>>& points = columns_[key];
    if (points.empty() || points.back().first < step) {
      points.emplace_back(step, value);
      return;
    }
    auto at = std::lower_bound(points.begin(), points.end(), step,
                               [](const std::pair<int64_t, double>& point, int64_t s) { return point.first < s; });
    if (at != points.end() && at->first == step) {
      at->second = value;
    } else {
      points.insert(at, {step, value});
    }
  }

  // Drops every series' values after `step`.
  void DropAfter(int64_t step) {
    for (auto& [key, points] : columns_) {
      auto at = std::upper_bound(points.begin(), points.end(), step,
                                 [](int64_t s, const std::pair<int64_t, double>& point) { return s < point.first; });
      points.erase(at, points.end());
    }
  }

  // Drops every series' values at `step` and after.
  void DropFrom(int64_t step) {
    for (auto& [key, points] : columns_) {
      auto at = std::lower_bound(points.begin(), points.end(), step,
                                 [](const std::pair<int64_t, double>& point, int64_t s) { return point.first < s; });
      points.erase(at, points.end());
    }
  }

  std::string_view name_;
  MetricsHistory history_;
  std::map<std::string, std::vector<std::pair<int64_t, double>>> columns_;
  int64_t highest_step_ = -1;
};

}  // namespace

llvm::Expected<MetricsHistory> ParseMetricsHistory(std::string_view text, std::string_view name) {
  HistoryBuilder builder(name);
  bool cut_short = false;
  size_t line_number = 0;
  for (size_t start = 0; start < text.size() && !cut_short;) {
    size_t end = text.find('\n', start);
    bool complete = end != std::string_view::npos;
    std::string_view line = text.substr(start, complete ? end - start : std::string_view::npos);
    start = complete ? end + 1 : text.size();
    if (llvm::Error error = builder.Add(line, ++line_number, complete, &cut_short)) return error;
  }
  return std::move(builder).Finish(cut_short);
}

llvm::Expected<MetricsHistory> ReadMetricsHistory(const std::string& path) {
  // Line by line: a run's file can hold millions of records, and none of it is needed whole.
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int error = errno != 0 ? errno : ENOENT;
    return llvm::createStringError(std::error_code(error, std::generic_category()), "%s",
                                   fmt::format("cannot read `{}`: {}", path, std::strerror(error)).c_str());
  }
  HistoryBuilder builder(path);
  bool cut_short = false;
  size_t line_number = 0;
  std::string line;
  while (!cut_short && std::getline(in, line)) {
    const bool complete = !in.eof();  // getline stopped at a newline, not at the end
    if (llvm::Error error = builder.Add(line, ++line_number, complete, &cut_short)) return error;
  }
  if (in.bad()) {
    return llvm::createStringError(std::make_error_code(std::errc::io_error), "%s",
                                   fmt::format("cannot read `{}`: {}", path, std::strerror(errno)).c_str());
  }
  return std::move(builder).Finish(cut_short);
}

std::vector<double> Values(const Series& series) {
  std::vector<double> values;
  values.reserve(series.points.size());
  for (const auto& [step, value] : series.points) values.push_back(value);
  return values;
}

}  // namespace accel::rt::observe
