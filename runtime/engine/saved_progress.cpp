// The run's progress read back from a checkpoint's small JSON files, every value held to its
// range before a resume adds to it. Its writer is EncodeTrainingState (train_state.cpp).
#include "runtime/engine/saved_progress.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <utility>
#include <memory>

#include <fmt/format.h>

#include "compiler/plan/plan.h"
#include "runtime/checkpoint/file_bytes.h"
#include "runtime/engine/checkpoint_limits.h"
#include "runtime/engine/train_state_format.h"
#include "runtime/support/error.h"

namespace accel::rt::train {
namespace {

namespace json = llvm::json;

// Integer `key` of `object`, at least `minimum` and at most `maximum`: a count edited to -5
// must not resume a run at a negative step or data position.
llvm::Expected<int64_t> Integer(const json::Object& object, llvm::StringRef key, const std::string& file,
                                int64_t minimum = 0, int64_t maximum = std::numeric_limits<int64_t>::max()) {
  llvm::Optional<int64_t> value = object.getInteger(key);
  if (!value) return Fail(fmt::format("{}: expected an integer `{}`", file, key.str()));
  if (*value < minimum) {
    return Fail(
        fmt::format("{}: invalid value {} of `{}`: must be at least {}", file, *value, key.str(), minimum));
  }
  if (*value > maximum) {
    return Fail(
        fmt::format("{}: invalid value {} of `{}`: must be at most {}", file, *value, key.str(), maximum));
  }
  return *value;
}

}  // namespace

llvm::Expected<json::Object> ReadCheckpointJson(const checkpoint::VerifiedCheckpoint& ckpt,
                                                const std::string& name) {
  auto found = ckpt.files.find(name);
  if (found == ckpt.files.end()) return Fail(fmt::format("{}: the checkpoint has no `{}`", ckpt.path, name));
  std::string_view text = found->second->view();
  if (plan::JsonNestsDeeperThan(text, plan::kMaxJsonDepth))
    return Fail(fmt::format("{}/{}: nested deeper than {} levels", ckpt.path, name, plan::kMaxJsonDepth));
  llvm::Expected<json::Value> value = json::parse(llvm::StringRef(text.data(), text.size()));
  if (!value) return Fail(fmt::format("{}/{}: {}", ckpt.path, name, llvm::toString(value.takeError())));
  if (json::Object* object = value->getAsObject()) return std::move(*object);
  return Fail(fmt::format("{}/{}: expected a JSON object", ckpt.path, name));
}

llvm::Expected<Progress> ReadProgress(const checkpoint::VerifiedCheckpoint& ckpt, int64_t data_seed) {
  Progress progress;
  std::string state_path = ckpt.path + "/trainer_state.json";
  llvm::Expected<json::Object> state = ReadCheckpointJson(ckpt, "trainer_state.json");
  if (!state) return state.takeError();
  if (state->getInteger("version").getValueOr(0) > kStateVersion) {
    return Fail(fmt::format("{}: version {} is newer than this accelrun reads ({})", state_path,
                            *state->getInteger("version"), kStateVersion));
  }
  llvm::Expected<int64_t> saved_world = Integer(*state, "world_size", state_path, 1, kMaxCheckpointWorldSize);
  if (!saved_world) return saved_world.takeError();
  // Every rank that wrote it left its random state: a resume draws rank r's from r mod world.
  for (int64_t rank : {int64_t{0}, *saved_world - 1}) {
    if (ckpt.files.count(fmt::format("random_states_{}.safetensors", rank)) == 0) {
      return Fail(fmt::format("{}: `world_size` is {}, but the checkpoint holds no random_states_{}.safetensors",
                              state_path, *saved_world, rank));
    }
  }
  progress.saved_world_size = *saved_world;
  llvm::Expected<int64_t> step = Integer(*state, "step", state_path);
  if (!step) return step.takeError();
  llvm::Expected<int64_t> samples = Integer(*state, "samples_seen", state_path, 0, kMaxSamplesSeen);
  if (!samples) return samples.takeError();
  progress.step = *step;
  progress.samples_seen = *samples;

  std::string data_path = ckpt.path + "/dataloader_0.json";
  llvm::Expected<json::Object> data = ReadCheckpointJson(ckpt, "dataloader_0.json");
  if (!data) return data.takeError();
  llvm::Expected<int64_t> seed = Integer(*data, "seed", data_path);
  if (!seed) return seed.takeError();
  if (*seed != data_seed) {
    return Fail(
        fmt::format("{}: the checkpoint's data seed is {}, this run's is {}", data_path, *seed, data_seed));
  }
  llvm::Expected<int64_t> epoch =
      Integer(*data, "epoch", data_path, /*minimum=*/-1);  // -1: before the first batch
  if (!epoch) return epoch.takeError();
  llvm::Expected<int64_t> position = Integer(*data, "position", data_path);
  if (!position) return position.takeError();
  progress.data_epoch = *epoch;
  progress.data_position = *position;

  std::string scheduler_path = ckpt.path + "/scheduler.json";
  llvm::Expected<json::Object> scheduler = ReadCheckpointJson(ckpt, "scheduler.json");
  if (!scheduler) return scheduler.takeError();
  llvm::Expected<int64_t> scheduler_steps = Integer(*scheduler, "last_epoch", scheduler_path);
  if (!scheduler_steps) return scheduler_steps.takeError();
  progress.scheduler_steps = *scheduler_steps;
  progress.schedule = scheduler->getString("type").getValueOr("constant").str();
  // The schedule's length and warmup, -1 where a checkpoint predates them. A resume on another
  // world size scales them by its processes over the saving run's, so each is kept below what
  // that product can hold.
  constexpr int64_t kMaxScheduleSteps = std::numeric_limits<int64_t>::max() / kMaxCheckpointWorldSize;
  for (auto [key, out] : {std::pair{"total_steps", &progress.schedule_steps},
                          std::pair{"warmup_steps", &progress.warmup_steps}}) {
    if (scheduler->get(key) == nullptr) continue;
    llvm::Expected<int64_t> count = Integer(*scheduler, key, scheduler_path, /*minimum=*/-1, kMaxScheduleSteps);
    if (!count) return count.takeError();
    *out = *count;
  }
  if (const json::Array* base = scheduler->getArray("base_lrs"); base && base->size() == 1)
    progress.base_lr = (*base)[0].getAsNumber().getValueOr(0);

  // A checkpoint of a run without loss scaling has none: a resume in fp16 starts the scale afresh.
  if (ckpt.files.count("scaler.json") != 0) {
    std::string scaler_path = ckpt.path + "/scaler.json";
    llvm::Expected<json::Object> scaler = ReadCheckpointJson(ckpt, "scaler.json");
    if (!scaler) return scaler.takeError();
    llvm::Optional<double> scale = scaler->getNumber("scale");
    if (!scale || !std::isfinite(*scale) || *scale <= 0)
      return Fail(fmt::format("{}: `scale` must be a positive number", scaler_path));
    LossScaleState& state = progress.loss_scale.emplace();
    state.scale = *scale;
    // Each counts steps, or is a step: none can pass the checkpoint's own.
    llvm::Expected<int64_t> tracker = Integer(*scaler, "growth_tracker", scaler_path, 0, progress.step);
    if (!tracker) return tracker.takeError();
    llvm::Expected<int64_t> iteration = Integer(*scaler, "iteration", scaler_path, 0, progress.step);
    if (!iteration) return iteration.takeError();
    llvm::Expected<int64_t> last_overflow =
        Integer(*scaler, "last_overflow", scaler_path, /*minimum=*/-1, /*maximum=*/*iteration);
    if (!last_overflow) return last_overflow.takeError();
    llvm::Expected<int64_t> hysteresis =
        Integer(*scaler, "hysteresis_left", scaler_path, 0, std::numeric_limits<int32_t>::max());
    if (!hysteresis) return hysteresis.takeError();
    llvm::Expected<int64_t> skipped = Integer(*scaler, "skipped_steps", scaler_path, 0, progress.step);
    if (!skipped) return skipped.takeError();
    state.growth_tracker = *tracker;
    state.iteration = *iteration;
    state.last_overflow = *last_overflow;
    state.hysteresis_left = *hysteresis;
    progress.skipped_steps = *skipped;
  }

  return progress;
}

llvm::Error CheckProgressFitsPlan(const Progress& progress, const ProgressLimits& limits,
                                  const std::string& checkpoint) {
  if (progress.step > limits.steps) {
    return Fail(fmt::format(
        "{}: the checkpoint is at step {}, beyond this plan's {} steps; it was written by a longer run or "
        "edited: resume it with `train.steps` of at least {}, or start afresh",
        checkpoint, progress.step, limits.steps, progress.step));
  }
  // The products below cannot overflow: both factors are at most kMaxCheckpointWorldSize
  // (the world size is bounded on read) or the capped step count.
  const int64_t steps = std::min(limits.steps, std::numeric_limits<int64_t>::max() / kMaxCheckpointWorldSize);
  const int64_t micro_batches = std::min(limits.micro_batches_per_step, kMaxCheckpointWorldSize);
  const int64_t max_epoch = steps * micro_batches;
  if (progress.data_epoch > max_epoch) {
    return Fail(fmt::format("{}/dataloader_0.json: epoch {} cannot be reached in this plan's {} steps of {} "
                            "batches; the checkpoint was edited or is from another job",
                            checkpoint, progress.data_epoch, limits.steps, limits.micro_batches_per_step));
  }
  // A data position counts batches from its epoch's start, at most every batch the steps draw.
  if (progress.data_position > max_epoch) {
    return Fail(fmt::format("{}/dataloader_0.json: position {} cannot be reached in this plan's {} steps of {} "
                            "batches; the checkpoint was edited or is from another job",
                            checkpoint, progress.data_position, limits.steps, limits.micro_batches_per_step));
  }
  // The scheduler advances once per process per step, or once per micro-batch.
  const int64_t per_step = std::max(progress.saved_world_size, micro_batches);
  if (progress.scheduler_steps > steps * per_step) {
    return Fail(fmt::format("{}/scheduler.json: `last_epoch` {} is beyond what {} steps of {} processes count; "
                            "the checkpoint was edited or is from another job",
                            checkpoint, progress.scheduler_steps, limits.steps, progress.saved_world_size));
  }
  return llvm::Error::success();
}

llvm::Expected<int64_t> ParseSavedStep(std::string_view text, const std::string& path) {
  if (plan::JsonNestsDeeperThan(text, plan::kMaxJsonDepth)) return Fail(fmt::format("{}: nested too deep", path));
  llvm::Expected<json::Value> value = json::parse(llvm::StringRef(text.data(), text.size()));
  if (!value) return Fail(fmt::format("{}: {}", path, llvm::toString(value.takeError())));
  const json::Object* object = value->getAsObject();
  llvm::Optional<int64_t> step = object != nullptr ? object->getInteger("step") : llvm::None;
  if (!step) return Fail(fmt::format("{}: expected an integer `step`", path));
  return *step;
}

llvm::Expected<int64_t> SavedStep(const std::string& directory) {
  constexpr uintmax_t kMaxStateBytes = 1 << 20;  // the file Accel writes is about 200 bytes
  std::string path = (std::filesystem::path(directory) / "trainer_state.json").string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return Fail(fmt::format("{}: not a regular file", path));
  uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec || size > kMaxStateBytes) return Fail(fmt::format("{}: not a trainer state of at most 1 MiB", path));
  llvm::Expected<std::shared_ptr<const checkpoint::FileBytes>> bytes = checkpoint::FileBytes::Map(path);
  if (!bytes) return bytes.takeError();
  return ParseSavedStep((*bytes)->view(), path);
}

}  // namespace accel::rt::train
