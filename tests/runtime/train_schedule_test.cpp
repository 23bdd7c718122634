// Learning-rate schedules, Accelerate's scheduler stepping and gradient-accumulation cycles
// against hand-computed values (catalog §3.3).
#include <gtest/gtest.h>

#include <vector>

#include "runtime/model/lr_schedule.h"
#include "runtime/train/gradient_accumulation.h"
#include "runtime/train/training_length.h"

namespace accel::rt::train {
namespace {

TEST(LearningRateFactor, LinearWarmsUpThenDecaysToZero) {
  ScheduleSpec linear{ScheduleKind::linear, 10, 110};
  EXPECT_DOUBLE_EQ(LearningRateFactor(linear, 0), 0.0);
  EXPECT_DOUBLE_EQ(LearningRateFactor(linear, 5), 0.5);
  EXPECT_DOUBLE_EQ(LearningRateFactor(linear, 10), 1.0);
  EXPECT_DOUBLE_EQ(LearningRateFactor(linear, 60), 0.5);
  EXPECT_DOUBLE_EQ(LearningRateFactor(linear, 110), 0.0);
  EXPECT_DOUBLE_EQ(LearningRateFactor(linear, 200), 0.0);  // never negative
}

// DeepSpeed's WarmupLR with warmup_type log: ln(n + 1) / ln(warmup), in optimizer steps.
TEST(LearningRateFactor, LogWarmupRisesAsDeepSpeedsWarmupLrOverOptimizerSteps) {
  ScheduleSpec log{ScheduleKind::constant_with_warmup, 100, 0, 0.5, plan::WarmupCurve::log};
  EXPECT_DOUBLE_EQ(LearningRateFactor(log, 0), 0.0);
  EXPECT_DOUBLE_EQ(LearningRateFactor(log, 9), 0.5);  // ln 10 / ln 100
  EXPECT_DOUBLE_EQ(LearningRateFactor(log, 100), 1.0);
  // Two scheduler steps per optimizer step (two processes): the same curve over optimizer steps.
  ScheduleSpec per_process{ScheduleKind::linear, 200, 400, 0.5, plan::WarmupCurve::log, 2};
  EXPECT_DOUBLE_EQ(LearningRateFactor(per_process, 18), 0.5);
  EXPECT_DOUBLE_EQ(LearningRateFactor(per_process, 19), 0.5);
  EXPECT_DOUBLE_EQ(LearningRateFactor(per_process, 300), 0.5);  // then the linear decay
  // DeepSpeed warms up over at least 2 steps, so a 1-step warmup does not divide by ln 1.
  ScheduleSpec one{ScheduleKind::constant_with_warmup, 1, 0, 0.5, plan::WarmupCurve::log};
  EXPECT_DOUBLE_EQ(LearningRateFactor(one, 0), 0.0);
}

TEST(LearningRateFactor, CosineFollowsHalfAWaveByDefault) {
  ScheduleSpec cosine{ScheduleKind::cosine, 0, 100};
  EXPECT_DOUBLE_EQ(LearningRateFactor(cosine, 0), 1.0);
  EXPECT_NEAR(LearningRateFactor(cosine, 50), 0.5, 1e-15);
  EXPECT_NEAR(LearningRateFactor(cosine, 100), 0.0, 1e-15);
  ScheduleSpec full_wave{ScheduleKind::cosine, 0, 100, 1.0};
  EXPECT_NEAR(LearningRateFactor(full_wave, 50), 0.0, 1e-15);
  EXPECT_NEAR(LearningRateFactor(full_wave, 100), 1.0, 1e-15);
  ScheduleSpec warm{ScheduleKind::cosine, 20, 120};
  EXPECT_DOUBLE_EQ(LearningRateFactor(warm, 10), 0.5);
  EXPECT_NEAR(LearningRateFactor(warm, 70), 0.5, 1e-15);
}

TEST(LearningRateFactor, ConstantSchedulesWithAndWithoutWarmup) {
  EXPECT_DOUBLE_EQ(LearningRateFactor({ScheduleKind::constant, 4, 0}, 0), 1.0);  // warmup ignored
  EXPECT_DOUBLE_EQ(LearningRateFactor({ScheduleKind::constant_with_warmup, 4, 0}, 2), 0.5);
  EXPECT_DOUBLE_EQ(LearningRateFactor({ScheduleKind::constant_with_warmup, 4, 0}, 9), 1.0);
}

TEST(LrScheduler, StartsAtStepZeroAndScalesEveryGroup) {
  LrScheduler scheduler({ScheduleKind::linear, 2, 4}, {0.1, 0.01});
  EXPECT_EQ(scheduler.learning_rates(), (std::vector<double>{0.0, 0.0}));
  EXPECT_EQ(scheduler.Step(), (std::vector<double>{0.05, 0.005}));
  scheduler.Step();
  EXPECT_DOUBLE_EQ(scheduler.learning_rates()[0], 0.1);
  EXPECT_EQ(scheduler.last_step(), 2);
}

// A resume restores the count and this schedule's rates there; set_last_step alone (Accelerate's
// adjust_scheduler) leaves the rates as they were.
TEST(LrScheduler, RestoreRecomputesTheRatesAtTheRestoredStep) {
  LrScheduler restored({ScheduleKind::linear, 0, 40}, {0.003});
  restored.Restore(20);
  EXPECT_EQ(restored.last_step(), 20);
  EXPECT_DOUBLE_EQ(restored.learning_rates()[0], 0.0015);
  LrScheduler bumped({ScheduleKind::linear, 0, 40}, {0.003});
  bumped.set_last_step(20);
  EXPECT_DOUBLE_EQ(bumped.learning_rates()[0], 0.003);
}

TEST(StepLikeAccelerate, StepsOncePerProcessOnlyWhenTheOptimizerStepped) {
  LrScheduler scheduler({ScheduleKind::linear, 0, 100}, {1.0});
  SchedulerStepPolicy per_process{false, 4, false};
  EXPECT_EQ(StepLikeAccelerate(scheduler, per_process, /*sync_gradients=*/true, false), 4);
  EXPECT_EQ(scheduler.last_step(), 4);  // each of the 4 processes consumed a batch
  EXPECT_DOUBLE_EQ(scheduler.learning_rates()[0], 0.96);
  SchedulerStepPolicy split{true, 4, false};
  EXPECT_EQ(StepLikeAccelerate(scheduler, split, true, false), 1);
  EXPECT_EQ(StepLikeAccelerate(scheduler, split, true, /*optimizer_step_was_skipped=*/true), 0);
  EXPECT_EQ(StepLikeAccelerate(scheduler, split, /*sync_gradients=*/false, false), 0);
  EXPECT_EQ(scheduler.last_step(), 5);
}

TEST(StepLikeAccelerate, AdjustSchedulerBumpsTheCountWithoutANewRate) {
  LrScheduler scheduler({ScheduleKind::linear, 0, 10}, {1.0});
  StepLikeAccelerate(scheduler, {true, 1, /*adjust_scheduler=*/true}, /*sync_gradients=*/false, false);
  EXPECT_EQ(scheduler.last_step(), 1);
  EXPECT_DOUBLE_EQ(scheduler.learning_rates()[0], 1.0);  // recomputed only at the next real step
  StepLikeAccelerate(scheduler, {true, 1, true}, true, false);
  EXPECT_DOUBLE_EQ(scheduler.learning_rates()[0], 0.8);
}

TEST(GradientAccumulation, SyncsEveryNumStepsAndAtTheEndOfTheData) {
  GradientAccumulation accumulation({4, true, false});
  std::vector<int> synced;
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (int batch = 1; batch <= 10; ++batch) {
      if (accumulation.Begin(batch == 10)) synced.push_back(epoch * 10 + batch);
      EXPECT_EQ(accumulation.all_reduce_gradients(), accumulation.sync_gradients());
    }
  }
  // The 10th batch ends the data: a short cycle, and the counter starts over each epoch.
  EXPECT_EQ(synced, (std::vector<int>{4, 8, 10, 14, 18, 20}));
}

TEST(GradientAccumulation, WithoutSyncWithDataloaderCyclesRunAcrossEpochs) {
  GradientAccumulation accumulation({4, false, false});
  std::vector<int> synced;
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (int batch = 1; batch <= 10; ++batch) {
      if (accumulation.Begin(batch == 10)) synced.push_back(epoch * 10 + batch);
    }
  }
  EXPECT_EQ(synced, (std::vector<int>{4, 8, 12, 16, 20}));
}

