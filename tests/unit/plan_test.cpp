#include "compiler/plan/plan.h"

#include <gtest/gtest.h>

namespace accel::plan {
namespace {

Plan SamplePlan() {
  Plan plan;
  plan.job = "sample";
  plan.source = "specs/sample.accel";
  plan.config = llvm::json::Object{{"seed", llvm::json::Object{{"value", 42}, {"from", "default"}}}};
  plan.steps.push_back(InitProcessGroup{"gloo", 60000, 1, 2, "127.0.0.1", 29500});
  plan.steps.push_back(Seed{42});
  plan.steps.push_back(BuildModel::Mlp(16, {64, 32}, 1));
  BuildDataloader data;
  data.kind = "csv";
  data.path = "data/train.csv";
  data.feature_columns = {"x0", "x1"};
  data.target_columns = {"label"};
  data.targets = "class_labels";
  data.batch_size = 32;
  data.split_batches = true;
  data.use_seedable_sampler = true;
  data.data_seed = 7;
  plan.steps.push_back(data);
  TrainLoop loop;
  loop.steps = 200;
  loop.log_every = 20;
  loop.loss = "cross_entropy";
  loop.mixed_precision = "bf16";
  loop.optimizer = Optimizer{"adam", 0.003, 0, 0.9, 0.999, 1e-8, 0};
  loop.lr_schedule = "cosine";
  loop.warmup_steps = 10;
  loop.accumulation_steps = 4;
  loop.bucket_cap_mb = 25;
  loop.comm_hook = "fp16";
  loop.trackers = {"tensorboard"};
  plan.steps.push_back(loop);
  plan.steps.push_back(SaveModel{"runs/x", "model.safetensors"});
  plan.hash = ComputeHash(plan);
  return plan;
}

TEST(PlanJson, RoundTripsEveryStepAndIsByteStable) {
  Plan plan = SamplePlan();
  std::string json = ToJson(plan);
  llvm::Expected<Plan> read = FromJson(json);
  ASSERT_TRUE(static_cast<bool>(read)) << llvm::toString(read.takeError());
  EXPECT_EQ(ToJson(*read), json);
  ASSERT_EQ(read->steps.size(), 6u);
  const BuildModel* model = read->Find<BuildModel>();
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(model->hidden, (std::vector<int64_t>{64, 32}));
  EXPECT_DOUBLE_EQ(read->Find<TrainLoop>()->optimizer.eps, 1e-8);
  EXPECT_EQ(read->Find<TrainLoop>()->accumulation_steps, 4);
  EXPECT_EQ(read->Find<TrainLoop>()->trackers, (std::vector<std::string>{"tensorboard"}));
  EXPECT_EQ(read->Find<BuildDataloader>()->target_columns, (std::vector<std::string>{"label"}));
  EXPECT_TRUE(read->Find<BuildDataloader>()->split_batches);
  EXPECT_EQ(OpName(read->steps[4]), "train");
}

TEST(PlanJson, CheckpointStepRoundTripsAndRejectsNegativeLimits) {
  Plan plan = SamplePlan();
  plan.steps.insert(plan.steps.begin() + 5, Checkpoint{50, true, "runs/p", true, 3, 2, true, "runs/logs"});
  plan.hash = ComputeHash(plan);
  std::string json = ToJson(plan);
  llvm::Expected<Plan> read = FromJson(json);
  ASSERT_TRUE(static_cast<bool>(read)) << llvm::toString(read.takeError());
  EXPECT_EQ(ToJson(*read), json);
  const Checkpoint* checkpoint = read->Find<Checkpoint>();
  ASSERT_NE(checkpoint, nullptr);
  EXPECT_EQ(checkpoint->every_steps, 50);
  EXPECT_TRUE(checkpoint->every_epoch);
  EXPECT_EQ(checkpoint->total_limit, 3);
  EXPECT_TRUE(checkpoint->save_on_each_node);
  EXPECT_EQ(OpName(read->steps[5]), "checkpoint");

  std::get<Checkpoint>(plan.steps[5]).total_limit = -1;
  plan.hash = ComputeHash(plan);
  llvm::Expected<Plan> bad = FromJson(ToJson(plan), "p.json");
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("invalid value -1 at steps[5].total_limit"),
            std::string::npos);
}

TEST(PlanJson, HashChangesWithContent) {
  Plan a = SamplePlan();
  Plan b = SamplePlan();
  std::get<Seed>(b.steps[1]).seed = 43;
  EXPECT_NE(ComputeHash(a), ComputeHash(b));
  EXPECT_EQ(a.hash.rfind("sha256:", 0), 0u);
  EXPECT_EQ(a.hash.size(), 7u + 64u);
}

TEST(PlanJson, RejectsUnknownVersionWithPath) {
  Plan plan = SamplePlan();
  plan.format = "accel-plan/99";
  llvm::Expected<Plan> read = FromJson(ToJson(plan), "p.json");
  ASSERT_FALSE(static_cast<bool>(read));
  std::string message = llvm::toString(read.takeError());
  EXPECT_NE(message.find("p.json: unsupported plan format `accel-plan/99` at format"), std::string::npos)
      << message;
}

TEST(PlanJson, IllTypedFieldNamesItsJsonPath) {
  std::string json = ToJson(SamplePlan());
  std::string needle = "\"inputs\": 16";
  json.replace(json.find(needle), needle.size(), "\"inputs\": \"sixteen\"");
  llvm::Expected<Plan> read = FromJson(json, "p.json");
  ASSERT_FALSE(static_cast<bool>(read));
  std::string message = llvm::toString(read.takeError());
  EXPECT_NE(message.find("steps[2].inputs"), std::string::npos) << message;
}

TEST(PlanJson, EditedContentFailsTheHashCheck) {
  std::string json = ToJson(SamplePlan());
  std::string needle = "\"seed\": 42";
  size_t at = json.find("\"op\": \"seed\"");
  ASSERT_NE(at, std::string::npos);
  json.replace(json.find(needle, at), needle.size(), "\"seed\": 41");
  llvm::Expected<Plan> read = FromJson(json, "p.json");
  ASSERT_FALSE(static_cast<bool>(read));
  EXPECT_NE(llvm::toString(read.takeError()).find("content hash mismatch"), std::string::npos);
}

TEST(PlanJson, NonPositiveCountsAndTimeoutsAreRejectedEvenWithAValidHash) {
  Plan plan = SamplePlan();
  std::get<TrainLoop>(plan.steps[4]).log_every = 0;
  plan.hash = ComputeHash(plan);
  llvm::Expected<Plan> read = FromJson(ToJson(plan), "p.json");
  ASSERT_FALSE(static_cast<bool>(read));
  EXPECT_EQ(llvm::toString(read.takeError()),
            "p.json: invalid value 0 at steps[4].log_every: must be positive");
  plan = SamplePlan();
  std::get<InitProcessGroup>(plan.steps[0]).timeout_ms = 0;
  plan.hash = ComputeHash(plan);
  read = FromJson(ToJson(plan), "p.json");
  ASSERT_FALSE(static_cast<bool>(read));
  EXPECT_NE(llvm::toString(read.takeError()).find("steps[0].timeout_ms"), std::string::npos);
}

TEST(PlanJson, UnknownOpAndMalformedJsonAreErrors) {
  std::string json = ToJson(SamplePlan());
  json.replace(json.find("\"save_model\""), 12, "\"launch_rocket\"");
  llvm::Expected<Plan> read = FromJson(json, "p.json");
  ASSERT_FALSE(static_cast<bool>(read));
  EXPECT_NE(llvm::toString(read.takeError()).find("steps[5].op"), std::string::npos);
  llvm::Expected<Plan> broken = FromJson("{\"format\": ", "p.json");
  ASSERT_FALSE(static_cast<bool>(broken));
  EXPECT_NE(llvm::toString(broken.takeError()).find("invalid JSON"), std::string::npos);
}

}  // namespace
}  // namespace accel::plan
