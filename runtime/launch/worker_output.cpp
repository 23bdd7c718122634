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
  std::string& pending = partial_[{rank, stream}];
  while (!bytes.empty()) {
    size_t newline = bytes.find('\n');
    size_t take =
        std::min(newline == std::string_view::npos ? bytes.size() : newline, kMaxLine - pending.size());
    pending.append(bytes.substr(0, take));
    bytes.remove_prefix(take);
    bool line_ends = !bytes.empty() && bytes.front() == '\n';
    if (line_ends) bytes.remove_prefix(1);
    if (line_ends || pending.size() >= kMaxLine) {
      EmitLine(rank, stream, pending);
      pending.clear();
    }
  }
}

void WorkerOutput::Finish(int rank, OutputStream stream) {
  auto it = partial_.find({rank, stream});
  if (it == partial_.end()) return;
  if (!it->second.empty()) EmitLine(rank, stream, it->second);
  partial_.erase(it);
}

std::vector<std::string> WorkerOutput::Tail(int rank) const {
  auto it = tails_.find(rank);
  if (it == tails_.end()) return {};
  return {it->second.lines().begin(), it->second.lines().end()};
}

void WorkerOutput::EmitLine(int rank, OutputStream stream, std::string_view line) {
  // Rank 0 speaks for the job, as Accelerate's main process does: its lines stay as written, so
  // tools that read a run's output see the same text with one worker or many.
  tails_.try_emplace(rank, tail_lines_).first->second.Add(std::string(line));
  print_(stream,
         prefix_ && rank != 0 ? fmt::format("[rank {}] {}\n", rank, line) : fmt::format("{}\n", line));
}

void PrintToStandardStream(OutputStream stream, std::string_view text) {
  std::FILE* file = stream == OutputStream::kStdout ? stdout : stderr;
  std::fwrite(text.data(), 1, text.size(), file);
  std::fflush(file);
}

}  // namespace accel::rt::launch
