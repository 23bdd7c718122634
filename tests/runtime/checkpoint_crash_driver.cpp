// The program tests/runtime/checkpoint_crash_test.py kills with SIGKILL at random moments.
//
//   checkpoint_crash_driver save PROJECT_DIR [STEPS] [TOTAL_LIMIT]
//     Resumes from the newest complete checkpoint (none: starts at 0) and saves checkpoints
//     in a loop, STEPS of them (0: until killed), each a sharded safetensors state of
//     $ACCEL_CRASH_STATE_BYTES bytes (default 4 MiB) plus two JSON files, with rotation at
//     TOTAL_LIMIT (default 2). Prints `begin N` before and
//     `saved N` after each save, flushed, so the test knows what was durable when it killed.
//   checkpoint_crash_driver verify PROJECT_DIR MIN_ITERATION [--no-temporaries]
//     Exits 0 when the promises hold after a crash: LoadLatest() finds a checkpoint, its
//     iteration is at least MIN_ITERATION (the last `saved N`; -1 when none was seen, and then
//     having no checkpoint at all is fine), its bytes are exactly what step N saves, and every
//     other `checkpoint_N` folder verifies too (a crash never leaves a half-written or
//     half-deleted checkpoint under a checkpoint's name). With --no-temporaries, no `*.tmp`
//     entry may remain (run it after a save that completed). Prints what was wrong otherwise.
//   checkpoint_crash_driver save-sharded PROJECT_DIR [STEPS] [TOTAL_LIMIT] [WORLD]
//   checkpoint_crash_driver verify-sharded PROJECT_DIR MIN_ITERATION [--no-temporaries]
//     The same for sharded saves: each save forks WORLD (default 4) writer processes, one per
//     rank, that write their slices of the state (and of an optimizer state) into the staging
//     folder; the parent waits for all of them (the barrier) and finishes as rank 0. A rank
//     that dies fails the save (exit 3). `verify-sharded` also reads every tensor back through
//     the index on 3 ranks and compares it with what the step saved.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "runtime/checkpoint/checkpoint_store.h"
#include "runtime/checkpoint/sharded_reader.h"
#include "runtime/checkpoint/sharded_state.h"
#include "runtime/checkpoint/shards.h"

