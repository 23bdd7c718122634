// The run's progress read back from a checkpoint's small JSON files (saved_progress.h): every
// value a tampered file can hold is refused just past its bound and accepted at it, and the
// plan's limits hold whatever the plan's size.
#include "runtime/engine/saved_progress.h"

#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <string>

#include "runtime/checkpoint/file_bytes.h"
#include "runtime/engine/checkpoint_limits.h"
#include "tests/unit/scratch_dir.h"

namespace accel::rt::train {
namespace {

constexpr int64_t kSeed = 3;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// A checkpoint of these files, as verified: trainer_state.json, dataloader_0.json and
// scheduler.json (valid ones where empty), scaler.json when given, and a random state for
// each of `ranks`.
struct Files {
  std::string state = R"({"version": 1, "step": 10, "samples_seen": 80, "world_size": 1})";
  std::string data = R"({"epoch": 0, "position": 0, "seed": 3})";
  std::string scheduler = R"({"type": "linear", "last_epoch": 10})";
  std::string scaler;
  std::vector<int64_t> ranks = {0};
};

checkpoint::VerifiedCheckpoint Checkpoint(const Files& files) {
  checkpoint::VerifiedCheckpoint checkpoint;
  checkpoint.path = "ckpt";
  checkpoint.files["trainer_state.json"] = checkpoint::FileBytes::Own(files.state);
  checkpoint.files["dataloader_0.json"] = checkpoint::FileBytes::Own(files.data);
  checkpoint.files["scheduler.json"] = checkpoint::FileBytes::Own(files.scheduler);
  if (!files.scaler.empty()) checkpoint.files["scaler.json"] = checkpoint::FileBytes::Own(files.scaler);
  for (int64_t rank : files.ranks)
    checkpoint.files["random_states_" + std::to_string(rank) + ".safetensors"] = checkpoint::FileBytes::Own("");
  return checkpoint;
}

// "" when ReadProgress accepts `files`, else its refusal.
std::string Refusal(const Files& files) {
  llvm::Expected<Progress> progress = ReadProgress(Checkpoint(files), kSeed);
  return progress ? std::string() : llvm::toString(progress.takeError());
}

Files WithState(const std::string& state) {
  Files files;
  files.state = state;
  return files;
}

TEST(SavedProgress, ReadsWhatTheWriterWrites) {
  Files files;
  files.scaler = R"({"scale": 1024.0, "growth_tracker": 3, "iteration": 10, "last_overflow": 7,
                     "hysteresis_left": 2, "skipped_steps": 1})";
  llvm::Expected<Progress> progress = ReadProgress(Checkpoint(files), kSeed);
  ASSERT_TRUE(static_cast<bool>(progress)) << llvm::toString(progress.takeError());
  EXPECT_EQ(progress->step, 10);
  EXPECT_EQ(progress->samples_seen, 80);
  EXPECT_EQ(progress->saved_world_size, 1);
  EXPECT_EQ(progress->scheduler_steps, 10);
  ASSERT_TRUE(progress->loss_scale.has_value());
  EXPECT_EQ(progress->loss_scale->scale, 1024.0);
  EXPECT_EQ(progress->loss_scale->last_overflow, 7);
  EXPECT_EQ(progress->skipped_steps, 1);
}

// The world size is bounded by value, not only by the random states present: a tampered
// checkpoint can hold a file for any rank, even for rank -1.
TEST(SavedProgress, RefusesAWorldSizeOutOfRangeEvenWithItsLastRanksRandomState) {
  Files largest = WithState(R"({"step": 1, "samples_seen": 0, "world_size": 1048576})");
  largest.ranks = {0, kMaxCheckpointWorldSize - 1};
  EXPECT_EQ(Refusal(largest), "");

  Files past = WithState(R"({"step": 1, "samples_seen": 0, "world_size": 1048577})");
  past.ranks = {0, kMaxCheckpointWorldSize};
  EXPECT_NE(Refusal(past).find("invalid value 1048577 of `world_size`: must be at most 1048576"), std::string::npos)
      << Refusal(past);

  Files zero = WithState(R"({"step": 1, "samples_seen": 0, "world_size": 0})");
  zero.ranks = {0, -1};
  EXPECT_NE(Refusal(zero).find("invalid value 0 of `world_size`: must be at least 1"), std::string::npos)
      << Refusal(zero);

  Files missing = WithState(R"({"step": 1, "samples_seen": 0, "world_size": 4})");
  missing.ranks = {0, 1, 2};
  EXPECT_NE(Refusal(missing).find("holds no random_states_3.safetensors"), std::string::npos);
}

