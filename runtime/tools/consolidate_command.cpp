#include "runtime/tools/consolidate_command.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "compiler/cli/arguments.h"
#include "runtime/checkpoint/atomic_file.h"
#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/checkpoint/safetensors.h"
#include "runtime/checkpoint/sharded_reader.h"

namespace accel::tools {
namespace {

namespace fs = std::filesystem;
namespace ckpt = rt::checkpoint;

constexpr int kExitBadCheckpoint = 1;
constexpr int kExitUsage = 2;

constexpr size_t kHelpColumn = 24;

std::string Usage(const std::vector<cli::Option>& table) {
  return R"(usage: accelrun consolidate <checkpoint-dir> -o <model.safetensors> [--optimizer <file>]

Merges a sharded checkpoint (one model and one optimizer file per rank, written by sharded
data parallel training) into one safetensors file of whole tensors, loadable by any
safetensors reader. Every file is first verified against the checkpoint's manifest.

options:
)" + cli::FormatOptions(table, kHelpColumn);
}

// Writes every tensor of `kind` whole to `path`, each assembled from its slices' mapped bytes.
// Returns a message for the user, or "" once written.
std::string WriteWhole(const ckpt::ShardedStateReader& reader, ckpt::ShardedKind kind,
                       const std::string& path, size_t& tensor_count, uint64_t& byte_count) {
  std::vector<ckpt::ScatteredTensorRef> tensors;
  for (const auto& [name, tensor] : reader.tensors(kind)) {
    llvm::Expected<std::vector<std::string_view>> views =
        reader.Views(kind, name, 0, ckpt::ElementCount(tensor.shape).value_or(0));
    if (!views) return llvm::toString(views.takeError());
    tensors.push_back({name, tensor.dtype, tensor.shape, std::move(*views)});
  }
  llvm::Expected<ckpt::EncodedSafetensors> encoded =
      ckpt::EncodeScatteredSafetensors(tensors, {{"format", "pt"}});
  if (!encoded) return fmt::format("{}: {}", path, llvm::toString(encoded.takeError()));
  if (llvm::Error error = ckpt::WriteFileAtomically(path, encoded->Parts()))
    return llvm::toString(std::move(error));
  tensor_count = tensors.size();
  byte_count = encoded->size();
  return "";
}

// Why none of `outputs` may be written, or "": an output inside the checkpoint folder (after
// resolving links), or one that is a file of it under another name (a hard link), would replace
// part of the checkpoint being read; two outputs on one file would overwrite each other.
std::string RefuseOutputInsideCheckpoint(const std::string& checkpoint, const std::vector<std::string>& outputs) {
  std::error_code ec;
  const fs::path folder = fs::weakly_canonical(checkpoint, ec);
  std::vector<fs::path> resolved;
  for (const std::string& output : outputs) {
    if (output.empty()) continue;
    fs::path path = fs::weakly_canonical(output, ec);
    auto [inside, rest] = std::mismatch(folder.begin(), folder.end(), path.begin(), path.end());
    if (inside == folder.end()) {
      return fmt::format("`{}` is inside the checkpoint `{}`; writing it would replace part of what is being "
                         "read: write the consolidated file outside the checkpoint folder",
                         output, checkpoint);
    }
    for (const auto& entry : fs::directory_iterator(folder, ec)) {
      if (fs::exists(path, ec) && fs::equivalent(path, entry.path(), ec)) {
        return fmt::format("`{}` is the checkpoint's own `{}` under another name; write the consolidated file "
                           "to a new path",
                           output, entry.path().filename().string());
      }
    }
    for (const fs::path& earlier : resolved) {
      if (earlier == path) return fmt::format("`-o` and `--optimizer` both name `{}`; give each its own file", output);
    }
    resolved.push_back(path);
  }
  return "";
}

}  // namespace