namespace {

namespace fs = std::filesystem;
using namespace accel::rt::checkpoint;

constexpr size_t kTensors = 6;

// Everything step `step` saves, regenerated identically by `verify`.
struct StepState {
  StepState(uint64_t step, uint64_t bytes) {
    // splitmix64 seeded by the step: distinct bytes per step, cheap to regenerate.
    uint64_t x = step * 0x9E3779B97F4A7C15ull + 1;
    for (size_t t = 0; t < kTensors; ++t) {
      std::string data(bytes / kTensors / 4 * 4, '\0');
      for (size_t i = 0; i + 8 <= data.size(); i += 8) {
        uint64_t z = (x += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        std::memcpy(data.data() + i, &z, 8);
      }
      storage.push_back(std::move(data));
    }
    for (size_t t = 0; t < kTensors; ++t) {
      tensors.push_back({fmt::format("layers.{}.weight", t),
                         "F32",
                         {static_cast<int64_t>(storage[t].size() / 4)},
                         storage[t]});
    }
    rng = fmt::format("{{\"step\": {}, \"seed\": {}}}\n", step, step * 31 + 7);
    scheduler = fmt::format("{{\"last_epoch\": {}, \"lr\": 0.001}}\n", step);
    // Shards of about a third of the state: each save writes several files.
    llvm::Expected<EncodedShards> encoded = EncodeShards(tensors, bytes / 3 + 1);
    if (!encoded) {
      std::fprintf(stderr, "%s\n", llvm::toString(encoded.takeError()).c_str());
      std::exit(2);
    }
    shards = std::move(*encoded);
  }

  std::vector<CheckpointFile> Files() const {
    std::vector<CheckpointFile> files = shards.Files();
    files.push_back({"random_states_0.json", {rng}});
    files.push_back({"scheduler.json", {scheduler}});
    return files;
  }

  std::vector<std::string> storage;
  std::vector<TensorRef> tensors;
  std::string rng, scheduler;
  EncodedShards shards;
};

int Save(const std::string& project, uint64_t steps, uint64_t total_limit, uint64_t bytes) {
  llvm::Expected<CheckpointStore> store = CheckpointStore::Open({project, true, total_limit, 0});
  if (!store) {
    std::fprintf(stderr, "%s\n", llvm::toString(store.takeError()).c_str());
    return 2;
  }
  // Nothing saved yet (or only a killed first save): start at 0; otherwise resume.
  if (!ListCheckpoints(store->checkpoints_dir()).empty()) {
    llvm::Expected<VerifiedCheckpoint> latest = store->LoadLatest();
    if (!latest) {
      std::fprintf(stderr, "cannot resume: %s\n", llvm::toString(latest.takeError()).c_str());
      return 1;
    }
    for (const std::string& warning : latest->warnings)
      std::fprintf(stderr, "warning: %s\n", warning.c_str());
  }
  for (uint64_t done = 0; steps == 0 || done < steps; ++done) {
    uint64_t step = store->iteration();
    StepState state(step, bytes);
    std::printf("begin %llu\n", static_cast<unsigned long long>(step));
    std::fflush(stdout);
    llvm::Expected<SaveResult> result = store->Save(state.Files());
    if (!result) {
      std::fprintf(stderr, "save %llu failed: %s\n", static_cast<unsigned long long>(step),
                   llvm::toString(result.takeError()).c_str());
      return 1;
    }
    std::printf("saved %llu\n", static_cast<unsigned long long>(step));
    std::fflush(stdout);
  }
  return 0;
}

// Compares a verified checkpoint with what step `iteration` saves; empty when equal.
std::string Compare(const VerifiedCheckpoint& checkpoint, uint64_t bytes) {
  StepState state(checkpoint.iteration, bytes);
  std::vector<CheckpointFile> expected = state.Files();
  if (checkpoint.files.size() != expected.size()) {
    return fmt::format("{}: {} files, step {} saves {}", checkpoint.path, checkpoint.files.size(),
                       checkpoint.iteration, expected.size());
  }
  for (const CheckpointFile& file : expected) {
    auto it = checkpoint.files.find(file.name);
    if (it == checkpoint.files.end()) return fmt::format("{}: `{}` is missing", checkpoint.path, file.name);
    std::string content;
    for (std::string_view part : file.parts) content.append(part);
    if (it->second->view() != content) {
      return fmt::format("{}: `{}` verifies against its manifest but is not what step {} saved",
                         checkpoint.path, file.name, checkpoint.iteration);
    }
  }
  return "";
}

int Verify(const std::string& project, int64_t min_iteration, bool no_temporaries, uint64_t bytes,
           std::string (*compare)(const VerifiedCheckpoint&, uint64_t)) {
  llvm::Expected<CheckpointStore> store = CheckpointStore::Open({project, true, std::nullopt, 0});
  if (!store) return 2;
  std::vector<std::string> problems;
  llvm::Expected<VerifiedCheckpoint> latest = store->LoadLatest();
  if (!latest) {
    std::string error = llvm::toString(latest.takeError());
    if (min_iteration >= 0) problems.push_back("no checkpoint loads after `saved`: " + error);
  } else {
    for (const std::string& warning : latest->warnings) problems.push_back("LoadLatest warned: " + warning);
    if (static_cast<int64_t>(latest->iteration) < min_iteration) {
      problems.push_back(
          fmt::format("latest complete checkpoint is {}, but {} was reported saved: rotation or the "
                      "save lost a durable checkpoint",
                      latest->iteration, min_iteration));
    }
    std::string mismatch = compare(*latest, bytes);
    if (!mismatch.empty()) problems.push_back(mismatch);
  }
  // SIGKILL is not a power loss: every checkpoint folder that exists must be whole.
  for (const auto& [number, path] : ListCheckpoints(store->checkpoints_dir())) {
    llvm::Expected<VerifiedCheckpoint> checkpoint = VerifyCheckpointDirectory(path);
    if (!checkpoint) {
      problems.push_back("a checkpoint folder does not verify: " + llvm::toString(checkpoint.takeError()));
    } else if (std::string mismatch = compare(*checkpoint, bytes); !mismatch.empty()) {
      problems.push_back(mismatch);
    }
  }
  if (no_temporaries && fs::exists(store->checkpoints_dir())) {
    for (const auto& entry : fs::directory_iterator(store->checkpoints_dir())) {
      std::string name = entry.path().filename().string();
      if (name.size() > 4 && name.substr(name.size() - 4) == ".tmp") {
        problems.push_back(fmt::format("{} survived a completed save", entry.path().string()));
      }
    }
  }
  for (const std::string& problem : problems) std::printf("FAIL %s\n", problem.c_str());
  if (problems.empty()) std::printf("ok %lld\n", latest ? static_cast<long long>(latest->iteration) : -1LL);
  return problems.empty() ? 0 : 1;
}

// The sharded form of step `step`'s state: the tensors of StepState as the model, those of
// another seed (half the size) as the optimizer state, split as FSDP splits flat parameters.
struct ShardedStepState {
  ShardedStepState(uint64_t step, uint64_t bytes)
      : model(step, bytes), optimizer(step + 1'000'003, bytes / 2) {
    rng = model.rng;
    scheduler = model.scheduler;
  }