TEST(SavedProgress, RefusesCountsOutOfRangeAndAcceptsTheirBounds) {
  EXPECT_NE(Refusal(WithState(R"({"step": -1, "samples_seen": 0, "world_size": 1})"))
                .find("invalid value -1 of `step`: must be at least 0"),
            std::string::npos);
  EXPECT_EQ(Refusal(WithState(R"({"step": 0, "samples_seen": 9007199254740992, "world_size": 1})")), "");
  EXPECT_NE(Refusal(WithState(R"({"step": 0, "samples_seen": 9007199254740993, "world_size": 1})"))
                .find("invalid value 9007199254740993 of `samples_seen`: must be at most 9007199254740992"),
            std::string::npos);

  Files files;
  files.data = R"({"epoch": -1, "position": 0, "seed": 3})";
  EXPECT_EQ(Refusal(files), "");
  files.data = R"({"epoch": -2, "position": 0, "seed": 3})";
  EXPECT_NE(Refusal(files).find("invalid value -2 of `epoch`: must be at least -1"), std::string::npos);
  files.data = R"({"epoch": 0, "position": -1, "seed": 3})";
  EXPECT_NE(Refusal(files).find("invalid value -1 of `position`: must be at least 0"), std::string::npos);
  files.data = R"({"epoch": 0, "position": 0, "seed": 4})";
  EXPECT_NE(Refusal(files).find("the checkpoint's data seed is 4, this run's is 3"), std::string::npos);

  Files scheduler;
  scheduler.scheduler = R"({"last_epoch": 0})";
  EXPECT_EQ(Refusal(scheduler), "");
  scheduler.scheduler = R"({"last_epoch": -1})";
  EXPECT_NE(Refusal(scheduler).find("invalid value -1 of `last_epoch`: must be at least 0"), std::string::npos);

  // The schedule's length and warmup are scaled by a change of world size on resume: a count
  // the largest world cannot multiply is refused, one it can is kept.
  scheduler.scheduler = R"({"last_epoch": 0, "total_steps": 8796093022207, "warmup_steps": -1})";
  EXPECT_EQ(Refusal(scheduler), "");
  scheduler.scheduler = R"({"last_epoch": 0, "total_steps": 8796093022208})";
  EXPECT_NE(Refusal(scheduler).find("invalid value 8796093022208 of `total_steps`: must be at most 8796093022207"),
            std::string::npos);
  scheduler.scheduler = R"({"last_epoch": 0, "warmup_steps": 4611686018427387904})";
  EXPECT_NE(Refusal(scheduler).find("of `warmup_steps`: must be at most"), std::string::npos);
  scheduler.scheduler = R"({"last_epoch": 0, "warmup_steps": -2})";
  EXPECT_NE(Refusal(scheduler).find("invalid value -2 of `warmup_steps`: must be at least -1"), std::string::npos);
}

// Each of the loss scaler's counts is a step count or a step: at the checkpoint's step it is
// accepted, one past it refused; the scale must be positive and finite.
TEST(SavedProgress, RefusesLossScalerCountsPastTheStep) {
  auto scaler = [](const std::string& scale, int64_t tracker, int64_t iteration, int64_t overflow,
                   int64_t hysteresis, int64_t skipped) {
    Files files;  // at step 10
    files.scaler = "{\"scale\": " + scale + ", \"growth_tracker\": " + std::to_string(tracker) +
                   ", \"iteration\": " + std::to_string(iteration) + ", \"last_overflow\": " +
                   std::to_string(overflow) + ", \"hysteresis_left\": " + std::to_string(hysteresis) +
                   ", \"skipped_steps\": " + std::to_string(skipped) + "}";
    return Refusal(files);
  };
  const int64_t int32_max = std::numeric_limits<int32_t>::max();
  EXPECT_EQ(scaler("65536", 10, 10, 10, int32_max, 10), "");
  EXPECT_EQ(scaler("1e-300", 0, 0, -1, 0, 0), "");
  EXPECT_NE(scaler("65536", 11, 10, 10, 0, 0).find("invalid value 11 of `growth_tracker`: must be at most 10"),
            std::string::npos);
  EXPECT_NE(scaler("65536", 0, 11, 10, 0, 0).find("invalid value 11 of `iteration`: must be at most 10"),
            std::string::npos);
  EXPECT_NE(scaler("65536", 0, 5, 6, 0, 0).find("invalid value 6 of `last_overflow`: must be at most 5"),
            std::string::npos);
  EXPECT_NE(scaler("65536", 0, 5, -2, 0, 0).find("invalid value -2 of `last_overflow`: must be at least -1"),
            std::string::npos);
  EXPECT_NE(scaler("65536", 0, 5, 0, int32_max + 1, 0).find("of `hysteresis_left`: must be at most 2147483647"),
            std::string::npos);
  EXPECT_NE(scaler("65536", 0, 5, 0, 0, 11).find("invalid value 11 of `skipped_steps`: must be at most 10"),
            std::string::npos);
  EXPECT_NE(scaler("0", 0, 5, 0, 0, 0).find("`scale` must be a positive number"), std::string::npos);
  EXPECT_NE(scaler("-1", 0, 5, 0, 0, 0).find("`scale` must be a positive number"), std::string::npos);
}

