#include "runtime/launch/worker_output.h"

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

namespace accel::rt::launch {
namespace {

// A worker printing without newlines (a progress bar) must not grow the launcher's memory
// without bound.
constexpr size_t kMaxLine = 64 * 1024;

}  // namespace

void LogTail::Add(std::string line) {
  if (capacity_ == 0) return;
  if (lines_.size() == capacity_) lines_.pop_front();
  lines_.push_back(std::move(line));
}

void WorkerOutput::Add(int rank, OutputStream stream, std::string_view bytes) {
  std::pair<int, OutputStream> key{rank, stream};
  std::string& pending = partial_[key];
  // A redraw is relayed whole (the worker writes each in one go), so text that follows one
  // without a '\r' or newline of its own is a new line: the progress line stays above it.
  if (redrawing_.count(key) && !pending.empty() && !bytes.empty() && bytes.front() != '\r' &&
      bytes.front() != '\n') {
    print_(stream, "\n");
    redraw_shown_ = false;
    redrawing_.erase(key);
    pending.clear();
  }
  while (!bytes.empty()) {
    size_t end = bytes.find_first_of("\r\n");
    size_t take = std::min(end == std::string_view::npos ? bytes.size() : end, kMaxLine - pending.size());
    pending.append(bytes.substr(0, take));
    bytes.remove_prefix(take);
    char terminator = !bytes.empty() && (bytes.front() == '\n' || bytes.front() == '\r') ? bytes.front() : 0;
    if (terminator != 0) bytes.remove_prefix(1);
    if (terminator == '\r') {
      // A redraw begins: an earlier redraw in the same read is already stale; text that was
      // not a redraw is a line of its own.
      if (!pending.empty() && !redrawing_.count(key)) EmitLine(rank, stream, pending);
      pending.clear();
      redrawing_.insert(key);
    } else if (terminator == '\n' || pending.size() >= kMaxLine) {
      EmitLine(rank, stream, pending);
      pending.clear();
    }
  }
  // The worker flushes after each redraw: show it now, not when the next one starts. It stays
  // pending, so that a redraw split across reads is shown whole.
  if (redrawing_.count(key) && !pending.empty()) EmitRedraw(rank, stream, pending);
}

void WorkerOutput::Finish(int rank, OutputStream stream) {
  auto it = partial_.find({rank, stream});
  if (it == partial_.end()) return;
  if (!it->second.empty() || redrawing_.count({rank, stream})) EmitLine(rank, stream, it->second);
  partial_.erase(it);
  redrawing_.erase({rank, stream});
}

std::vector<std::string> WorkerOutput::Tail(int rank) const {
  auto it = tails_.find(rank);
  if (it == tails_.end()) return {};
  return {it->second.lines().begin(), it->second.lines().end()};
}

std::optional<int> WorkerOutput::ErrorPrintedBy(int rank) const {
  auto it = last_error_.find(rank);
  if (it == last_error_.end()) return std::nullopt;
  return errors_.at(it->second);
}

std::optional<std::string> WorkerOutput::ErrorOf(int rank) const {
  auto it = last_error_.find(rank);
  if (it == last_error_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> WorkerOutput::ErrorAsPrinted(int rank) const {
  auto text = last_error_.find(rank);
  if (text == last_error_.end()) return {};
  auto printed = printed_errors_.find(text->second);
  return printed == printed_errors_.end() ? std::vector<std::string>{} : printed->second;
}

std::vector<int> WorkerOutput::RanksWithError(int rank) const {
  std::vector<int> ranks;
  auto it = last_error_.find(rank);
  if (it == last_error_.end()) return ranks;
  for (const auto& [other, text] : last_error_)
    if (text == it->second) ranks.push_back(other);
  return ranks;  // ascending: last_error_ is ordered by rank
}

void WorkerOutput::EmitLine(int rank, OutputStream stream, std::string_view line) {
  std::string prefix = prefix_ && rank != 0 ? fmt::format("[rank {}] ", rank) : "";
  if (redrawing_.erase({rank, stream}) > 0) {
    // The end of a redrawn line (its last redraw was relayed already): a newline keeps it on
    // the screen; text after the last '\r' (a message over the bar) replaces it.
    if (!line.empty()) tails_.try_emplace(rank, tail_lines_).first->second.Add(std::string(line));
    print_(stream, line.empty() ? std::string("\n") : fmt::format("\r{}{}\n", prefix, line));
    redraw_shown_ = false;
    return;
  }
  // Every rank that fails the same way (a missing file) says so: the text is printed once, and
  // the verdict names the ranks. The lines indented below an error line (a traceback) are part
  // of it: relayed with it, kept out of the tail (the verdict shows what came before the error).
  std::pair<int, OutputStream> key{rank, stream};
  std::string own = fmt::format("{}rank {}: ", kWorkerErrorPrefix, rank);
  bool continues_error = errors_below_.count(key) > 0 && line.rfind("  ", 0) == 0;
  if (!continues_error) {
    errors_below_.erase(key);
    tails_.try_emplace(rank, tail_lines_).first->second.Add(std::string(line));
  }
  if (line.rfind(own, 0) == 0) {
    auto [first, added] = errors_.try_emplace(std::string(line.substr(own.size())), rank);
    last_error_[rank] = first->first;
    errors_below_[key] = !added;
    if (!added) return;
    printed_errors_[first->first] = {std::string(line)};
  } else if (continues_error && errors_below_[key]) {
    return;  // below another rank's copy of an error already shown
  } else if (continues_error) {
    std::vector<std::string>& printed = printed_errors_[last_error_[rank]];
    if (printed.size() < kMaxErrorLines) printed.emplace_back(line);
  }
  // Rank 0 speaks for the job, as Accelerate's main process does: its lines stay as written (no
  // prefix), so tools that read a run's output see the same text with one worker or many.
  // Below a redrawn line, not glued to its end; the next redraw comes back under this line.
  print_(stream, fmt::format("{}{}{}\n", redraw_shown_ ? "\n" : "", prefix, line));
  redraw_shown_ = false;
}

void WorkerOutput::EmitRedraw(int rank, OutputStream stream, std::string_view text) {
  std::string prefix = prefix_ && rank != 0 ? fmt::format("[rank {}] ", rank) : "";
  print_(stream, fmt::format("\r{}{}", prefix, text));
  redraw_shown_ = true;
}

void PrintToStandardStream(OutputStream stream, std::string_view text) {
  std::FILE* file = stream == OutputStream::kStdout ? stdout : stderr;
  std::fwrite(text.data(), 1, text.size(), file);
  std::fflush(file);
}

}  // namespace accel::rt::launch
