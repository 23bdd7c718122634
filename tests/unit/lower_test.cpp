#include "compiler/lower/lower.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <variant>

#include "compiler/pipeline/compile.h"
#include "compiler/lower/native_support.h"
#include "compiler/plan/plan.h"

namespace accel::pipeline {
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
  EXPECT_EQ(init->backend, plan::Backend::gloo);
  EXPECT_EQ(init->processes_per_machine, 2);
  EXPECT_EQ(init->timeout, 60000);
  EXPECT_TRUE(std::holds_alternative<plan::AdamW>(c.plan->Find<plan::TrainLoop>()->optimizer));
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
  EXPECT_EQ(checkpoint->checkpoint_every, 2);
  // The Accelerator's project_dir applies when the configuration has none; logging_dir follows.
  EXPECT_EQ(checkpoint->project_dir, "runs/fallback");
  EXPECT_EQ(checkpoint->logging_dir, "runs/fallback");
  EXPECT_TRUE(checkpoint->automatic_checkpoint_naming);
  EXPECT_EQ(checkpoint->total_limit, 2);
  EXPECT_TRUE(checkpoint->save_on_each_node);
  EXPECT_EQ(plan::OpName(c.plan->steps[c.plan->steps.size() - 2]), "checkpoint");

  Compilation none = Compile(kMinimal);
  ASSERT_TRUE(none.plan.has_value());
  EXPECT_EQ(none.plan->Find<plan::Checkpoint>(), nullptr);
}

// The fields of the stdlib records lowering copies whole, by name, into the plan record of the
// same name (the alternatives of the model, dataset and optimizer unions): "Record.field".
template <typename... Alternatives>
void AddPlanFields(const std::variant<Alternatives...>*, std::set<std::string, std::less<>>& out) {
  auto add = [&](auto alternative) {
    plan::ForEachField(alternative, [&](const plan::FieldInfo& field, const auto&) {
      out.insert(std::string(decltype(alternative)::kTag) + "." + std::string(field.name));
    });
  };
  (add(Alternatives{}), ...);
}

std::set<std::string, std::less<>> FieldsCopiedWhole() {
  std::set<std::string, std::less<>> out;
  AddPlanFields(static_cast<const plan::Model*>(nullptr), out);
  AddPlanFields(static_cast<const plan::Dataset*>(nullptr), out);
  AddPlanFields(static_cast<const plan::Optimizer*>(nullptr), out);
  return out;
}