// "" when `progress` fits `limits`, else the refusal.
std::string PlanRefusal(const Progress& progress, const ProgressLimits& limits) {
  llvm::Error error = CheckProgressFitsPlan(progress, limits, "ckpt");
  return error ? llvm::toString(std::move(error)) : std::string();
}

// The plan's last step is a valid place to resume (nothing is left to train); one past it is not.
TEST(SavedProgress, TheStepMayReachThePlansStepsButNotPassThem) {
  Progress progress;
  progress.saved_world_size = 1;
  progress.step = 100;
  EXPECT_EQ(PlanRefusal(progress, {100, 1}), "");
  progress.step = 101;
  EXPECT_NE(PlanRefusal(progress, {100, 1}).find("at step 101, beyond this plan's 100 steps"), std::string::npos);
}

// The Accelerator's plan of epochs leaves the steps at max / 2, and any plan may accumulate:
// the bounds must not overflow into refusing an ordinary checkpoint, nor into accepting a
// tampered one.
TEST(SavedProgress, HugePlansNeitherOverflowNorRefuseAnOrdinaryCheckpoint) {
  Progress ordinary;
  ordinary.saved_world_size = 2;
  ordinary.step = 1000;
  ordinary.data_epoch = 3;
  ordinary.data_position = 40;
  ordinary.scheduler_steps = 2000;
  EXPECT_EQ(PlanRefusal(ordinary, {kMax / 2, 4}), "");
  EXPECT_EQ(PlanRefusal(ordinary, {kMax, kMax}), "");
  EXPECT_EQ(PlanRefusal(ordinary, {1000, kMax}), "");

  Progress tampered = ordinary;
  tampered.data_position = kMax;
  EXPECT_NE(PlanRefusal(tampered, {kMax / 2, 4}).find("position 9223372036854775807 cannot be reached"),
            std::string::npos);
  tampered = ordinary;
  tampered.scheduler_steps = kMax;
  EXPECT_NE(PlanRefusal(tampered, {kMax, kMax}).find("`last_epoch` 9223372036854775807 is beyond"),
            std::string::npos);
}

TEST(SavedProgress, DataPositionAndSchedulerCountsHeldToThePlansBatches) {
  Progress progress;
  progress.saved_world_size = 4;
  progress.step = 10;
  progress.data_epoch = 20;
  progress.data_position = 20;
  progress.scheduler_steps = 40;  // once per process per step
  EXPECT_EQ(PlanRefusal(progress, {10, 2}), "");
  Progress epoch = progress;
  epoch.data_epoch = 21;
  EXPECT_NE(PlanRefusal(epoch, {10, 2}).find("epoch 21 cannot be reached"), std::string::npos);
  Progress position = progress;
  position.data_position = 21;
  EXPECT_NE(PlanRefusal(position, {10, 2}).find("position 21 cannot be reached"), std::string::npos);
  Progress scheduler = progress;
  scheduler.scheduler_steps = 41;
  EXPECT_NE(PlanRefusal(scheduler, {10, 2}).find("`last_epoch` 41 is beyond"), std::string::npos);
}

TEST(SavedProgress, SavedStepReadsTheStepOfAnUnverifiedStateOfAtMostOneMebibyte) {
  std::string dir = accel::testing::ScratchDir("saved_step").string();
  {
    std::ofstream(dir + "/trainer_state.json") << R"({"step": 42})";
  }
  llvm::Expected<int64_t> step = SavedStep(dir);
  ASSERT_TRUE(static_cast<bool>(step)) << llvm::toString(step.takeError());
  EXPECT_EQ(*step, 42);
  {
    std::ofstream out(dir + "/trainer_state.json");
    out << R"({"step": 42, "padding": ")" << std::string(1 << 20, 'x') << "\"}";
  }
  llvm::Expected<int64_t> big = SavedStep(dir);
  ASSERT_FALSE(static_cast<bool>(big));
  EXPECT_NE(llvm::toString(big.takeError()).find("not a trainer state of at most 1 MiB"), std::string::npos);
}

}  // namespace
}  // namespace accel::rt::train