TEST(GradientAccumulation, SyncEachBatchAllReducesEveryMicroBatch) {
  GradientAccumulation accumulation({3, true, /*sync_each_batch=*/true});
  EXPECT_FALSE(accumulation.Begin(false));
  EXPECT_TRUE(accumulation.all_reduce_gradients());
  EXPECT_THROW(GradientAccumulation({0, true, false}), std::invalid_argument);
}

plan::TrainLoop LoopOf(int64_t steps, int64_t epochs, int64_t num_steps, bool sync_with_dataloader = true) {
  plan::TrainLoop loop;
  loop.steps = steps;
  loop.epochs = epochs;
  loop.gradient_accumulation.num_steps = num_steps;
  loop.gradient_accumulation.sync_with_dataloader = sync_with_dataloader;
  return loop;
}

TEST(TrainingLength, StepsStayAsPlanned) {
  plan::TrainLoop loop = WithLengthInSteps(LoopOf(42, 0, 4), 10);
  EXPECT_EQ(loop.steps, 42);
  EXPECT_EQ(loop.epochs, 0);
}

TEST(TrainingLength, EpochsAreBatchesPerEpochWithoutAccumulation) {
  plan::TrainLoop loop = WithLengthInSteps(LoopOf(0, 3, 1), 10);
  EXPECT_EQ(loop.steps, 30);
  EXPECT_EQ(loop.epochs, 0);  // the loop is now in steps
}