// The coverage of native_support.def: a field added to the stdlib that lowering neither
// executes, refuses nor declares without effect would be silently dropped by every native run.
// A field copied whole into its plan twin is executed by construction and has no row
// (lowering's FromSpecAlternative fails to compile when a field has neither).
TEST_F(LowerTest, EveryFieldAJobReachesIsLoweredRefusedOrDeclaredWithoutEffect) {
  const sema::Schema& schema = stdlib_->schema();
  const std::set<std::string, std::less<>> copied = FieldsCopiedWhole();
  std::vector<std::string> missing;
  std::set<std::string, std::less<>> reached;
  std::function<void(const sema::Type&)> walk_type;
  std::function<void(const std::string&)> walk_record = [&](const std::string& record) {
    if (!reached.insert(record).second) return;
    for (const sema::FieldSchema& field : schema.records.at(record).fields) {
      const lower::NativeField* row = lower::FindNativeField(record, field.name);
      if (row == nullptr && !copied.count(record + "." + field.name)) {
        missing.push_back(record + "." + field.name);
      } else if (row == nullptr || row->how == lower::NativeField::How::Lowered) {
        walk_type(field.type);  // what a refused or inert field holds does not matter
      }
    }
  };
  walk_type = [&](const sema::Type& type) {
    if (type.kind == sema::Type::Kind::Record) walk_record(type.name);
    for (const sema::Type& arg : type.args) walk_type(arg);
  };
  walk_record("Job");
  EXPECT_TRUE(missing.empty()) << "fields without a row in compiler/lower/native_support.def: "
                               << llvm::join(missing, ", ");
  // And no row is stale: each names a field of a record a job reaches, and none repeats what
  // copying a record whole already does.
  for (const lower::NativeField& row : lower::NativeFields()) {
    auto record = schema.records.find(row.record);
    EXPECT_TRUE(record != schema.records.end() && reached.count(row.record) > 0 &&
                record->second.Find(row.field) != nullptr)
        << row.record << "." << row.field;
    EXPECT_FALSE(row.how == lower::NativeField::How::Lowered &&
                 copied.count(std::string(row.record) + "." + std::string(row.field)))
        << row.record << "." << row.field << " is copied whole into its plan twin; its row says it again";
  }
  EXPECT_GT(reached.size(), 20u);  // the walk went through unions, optionals and lists
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
  EXPECT_EQ(c.plan->Find<plan::InitProcessGroup>()->timeout, 1800 * 1000);
  EXPECT_EQ(std::get<plan::MLP>(c.plan->Find<plan::BuildModel>()->model).hidden, std::vector<int64_t>{64});
  EXPECT_TRUE(std::holds_alternative<plan::SGD>(c.plan->Find<plan::TrainLoop>()->optimizer));
  EXPECT_EQ(c.plan->Find<plan::TrainLoop>()->ddp.bucket_cap_mb, 25);
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

TEST_F(LowerTest, Fp16IsRefusedOnTheCpuAndBf16FromTheEnvironmentLowers) {
  Compilation fp16 = Compile(kMinimal, {{"ACCELERATE_MIXED_PRECISION", "fp16"}});
  EXPECT_FALSE(fp16.plan.has_value());
  ASSERT_EQ(fp16.diagnostics.diagnostics().size(), 1u);
  const diag::Diagnostic& d = fp16.diagnostics.diagnostics()[0];
  EXPECT_EQ(d.code, "A4010");
  EXPECT_NE(d.message.find("ACCELERATE_MIXED_PRECISION"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("use `bf16` on the CPU"), std::string::npos) << d.message;

  Compilation bf16 = Compile(kMinimal, {{"ACCELERATE_MIXED_PRECISION", "bf16"}});
  ASSERT_TRUE(bf16.plan.has_value());
  EXPECT_EQ(bf16.plan->Find<plan::TrainLoop>()->mixed_precision, plan::MixedPrecision::bf16);
}

TEST_F(LowerTest, TheExecutorsSettingsLowerAsAccelerateResolvesThem) {
  Compilation c = Compile(R"(job tiny {
  compute { distributed_type = MULTI_CPU; num_processes = 2 }
  accelerator {
    seed = 9
    gradient_accumulation_plugin = GradientAccumulationPlugin { num_steps = 3; adjust_scheduler = true; sync_each_batch = true }
    dataloader_config { split_batches = true; use_seedable_sampler = true }
    autocast { cache_enabled = false }
    ddp { comm_hook = FP16; find_unused_parameters = true; broadcast_buffers = false; bucket_cap_mb = 4 }
    log_with = [ALL]
    project_config { logging_dir = "runs/logs" }
  }
  model = TorchScript { path = "models/m.pt" }
  data = NpyDataset { features_file = "data/x.npy"; targets_file = "/abs/y.npy"; batch_size = 8; drop_last = true }
  train { steps = 5; loss = cross_entropy; optimizer = Adam { lr = 0.01 }; lr_schedule = cosine; warmup_steps = 2; max_grad_norm = 1.5 }
})");
  ASSERT_TRUE(c.plan.has_value());
  const auto* model = c.plan->Find<plan::BuildModel>();
  EXPECT_EQ(std::get<plan::TorchScript>(model->model).path,
            "models/m.pt");  // relative to t.accel's directory, which is ""
  const auto* data = c.plan->Find<plan::BuildDataloader>();
  const auto& npy = std::get<plan::NpyDataset>(data->dataset);
  EXPECT_EQ(npy.features_file, "data/x.npy");
  EXPECT_EQ(npy.targets_file, "/abs/y.npy");
  EXPECT_EQ(data->targets, plan::TargetKind::class_labels);
  EXPECT_TRUE(data->split_batches && data->use_seedable_sampler && data->drop_last);
  EXPECT_FALSE(data->dispatch_batches);  // unset: only iterable datasets dispatch
  EXPECT_EQ(data->data_seed, 9);         // data_seed unset: the job seed (torch.initial_seed())
  const auto* loop = c.plan->Find<plan::TrainLoop>();
  EXPECT_EQ(loop->gradient_accumulation.num_steps, 3);
  EXPECT_FALSE(loop->gradient_accumulation.adjust_scheduler);  // GA-003: to_kwargs drops the default True
  EXPECT_TRUE(loop->gradient_accumulation.sync_each_batch);
  EXPECT_FALSE(loop->autocast.cache_enabled);
  EXPECT_EQ(loop->ddp.comm_hook, plan::DDPCommunicationHookType::fp16);
  EXPECT_TRUE(loop->ddp.find_unused_parameters);
  EXPECT_FALSE(loop->ddp.broadcast_buffers);
  EXPECT_EQ(loop->ddp.bucket_cap_mb, 4);
  EXPECT_EQ(loop->trackers, (std::vector<plan::Tracker>{plan::Tracker::tensorboard}));
  EXPECT_EQ(loop->logging_dir, "runs/logs");
  EXPECT_TRUE(std::holds_alternative<plan::Adam>(loop->optimizer));
  EXPECT_EQ(loop->lr_schedule, plan::LrScheduleType::cosine);
  EXPECT_EQ(loop->warmup_steps, 2);
  EXPECT_DOUBLE_EQ(loop->max_grad_norm, 1.5);
  EXPECT_EQ(c.plan->Find<plan::Checkpoint>(), nullptr);  // the logging dir alone is the trackers'
}

TEST_F(LowerTest, PaddingOfRaggedColumnsLowersFieldByField) {
  Compilation c = Compile(R"(job tiny {
  model = TorchScript { path = "m.pt" }
  data = SafetensorsColumns {
    path = "d.safetensors"
    pad_values = { labels: -100, input_ids: 3 }
    pad_to_multiple_of = 8
    padding_side = LEFT
    attention_mask_from = "input_ids"
    same_length = ["input_ids", "labels"]
  }
  train { steps = 5 }
})");
  ASSERT_TRUE(c.plan.has_value());
  const auto& columns = std::get<plan::SafetensorsColumns>(c.plan->Find<plan::BuildDataloader>()->dataset);
  ASSERT_EQ(columns.pad_values.size(), 2u);
  // The spec's order, each value with its column.
  EXPECT_EQ(columns.pad_values[0].column, "labels");
  EXPECT_EQ(columns.pad_values[0].value, -100);
  EXPECT_EQ(columns.pad_values[1].column, "input_ids");
  EXPECT_EQ(columns.pad_values[1].value, 3);
  EXPECT_EQ(columns.pad_to_multiple_of, 8);
  EXPECT_EQ(columns.padding_side, plan::PaddingSide::left);
  EXPECT_EQ(columns.attention_mask_from, "input_ids");
  EXPECT_EQ(columns.same_length, (std::vector<std::string>{"input_ids", "labels"}));

  // Unset: no pad values, multiples of 1, right padding, no mask.
  Compilation defaults = Compile(R"(job tiny {
  model = TorchScript { path = "m.pt" }
  data = NpyColumns { dir = "d" }
  train { steps = 5 }
})");
  ASSERT_TRUE(defaults.plan.has_value());
  const auto& npy = std::get<plan::NpyColumns>(defaults.plan->Find<plan::BuildDataloader>()->dataset);
  EXPECT_TRUE(npy.pad_values.empty());
  EXPECT_EQ(npy.pad_to_multiple_of, 1);
  EXPECT_EQ(npy.padding_side, plan::PaddingSide::right);
  EXPECT_EQ(npy.attention_mask_from, "");
}

