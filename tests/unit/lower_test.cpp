#include "compiler/lower/lower.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "compiler/driver/compile.h"

namespace accel::driver {
namespace {

class LowerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    diag::DiagnosticEngine diagnostics;
    stdlib_ = Stdlib::Load(diagnostics);
    ASSERT_FALSE(diagnostics.has_errors());
  }
  Compilation Compile(const std::string& text, std::map<std::string, std::string> env = {}) {
    sema::MapEnvironment environment(std::move(env));
    return CompileText("t.accel", text, *stdlib_, environment);
  }
  std::unique_ptr<Stdlib> stdlib_;
};

constexpr const char* kMinimal = R"(job tiny {
  model = MLP { inputs = 4 }
  data = SyntheticRegression { features = 4 }
  train { steps = 5 }
})";

TEST_F(LowerTest, QuickstartLowersToTheOrderedSteps) {
  Compilation c = CompileFile(std::string(ACCEL_SOURCE_DIR) + "/specs/quickstart.accel", *stdlib_,
                              sema::MapEnvironment());
  ASSERT_TRUE(c.plan.has_value());
  std::vector<std::string_view> ops;
  for (const plan::Step& step : c.plan->steps) ops.push_back(plan::OpName(step));
  EXPECT_EQ(ops, (std::vector<std::string_view>{"init_process_group", "seed", "build_model",
                                                "build_dataloader", "train", "save_model"}));
  const auto* init = c.plan->Find<plan::InitProcessGroup>();
  EXPECT_EQ(init->backend, "gloo");
  EXPECT_EQ(init->processes_per_machine, 2);
  EXPECT_EQ(init->timeout_ms, 60000);
  EXPECT_EQ(c.plan->Find<plan::TrainLoop>()->optimizer.name, "adamw");
  EXPECT_EQ(c.plan->hash, plan::ComputeHash(*c.plan));
}

TEST_F(LowerTest, CheckpointEveryLowersProjectConfigurationToACheckpointStep) {
  Compilation c = Compile(R"(job tiny {
  accelerator {
    project_dir = "runs/fallback"
    project_config { automatic_checkpoint_naming = true; total_limit = 2; save_on_each_node = true }
  }
  model = MLP { inputs = 4 }
  data = SyntheticRegression { features = 4 }
  train { steps = 5; checkpoint_every = 2 }
})");
  ASSERT_TRUE(c.plan.has_value());
  const plan::Checkpoint* checkpoint = c.plan->Find<plan::Checkpoint>();
  ASSERT_NE(checkpoint, nullptr);
  EXPECT_EQ(checkpoint->every_steps, 2);
  // The Accelerator's project_dir applies when the configuration has none; logging_dir follows.
  EXPECT_EQ(checkpoint->project_dir, "runs/fallback");
  EXPECT_EQ(checkpoint->logging_dir, "runs/fallback");
  EXPECT_TRUE(checkpoint->automatic_naming);
  EXPECT_EQ(checkpoint->total_limit, 2);
  EXPECT_TRUE(checkpoint->save_on_each_node);
  EXPECT_EQ(plan::OpName(c.plan->steps[c.plan->steps.size() - 2]), "checkpoint");

  Compilation none = Compile(kMinimal);
  ASSERT_TRUE(none.plan.has_value());
  EXPECT_EQ(none.plan->Find<plan::Checkpoint>(), nullptr);
}

TEST_F(LowerTest, SameSpecGivesTheSameBytes) {
  Compilation a = Compile(kMinimal);
  Compilation b = Compile(kMinimal);
  ASSERT_TRUE(a.plan && b.plan);
  EXPECT_EQ(plan::ToJson(*a.plan), plan::ToJson(*b.plan));
}

TEST_F(LowerTest, DefaultsComeFromTheSchema) {
  Compilation c = Compile(kMinimal);
  ASSERT_TRUE(c.plan.has_value());
  EXPECT_EQ(c.plan->Find<plan::InitProcessGroup>()->timeout_ms, 1800 * 1000);
  EXPECT_EQ(c.plan->Find<plan::BuildModel>()->hidden, std::vector<int64_t>{64});
  EXPECT_EQ(c.plan->Find<plan::TrainLoop>()->optimizer.name, "sgd");
  EXPECT_EQ(c.plan->Find<plan::TrainLoop>()->bucket_cap_mb, 25);
  EXPECT_EQ(c.plan->Find<plan::Seed>()->seed, 42);
}

TEST_F(LowerTest, ConfigRecordsProvenance) {
  Compilation c = Compile(kMinimal, {{"ACCELERATE_USE_CPU", "true"}});
  ASSERT_TRUE(c.plan.has_value());
  // The Accelerator reads ACCELERATE_* variables; the launch config (`compute`) does not.
  const llvm::json::Object* accelerator = c.plan->config.getAsObject()->getObject("accelerator");
  ASSERT_NE(accelerator, nullptr);
  ASSERT_NE(accelerator->getObject("cpu"), nullptr);
  EXPECT_EQ(accelerator->getObject("cpu")->getString("from").getValue(), "env ACCELERATE_USE_CPU");
  const llvm::json::Object* compute = c.plan->config.getAsObject()->getObject("compute");
  ASSERT_NE(compute, nullptr);
  ASSERT_NE(compute->getObject("use_cpu"), nullptr);
  EXPECT_EQ(compute->getObject("use_cpu")->getString("from").getValue(), "default");
  EXPECT_EQ(compute->getObject("num_machines")->getString("from").getValue(), "default");
  const llvm::json::Object* train = c.plan->config.getAsObject()->getObject("train");
  EXPECT_EQ(train->getObject("steps")->getString("from").getValue(), "t.accel:4:19");
}

TEST_F(LowerTest, MixedPrecisionIsRefusedUntilTheRuntimeHasIt) {
  Compilation c = Compile(kMinimal, {{"ACCELERATE_MIXED_PRECISION", "bf16"}});
  EXPECT_FALSE(c.plan.has_value());
  ASSERT_EQ(c.diagnostics.diagnostics().size(), 1u);
  const diag::Diagnostic& d = c.diagnostics.diagnostics()[0];
  EXPECT_EQ(d.code, "A4001");
  EXPECT_NE(d.message.find("ACCELERATE_MIXED_PRECISION"), std::string::npos) << d.message;
}

TEST_F(LowerTest, CrossFieldRuleOfTheJobSchema) {
  Compilation c = Compile(R"(job j {
  model = MLP { inputs = 4 }
  data = SyntheticRegression { features = 5 }
  train { steps = 5 }
})");
  EXPECT_FALSE(c.plan.has_value());
  ASSERT_EQ(c.diagnostics.diagnostics().size(), 1u);
  EXPECT_EQ(c.diagnostics.diagnostics()[0].code, "JOB-001");
}

}  // namespace
}  // namespace accel::driver