TEST(TrainingLength, AnAccumulationCycleEndsWithTheEpoch) {
  // 10 batches in cycles of 4: 4 + 4 + 2, three optimizer steps per epoch.
  EXPECT_EQ(WithLengthInSteps(LoopOf(0, 3, 4), 10).steps, 9);
  EXPECT_EQ(WithLengthInSteps(LoopOf(0, 2, 5), 10).steps, 4);
}

TEST(TrainingLength, WithoutSyncWithDataloaderCyclesRunAcrossEpochs) {
  // 30 micro-batches in cycles of 4: 7 full cycles; the last 2 batches are not stepped.
  EXPECT_EQ(WithLengthInSteps(LoopOf(0, 3, 4, false), 10).steps, 7);
  // Fewer batches than one cycle still train one step.
  EXPECT_EQ(WithLengthInSteps(LoopOf(0, 1, 4, false), 1).steps, 1);
}

TEST(TrainingLength, WarmupRatioIsTheCeilingOfItsShareAsTheTrainerComputesIt) {
  plan::TrainLoop loop = LoopOf(30, 0, 1);
  loop.warmup_ratio = 0.1;
  plan::TrainLoop resolved = WithLengthInSteps(loop, 10);
  EXPECT_EQ(resolved.warmup_steps, 3);
  // 100 * 0.07 is 7.000000000000001 in double arithmetic: math.ceil gives 8, and so do we.
  loop = LoopOf(100, 0, 1);
  loop.warmup_ratio = 0.07;
  EXPECT_EQ(WithLengthInSteps(loop, 10).warmup_steps, 8);
  EXPECT_EQ(resolved.warmup_ratio, 0.0);
  loop = LoopOf(0, 3, 4);  // 9 steps, as above
  loop.warmup_ratio = 0.25;
  EXPECT_EQ(WithLengthInSteps(loop, 10).warmup_steps, 3);
  loop.warmup_ratio = 0;
  loop.warmup_steps = 2;
  EXPECT_EQ(WithLengthInSteps(loop, 10).warmup_steps, 2);
}

}  // namespace
}  // namespace accel::rt::train