int RunConsolidateCommand(const std::vector<std::string>& args) {
  std::string checkpoint_arg;
  std::string output;
  std::string optimizer_output;
  bool help = false;
  std::vector<cli::Option> table = {
      cli::Option{.names = {"-o", "--output"},
                  .value_name = "<file>",
                  .help = "the safetensors file of whole model tensors to write",
                  .apply = cli::StoreText(output),
                  .needs = "a file name",
                  .allow_empty = false},
      cli::Option{
          .names = {"--optimizer"},
          .value_name = "<file>",
          .help = "also write the whole optimizer state tensors\n(e.g. `state.0.weight.exp_avg`) there",
          .apply = cli::StoreText(optimizer_output),
          .needs = "a file name",
          .allow_empty = false},
      cli::Option{
          .names = {"-h", "--help"}, .help = "print this help", .apply = cli::SetFlag(help), .exits = true},
  };
  std::string error = cli::Parse(args, table, [&](const std::string& arg) -> std::string {
    if (!checkpoint_arg.empty())
      return fmt::format("`accelrun consolidate` takes one checkpoint directory, not both `{}` and `{}`",
                         checkpoint_arg, arg);
    checkpoint_arg = arg;
    return "";
  });
  if (help) {
    fmt::print("{}", Usage(table));
    return 0;
  }
  if (error.empty() && checkpoint_arg.empty()) error = "missing the checkpoint directory to consolidate";
  if (error.empty() && output.empty()) error = "missing `-o <file>`, the safetensors file to write";
  if (!error.empty()) {
    fmt::print(stderr, "accelrun: error: {}\n\n{}", error, Usage(table));
    return kExitUsage;
  }
  std::error_code ec;
  if (!fs::is_directory(checkpoint_arg, ec)) {
    fmt::print(stderr,
               "accelrun: error: `{}` is not a directory; pass a sharded checkpoint folder (e.g. "
               "`<project_dir>/checkpoints/checkpoint_N`)\n",
               checkpoint_arg);
    return kExitUsage;
  }
  if (std::string refused = RefuseOutputInsideCheckpoint(checkpoint_arg, {output, optimizer_output});
      !refused.empty()) {
    fmt::print(stderr, "accelrun: error: {}\n", refused);
    return kExitUsage;
  }
  llvm::Expected<ckpt::VerifiedCheckpoint> checkpoint = ckpt::VerifyCheckpointDirectory(checkpoint_arg);
  if (!checkpoint) {
    fmt::print(stderr, "accelrun: error: {}\n", llvm::toString(checkpoint.takeError()));
    return kExitBadCheckpoint;
  }
  if (!ckpt::IsShardedCheckpoint(*checkpoint)) {
    fmt::print(stderr,
               "accelrun: error: {}: not a sharded checkpoint (no {}); its weights are whole already, "
               "in model.safetensors or the shards its model.safetensors.index.json names\n",
               checkpoint_arg, ckpt::kShardedIndexName);
    return kExitBadCheckpoint;
  }
  llvm::Expected<ckpt::ShardedStateReader> reader = ckpt::ShardedStateReader::Open(*checkpoint);
  if (!reader) {
    fmt::print(stderr, "accelrun: error: {}\n", llvm::toString(reader.takeError()));
    return kExitBadCheckpoint;
  }
  struct Target {
    ckpt::ShardedKind kind;
    std::string path;
  };
  std::vector<Target> targets = {{ckpt::ShardedKind::kModel, output}};
  if (!optimizer_output.empty()) targets.push_back({ckpt::ShardedKind::kOptimizer, optimizer_output});
  for (const Target& target : targets) {
    size_t tensor_count = 0;
    uint64_t byte_count = 0;
    for (const std::string& stale : ckpt::RemoveStaleTemporaries(target.path))
      fmt::print(stderr, "accelrun: removed {}, left by a consolidate that was stopped\n", stale);
    if (std::string failed = WriteWhole(*reader, target.kind, target.path, tensor_count, byte_count);
        !failed.empty()) {
      fmt::print(stderr, "accelrun: error: {}\n", failed);
      return kExitUsage;
    }
    fmt::print("accelrun: wrote {}: {} {} tensor{}, {} bytes, from {} rank{}\n", target.path, tensor_count,
               ckpt::KindName(target.kind), tensor_count == 1 ? "" : "s", byte_count, reader->world_size(),
               reader->world_size() == 1 ? "" : "s");
  }
  return 0;
}

}  // namespace accel::tools
