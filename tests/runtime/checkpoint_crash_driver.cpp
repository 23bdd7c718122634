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
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "runtime/checkpoint/checkpoint_store.h"
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

int Verify(const std::string& project, int64_t min_iteration, bool no_temporaries, uint64_t bytes) {
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
    std::string mismatch = Compare(*latest, bytes);
    if (!mismatch.empty()) problems.push_back(mismatch);
  }
  // SIGKILL is not a power loss: every checkpoint folder that exists must be whole.
  for (const auto& [number, path] : ListCheckpoints(store->checkpoints_dir())) {
    llvm::Expected<VerifiedCheckpoint> checkpoint = VerifyCheckpointDirectory(path);
    if (!checkpoint) {
      problems.push_back("a checkpoint folder does not verify: " + llvm::toString(checkpoint.takeError()));
    } else if (std::string mismatch = Compare(*checkpoint, bytes); !mismatch.empty()) {
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
  if (args.size() >= 3 && args[0] == "verify") {
    bool no_temporaries = args.size() > 3 && args[3] == "--no-temporaries";
    return Verify(args[1], std::strtoll(args[2].c_str(), nullptr, 10), no_temporaries, bytes);
  }
  std::fprintf(stderr,
               "usage: %s save PROJECT_DIR [STEPS] [TOTAL_LIMIT]\n       %s verify PROJECT_DIR MIN_ITERATION "
               "[--no-temporaries]\n(state size: ACCEL_CRASH_STATE_BYTES, default 4 MiB)\n",
               argv[0], argv[0]);
  return 2;
}