  const StepState& of(ShardedKind kind) const { return kind == ShardedKind::kModel ? model : optimizer; }
  static std::string NameOf(ShardedKind kind, const std::string& name) {
    return kind == ShardedKind::kModel ? name : "state." + name + ".exp_avg";
  }

  // Each kind's tensors back to back, split into `world` nearly equal contiguous ranges.
  static std::vector<std::pair<uint64_t, uint64_t>> Ranges(const StepState& state, uint32_t rank,
                                                           uint32_t world) {
    uint64_t total = 0;
    for (const TensorRef& t : state.tensors) total += t.bytes.size() / 4;
    uint64_t per_rank = (total + world - 1) / world;
    uint64_t from = std::min(total, rank * per_rank), to = std::min(total, (rank + 1) * per_rank);
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    uint64_t offset = 0;
    for (const TensorRef& t : state.tensors) {
      uint64_t count = t.bytes.size() / 4;
      ranges.emplace_back(std::clamp(from, offset, offset + count) - offset,
                          std::clamp(to, offset, offset + count) - offset);
      offset += count;
    }
    return ranges;
  }

  RankSlices SlicesOf(uint32_t rank, uint32_t world) const {
    RankSlices slices;
    for (ShardedKind kind : kShardedKinds) {
      const StepState& state = of(kind);
      std::vector<std::pair<uint64_t, uint64_t>> ranges = Ranges(state, rank, world);
      for (size_t t = 0; t < state.tensors.size(); ++t) {
        const TensorRef& tensor = state.tensors[t];
        auto [start, end] = ranges[t];
        (kind == ShardedKind::kModel ? slices.model : slices.optimizer)
            .push_back({NameOf(kind, tensor.name), "F32", tensor.shape, start, end,
                        tensor.bytes.substr(start * 4, (end - start) * 4)});
      }
    }
    return slices;
  }

  std::vector<CheckpointFile> Files() const {
    return {{"random_states_0.json", {rng}}, {"scheduler.json", {scheduler}}};
  }