TEST_F(LowerTest, DataSeedFallsBackToTorchsDefaultSeedWithoutAJobSeed) {
  Compilation c = Compile(R"(job tiny {
  accelerator { seed = none }
  model = MLP { inputs = 4 }
  data = SyntheticRegression { features = 4 }
  train { steps = 5 }
})");
  ASSERT_TRUE(c.plan.has_value()) << c.diagnostics.diagnostics().size();
  EXPECT_EQ(c.plan->Find<plan::BuildDataloader>()->data_seed, 67280421310721);
}

TEST_F(LowerTest, DataSeedOnlySeedsTheSeedableSampler) {
  // DL-006: without the seedable sampler, data_seed changes nothing; the job seed shuffles.
  Compilation c = Compile(R"(job tiny {
  accelerator { seed = 42; dataloader_config { data_seed = 7 } }
  model = MLP { inputs = 4 }
  data = SyntheticRegression { features = 4 }
  train { steps = 5 }
})");
  ASSERT_TRUE(c.plan.has_value());
  EXPECT_EQ(c.plan->Find<plan::BuildDataloader>()->data_seed, 42);
}

TEST_F(LowerTest, UnevenBatchesOnSeveralProcessesAreRefused) {
  const char* uneven = R"(job tiny {
  compute { distributed_type = MULTI_CPU; num_processes = 2 }
  accelerator { dataloader_config { even_batches = false } }
  model = MLP { inputs = 4 }
  data = SyntheticRegression { features = 4 }
  train { steps = 5 }
})";
  Compilation c = Compile(uneven);
  EXPECT_FALSE(c.plan.has_value());
  ASSERT_EQ(c.diagnostics.diagnostics().size(), 1u);
  EXPECT_NE(c.diagnostics.diagnostics()[0].message.find("collectives would no longer pair up"),
            std::string::npos);
  // With drop_last every process draws the same number of batches again.
  std::string dropped = std::string(uneven);
  dropped.replace(dropped.find("SyntheticRegression { features = 4 }"), 36,
                  "CsvDataset { path = \"d.csv\"; target_columns = [\"y\"]; drop_last = true }");
  dropped.replace(dropped.find("MLP { inputs = 4 }"), 18, "MLP { inputs = 4 }");
  EXPECT_TRUE(Compile(dropped).plan.has_value());
}

TEST_F(LowerTest, CrossEntropyOnSyntheticRegressionIsRefused) {
  Compilation c = Compile(R"(job tiny {
  model = MLP { inputs = 4 }
  data = SyntheticRegression { features = 4 }
  train { steps = 5; loss = cross_entropy }
})");
  EXPECT_FALSE(c.plan.has_value());
  ASSERT_EQ(c.diagnostics.diagnostics().size(), 1u);
  EXPECT_NE(c.diagnostics.diagnostics()[0].message.find("its targets are real numbers"), std::string::npos);
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
}  // namespace accel::pipeline
