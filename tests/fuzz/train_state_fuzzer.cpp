// libFuzzer target for the run's progress in a checkpoint (runtime/engine/saved_progress.h):
// trainer_state.json and the small files beside it, which anyone who can write the checkpoint
// folder can rewrite along with its manifest. Any bytes must give a progress or an error, never
// a crash or a read outside the input (ASan and UBSan are on in build-fuzz).
//
// The input: a first byte that picks the resuming plan and which ranks left their random state,
// then trainer_state.json, and optionally, after a NUL each, dataloader_0.json, scheduler.json
// and scaler.json (valid ones, and no scaler, stand in for those not given). A progress it
// accepts, and the plan then lets through, holds every count within what a run of that plan
// can reach, computed here exactly in 128 bits.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "runtime/checkpoint/file_bytes.h"
#include "runtime/engine/checkpoint_limits.h"
#include "runtime/engine/saved_progress.h"

namespace {

using accel::rt::train::Progress;
using accel::rt::train::ProgressLimits;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kDataSeed = 3;

// The resuming plans: a small one, one step, the Accelerator's plan of `epochs` (no step count:
// max / 2), and the largest a plan could ask for.
constexpr ProgressLimits kPlans[] = {{100, 2}, {1, 1}, {kMax / 2, 1}, {kMax, kMax}};
// The world sizes whose last rank's random state the checkpoint holds (rank 0's always): at,
// and past, the largest a checkpoint may name, and 2^32, which once became 0.
constexpr int64_t kWorlds[] = {1, 2, 8, accel::rt::train::kMaxCheckpointWorldSize,
                               accel::rt::train::kMaxCheckpointWorldSize + 1, int64_t{1} << 32};

void Require(bool holds) {
  if (!holds) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  const ProgressLimits plan = kPlans[mode & 3];
  const int64_t world = kWorlds[(mode >> 2) % std::size(kWorlds)];
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::vector<std::string_view> parts;
  for (size_t start = 0;;) {
    size_t end = rest.find('\0', start);
    parts.push_back(rest.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos || parts.size() == 4) break;
    start = end + 1;
  }

  accel::rt::checkpoint::VerifiedCheckpoint checkpoint;
  checkpoint.path = "fuzz";
  auto add = [&checkpoint](const std::string& name, std::string_view text) {
    checkpoint.files[name] = accel::rt::checkpoint::FileBytes::Own(std::string(text));
  };
  add("trainer_state.json", parts[0]);
  add("dataloader_0.json", parts.size() > 1 ? parts[1] : R"({"epoch": 0, "position": 0, "seed": 3})");
  add("scheduler.json", parts.size() > 2 ? parts[2] : R"({"type": "linear", "last_epoch": 0})");
  if (parts.size() > 3) add("scaler.json", parts[3]);
  add("random_states_0.safetensors", "");
  add("random_states_" + std::to_string(world - 1) + ".safetensors", "");

  llvm::Expected<Progress> read = accel::rt::train::ReadProgress(checkpoint, kDataSeed);
  if (!read) {
    llvm::consumeError(read.takeError());
    return 0;
  }
  const Progress& p = *read;
  // What the reader alone promises.
  Require(p.saved_world_size >= 1 && p.saved_world_size <= accel::rt::train::kMaxCheckpointWorldSize);
  Require(p.saved_world_size == 1 || p.saved_world_size == world);
  Require(p.step >= 0);
  Require(p.samples_seen >= 0 && p.samples_seen <= accel::rt::train::kMaxSamplesSeen);
  Require(p.data_epoch >= -1 && p.data_position >= 0 && p.scheduler_steps >= 0);
  if (p.loss_scale) {
    const accel::rt::train::LossScaleState& s = *p.loss_scale;
    Require(std::isfinite(s.scale) && s.scale > 0);
    Require(s.growth_tracker >= 0 && s.growth_tracker <= p.step);
    Require(s.iteration >= 0 && s.iteration <= p.step);
    Require(s.last_overflow >= -1 && s.last_overflow <= s.iteration);
    Require(s.hysteresis_left >= 0 && s.hysteresis_left <= std::numeric_limits<int32_t>::max());
    Require(p.skipped_steps >= 0 && p.skipped_steps <= p.step);
  } else {
    Require(parts.size() <= 3 && p.skipped_steps == 0);
  }
  // Rotation reads the same step from the same text, unverified.
  llvm::Expected<int64_t> step = accel::rt::train::ParseSavedStep(parts[0], "fuzz/trainer_state.json");
  Require(static_cast<bool>(step) && *step == p.step);

  if (llvm::Error error = accel::rt::train::CheckProgressFitsPlan(p, plan, "fuzz")) {
    llvm::consumeError(std::move(error));
    return 0;
  }
  // Within the plan: the step, the batches its steps draw, the scheduler steps they count.
  using Wide = __int128;
  const Wide batches = Wide{plan.steps} * plan.micro_batches_per_step;
  Require(p.step <= plan.steps);
  Require(p.data_epoch <= batches && p.data_position <= batches);
  Require(p.scheduler_steps <= Wide{plan.steps} * std::max(p.saved_world_size, plan.micro_batches_per_step));
  return 0;
}