  StepState model, optimizer;
  std::string rng, scheduler;
};

int SaveSharded(const std::string& project, uint64_t steps, uint64_t total_limit, uint32_t world,
                uint64_t bytes) {
  llvm::Expected<CheckpointStore> store = CheckpointStore::Open({project, true, total_limit, 0});
  if (!store) {
    std::fprintf(stderr, "%s\n", llvm::toString(store.takeError()).c_str());
    return 2;
  }
  if (!ListCheckpoints(store->checkpoints_dir()).empty()) {
    llvm::Expected<VerifiedCheckpoint> latest = store->LoadLatest();
    if (!latest) {
      std::fprintf(stderr, "cannot resume: %s\n", llvm::toString(latest.takeError()).c_str());
      return 1;
    }
  }
  for (uint64_t done = 0; steps == 0 || done < steps; ++done) {
    uint64_t step = store->iteration();
    ShardedStepState state(step, bytes);
    std::printf("begin %llu\n", static_cast<unsigned long long>(step));
    std::fflush(stdout);
    // One process per rank, as on a machine with `world` workers: a kill can catch any of them
    // in the middle of its own file.
    std::vector<pid_t> ranks;
    for (uint32_t rank = 0; rank < world; ++rank) {
      pid_t pid = ::fork();
      if (pid < 0) {
        std::perror("fork");
        return 2;
      }
      if (pid == 0) {
        llvm::Error error =
            WriteRankSlices(store->ShardedStagingDir(), rank, world, state.SlicesOf(rank, world));
        if (error) std::fprintf(stderr, "rank %u: %s\n", rank, llvm::toString(std::move(error)).c_str());
        std::fflush(stderr);
        ::_exit(error ? 1 : 0);
      }
      ranks.push_back(pid);
    }
    // The barrier: every rank must have written before rank 0 may finish.
    bool all_written = true;
    for (uint32_t rank = 0; rank < world; ++rank) {
      int status = 0;
      ::waitpid(ranks[rank], &status, 0);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::fprintf(stderr, "rank %u did not finish writing its slices\n", rank);
        all_written = false;
      }
    }
    if (!all_written) return 3;
    llvm::Expected<SaveResult> result = store->FinishSharded(world, state.Files());
    if (!result) {
      std::fprintf(stderr, "save %llu failed: %s\n", static_cast<unsigned long long>(step),
                   llvm::toString(result.takeError()).c_str());
      return 1;
    }
    std::printf("saved %llu\n", static_cast<unsigned long long>(step));
    std::fflush(stdout);
  }
  return 0;
}

// Compares a verified sharded checkpoint with what step `iteration` saved, reading every
// tensor back as 3 ranks would; empty when equal.
std::string CompareSharded(const VerifiedCheckpoint& checkpoint, uint64_t bytes) {
  ShardedStepState state(checkpoint.iteration, bytes);
  llvm::Expected<ShardedStateReader> reader = ShardedStateReader::Open(checkpoint);
  if (!reader) return llvm::toString(reader.takeError());
  for (ShardedKind kind : kShardedKinds) {
    const StepState& expected = state.of(kind);
    if (reader->tensors(kind).size() != expected.tensors.size()) {
      return fmt::format("{}: {} {} tensors, step {} saved {}", checkpoint.path, reader->tensors(kind).size(),
                         KindName(kind), checkpoint.iteration, expected.tensors.size());
    }
    for (size_t t = 0; t < expected.tensors.size(); ++t) {
      std::string name = ShardedStepState::NameOf(kind, expected.tensors[t].name);
      std::string assembled;
      for (uint32_t rank = 0; rank < 3; ++rank) {
        auto [start, end] = ShardedStepState::Ranges(expected, rank, 3)[t];
        llvm::Expected<std::string> part = reader->ReadRange(kind, name, start, end);
        if (!part) return llvm::toString(part.takeError());
        assembled += *part;
      }
      if (assembled != expected.tensors[t].bytes) {
        return fmt::format("{}: {} tensor `{}` reads back other than step {} saved it", checkpoint.path,
                           KindName(kind), name, checkpoint.iteration);
      }
    }
  }
  for (const CheckpointFile& file : state.Files()) {
    auto it = checkpoint.files.find(file.name);
    if (it == checkpoint.files.end() || it->second->view() != file.parts[0]) {
      return fmt::format("{}: `{}` is missing or not what step {} saved", checkpoint.path, file.name,
                         checkpoint.iteration);
    }
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  // The state size must agree between `save` and `verify`; both read it from the environment.
  const char* size_text = std::getenv("ACCEL_CRASH_STATE_BYTES");
  uint64_t bytes = size_text ? std::strtoull(size_text, nullptr, 10) : (uint64_t{4} << 20);
  if (args.size() >= 2 && args[0] == "save") {
    uint64_t steps = args.size() > 2 ? std::strtoull(args[2].c_str(), nullptr, 10) : 0;
    uint64_t total_limit = args.size() > 3 ? std::strtoull(args[3].c_str(), nullptr, 10) : 2;
    return Save(args[1], steps, total_limit, bytes);
  }
  if (args.size() >= 2 && args[0] == "save-sharded") {
    uint64_t steps = args.size() > 2 ? std::strtoull(args[2].c_str(), nullptr, 10) : 0;
    uint64_t total_limit = args.size() > 3 ? std::strtoull(args[3].c_str(), nullptr, 10) : 2;
    uint64_t world = args.size() > 4 ? std::strtoull(args[4].c_str(), nullptr, 10) : 4;
    return SaveSharded(args[1], steps, total_limit, static_cast<uint32_t>(world), bytes);
  }
  if (args.size() >= 3 && (args[0] == "verify" || args[0] == "verify-sharded")) {
    bool no_temporaries = args.size() > 3 && args[3] == "--no-temporaries";
    return Verify(args[1], std::strtoll(args[2].c_str(), nullptr, 10), no_temporaries, bytes,
                  args[0] == "verify" ? &Compare : &CompareSharded);
  }
  std::fprintf(
      stderr,
      "usage: %s save PROJECT_DIR [STEPS] [TOTAL_LIMIT]\n       %s verify PROJECT_DIR MIN_ITERATION "
      "[--no-temporaries]\n       %s save-sharded PROJECT_DIR [STEPS] [TOTAL_LIMIT] [WORLD]\n       %s "
      "verify-sharded PROJECT_DIR MIN_ITERATION [--no-temporaries]\n(state size: ACCEL_CRASH_STATE_BYTES, "
      "default 4 MiB)\n",
      argv[0], argv[0], argv[0], argv[0]);
  return 2;
}
