#include "compiler/plan/plan.h"
#include "compiler/plan/plan_paths.h"

#include <gtest/gtest.h>

namespace accel::plan {
namespace {

Plan SamplePlan() {
  Plan plan;
  plan.job = "sample";
  plan.source = "specs/sample.accel";
  plan.config = llvm::json::Object{{"seed", llvm::json::Object{{"value", 42}, {"from", "default"}}}};
  plan.steps.push_back(InitProcessGroup{Backend::gloo, 60000, 1, 2, "127.0.0.1", 29500});
  plan.steps.push_back(Seed{42});
  plan.steps.push_back(BuildModel{MLP{16, {64, 32}, 1}});
  BuildDataloader data;
  data.dataset = CsvDataset{"data/train.csv", {"x0", "x1"}, {"label"}};
  data.targets = TargetKind::class_labels;
  data.batch_size = 32;
  data.split_batches = true;
  data.use_seedable_sampler = true;
  data.data_seed = 7;
  plan.steps.push_back(data);
  TrainLoop loop;
  loop.steps = 200;
  loop.log_every = 20;
  loop.loss = Loss::cross_entropy;
  loop.mixed_precision = MixedPrecision::bf16;
  loop.optimizer = Adam{0.003, 0.9, 0.999, 1e-8, 0};
  loop.lr_schedule = LrScheduleType::cosine;
  loop.warmup_steps = 10;
  loop.gradient_accumulation.num_steps = 4;
  loop.ddp.bucket_cap_mb = 25;
  loop.ddp.comm_hook = DDPCommunicationHookType::fp16;
  loop.trackers = {Tracker::tensorboard};
  plan.steps.push_back(loop);
  plan.steps.push_back(SaveModel{"runs/x", "model.safetensors"});
  plan.hash = ComputeHash(plan);
  return plan;
}

// The plan's JSON after `edit`, with the hash recomputed as a careful hand edit would.
std::string Edited(const std::string& json, const std::string& from, const std::string& to) {
  std::string text = json;
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
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
  EXPECT_EQ(std::get<MLP>(model->model).hidden, (std::vector<int64_t>{64, 32}));
  EXPECT_DOUBLE_EQ(std::get<Adam>(read->Find<TrainLoop>()->optimizer).eps, 1e-8);
  EXPECT_EQ(read->Find<TrainLoop>()->gradient_accumulation.num_steps, 4);
  EXPECT_EQ(read->Find<TrainLoop>()->ddp.comm_hook, DDPCommunicationHookType::fp16);
  EXPECT_EQ(read->Find<TrainLoop>()->trackers, (std::vector<Tracker>{Tracker::tensorboard}));
  EXPECT_EQ(std::get<CsvDataset>(read->Find<BuildDataloader>()->dataset).target_columns,
            (std::vector<std::string>{"label"}));
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
  EXPECT_EQ(checkpoint->checkpoint_every, 50);
  EXPECT_TRUE(checkpoint->checkpoint_every_epoch);
  EXPECT_EQ(checkpoint->total_limit, 3);
  EXPECT_TRUE(checkpoint->save_on_each_node);
  EXPECT_EQ(OpName(read->steps[5]), "checkpoint");

  std::get<Checkpoint>(plan.steps[5]).total_limit = -1;
  plan.hash = ComputeHash(plan);
  llvm::Expected<Plan> bad = FromJson(ToJson(plan), "p.json");
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_NE(
      llvm::toString(bad.takeError()).find("invalid value -1 at steps[5].total_limit: must not be negative"),
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
  llvm::Expected<Plan> read = FromJson(Edited(json, "\"inputs\": 16", "\"inputs\": \"sixteen\""), "p.json");
  ASSERT_FALSE(static_cast<bool>(read));
  EXPECT_EQ(llvm::toString(read.takeError()), "p.json: expected integer at steps[2].model.inputs");
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
  std::get<InitProcessGroup>(plan.steps[0]).timeout = 0;
  plan.hash = ComputeHash(plan);
  read = FromJson(ToJson(plan), "p.json");
  ASSERT_FALSE(static_cast<bool>(read));
  EXPECT_EQ(llvm::toString(read.takeError()),
            "p.json: invalid value 0 at steps[0].timeout: must be from 1 ms to a year (8760 h)");
  // 100000000 h overflowed a deadline in nanoseconds: the job was killed at once.
  plan = SamplePlan();
  std::get<InitProcessGroup>(plan.steps[0]).timeout = int64_t{100000000} * 3600 * 1000;
  plan.hash = ComputeHash(plan);
  read = FromJson(ToJson(plan), "p.json");
  ASSERT_FALSE(static_cast<bool>(read));
  EXPECT_EQ(llvm::toString(read.takeError()),
            "p.json: invalid value 360000000000000 at steps[0].timeout: must be from 1 ms to a year (8760 h)");
  // An address with a line break forged a log line: named by its byte, not printed.
  plan = SamplePlan();
  std::get<InitProcessGroup>(plan.steps[0]).main_process_ip = "127.0.0.1\nMASTER_ADDR=evil";
  plan.hash = ComputeHash(plan);
  read = FromJson(ToJson(plan), "p.json");
  ASSERT_FALSE(static_cast<bool>(read));
  EXPECT_EQ(llvm::toString(read.takeError()),
            "p.json: invalid address at steps[0].main_process_ip: it holds a line break (byte 0x0a at offset 9)");
  // A second step of a kind would be ignored (every rank runs the first): refused.
  plan = SamplePlan();
  plan.steps.push_back(plan.steps[0]);
  plan.hash = ComputeHash(plan);
  read = FromJson(ToJson(plan), "p.json");
  ASSERT_FALSE(static_cast<bool>(read));
  EXPECT_EQ(llvm::toString(read.takeError()),
            "p.json: invalid plan: steps[" + std::to_string(plan.steps.size() - 1) +
                "] is a second `init_process_group` step (the first is steps[0]); a plan holds each step once");
  // Ranges hold inside lists and nested records too.
  plan = SamplePlan();
  std::get<MLP>(std::get<BuildModel>(plan.steps[2]).model).hidden = {64, -1};
  plan.hash = ComputeHash(plan);
  read = FromJson(ToJson(plan), "p.json");
  ASSERT_FALSE(static_cast<bool>(read));
  EXPECT_EQ(llvm::toString(read.takeError()),
            "p.json: invalid value -1 at steps[2].model.hidden[1]: must be positive");
}

TEST(PlanJson, UnknownOpAndMalformedJsonAreErrors) {
  std::string json = ToJson(SamplePlan());
  json.replace(json.find("\"save_model\""), 12, "\"launch_rocket\"");
  llvm::Expected<Plan> read = FromJson(json, "p.json");
  ASSERT_FALSE(static_cast<bool>(read));
  EXPECT_EQ(
      llvm::toString(read.takeError()),
      "p.json: unknown Step op `launch_rocket` at steps[5].op: expected one of init_process_group, seed, "
      "build_model, build_dataloader, train, save_model, checkpoint");
  llvm::Expected<Plan> broken = FromJson("{\"format\": ", "p.json");
  ASSERT_FALSE(static_cast<bool>(broken));
  EXPECT_NE(llvm::toString(broken.takeError()).find("invalid JSON"), std::string::npos);
}

// A hand-edited plan names a model, an optimizer or an enum member that does not exist: the
// reader says where, before anything runs (and before the hash check, which would only say
// "edited").
TEST(PlanJson, UnknownVariantOrEnumMemberNamesTheFileAndTheJsonPath) {
  std::string json = ToJson(SamplePlan());
  struct Case {
    std::string from, to, message;
  };
  for (const Case& c : std::vector<Case>{
           {"\"type\": \"MLP\"", "\"type\": \"ResNet\"",
            "plan.json: unknown Model type `ResNet` at steps[2].model.type: expected one of MLP, "
            "Transformer, "
            "TorchScript"},
           {"\"type\": \"Adam\"", "\"type\": \"Lion\"",
            "plan.json: unknown Optimizer type `Lion` at steps[4].optimizer.type: expected one of SGD, Adam, "
            "AdamW"},
           {"\"type\": \"CsvDataset\"", "\"type\": \"Parquet\"",
            "plan.json: unknown Dataset type `Parquet` at steps[3].dataset.type: expected one of "
            "SyntheticRegression, CsvDataset, NpyDataset, SafetensorsDataset, SafetensorsColumns, "
            "NpyColumns, "
            "TokenStream"},
           {"\"lr_schedule\": \"cosine\"", "\"lr_schedule\": \"cosin\"",
            "plan.json: unknown LrScheduleType `cosin` at steps[4].lr_schedule: expected one of constant, "
            "constant_with_warmup, linear, cosine"},
           {"\"comm_hook\": \"fp16\"", "\"comm_hook\": \"none\"",
            "plan.json: unknown DDPCommunicationHookType `none` at steps[4].ddp.comm_hook: expected one of "
            "no, "
            "fp16, bf16"},
       }) {
    llvm::Expected<Plan> read = FromJson(Edited(json, c.from, c.to), "plan.json");
    ASSERT_FALSE(static_cast<bool>(read)) << c.to;
    EXPECT_EQ(llvm::toString(read.takeError()), c.message);
  }
}

TEST(PlanJson, UnknownAndMissingFieldsAreErrorsWithTheirPath) {
  std::string json = ToJson(SamplePlan());
  llvm::Expected<Plan> extra =
      FromJson(Edited(json, "\"warmup_steps\": 10", "\"warmup_step\": 10"), "p.json");
  ASSERT_FALSE(static_cast<bool>(extra));
  // The missing field is reported first: the table's order is the reader's.
  EXPECT_EQ(llvm::toString(extra.takeError()), "p.json: missing field at steps[4].warmup_steps");
  llvm::Expected<Plan> unknown =
      FromJson(Edited(json, "\"bucket_cap_mb\": 25", "\"bucket_cap_mb\": 25, \"bucket_cap\": 1"), "p.json");
  ASSERT_FALSE(static_cast<bool>(unknown));
  EXPECT_NE(llvm::toString(unknown.takeError())
                .find("p.json: unknown field `bucket_cap` of `DistributedDataParallelKwargs` at "
                      "steps[4].ddp.bucket_cap"),
            std::string::npos);
}

// The rules across fields, which the table's per-field ranges cannot state; each is checked
// even when the hash was recomputed after the edit.
TEST(PlanJson, RulesAcrossFieldsAreCheckedAfterTheFields) {
  Plan plan = SamplePlan();
  std::get<BuildModel>(plan.steps[2]).model = Transformer{4, 30, 4, 2, 64, 1};
  plan.hash = ComputeHash(plan);
  llvm::Expected<Plan> heads = FromJson(ToJson(plan), "p.json");
  ASSERT_FALSE(static_cast<bool>(heads));
  EXPECT_EQ(llvm::toString(heads.takeError()),
            "p.json: invalid value 4 at steps[2].model.heads: must divide d_model 30");

  plan = SamplePlan();
  std::get<TrainLoop>(plan.steps[4]).eval_every = 5;
  plan.hash = ComputeHash(plan);
  llvm::Expected<Plan> eval = FromJson(ToJson(plan), "p.json");
  ASSERT_FALSE(static_cast<bool>(eval));
  EXPECT_EQ(llvm::toString(eval.takeError()),
            "p.json: invalid evaluation at steps[4]: eval_every 5 needs eval_samples > 0");

  // A run's length is steps or epochs, exactly one of them.
  for (auto [steps, epochs] : {std::pair<int64_t, int64_t>{0, 0}, {5, 2}}) {
    plan = SamplePlan();
    std::get<TrainLoop>(plan.steps[4]).steps = steps;
    std::get<TrainLoop>(plan.steps[4]).epochs = epochs;
    plan.hash = ComputeHash(plan);
    llvm::Expected<Plan> length = FromJson(ToJson(plan), "p.json");
    ASSERT_FALSE(static_cast<bool>(length));
    EXPECT_EQ(llvm::toString(length.takeError()),
              "p.json: invalid length at steps[4]: exactly one of steps (" + std::to_string(steps) +
                  ") and epochs (" + std::to_string(epochs) + ") must be positive");
  }

  plan = SamplePlan();
  std::get<TrainLoop>(plan.steps[4]).warmup_ratio = 0.5;  // next to warmup_steps 10
  plan.hash = ComputeHash(plan);
  llvm::Expected<Plan> warmup = FromJson(ToJson(plan), "p.json");
  ASSERT_FALSE(static_cast<bool>(warmup));
  EXPECT_NE(llvm::toString(warmup.takeError()).find("invalid value 0.5 at steps[4].warmup_ratio"),
            std::string::npos);

  plan = SamplePlan();
  plan.steps.insert(plan.steps.begin() + 5, Checkpoint{});  // no trigger at all
  plan.hash = ComputeHash(plan);
  llvm::Expected<Plan> trigger = FromJson(ToJson(plan), "p.json");
  ASSERT_FALSE(static_cast<bool>(trigger));
  EXPECT_NE(llvm::toString(trigger.takeError()).find("steps[5].checkpoint_every: must be positive unless"),
            std::string::npos);
  std::get<Checkpoint>(plan.steps[5]).checkpoint_every_epoch = true;  // the epoch alone is a trigger
  plan.hash = ComputeHash(plan);
  llvm::Expected<Plan> epoch = FromJson(ToJson(plan), "p.json");
  EXPECT_TRUE(static_cast<bool>(epoch)) << (epoch ? "" : llvm::toString(epoch.takeError()));
}

// A launcher would fork as many workers as the plan says: a typo of 100000 workers per machine
// is refused while reading, at the largest counts the launch flags also accept.
TEST(PlanJson, WorkerCountsAreBoundedAtTheLaunchersLimits) {
  Plan plan = SamplePlan();
  auto& group = std::get<InitProcessGroup>(plan.steps[0]);
  group.processes_per_machine = kMaxProcessesPerMachine;
  group.num_machines = kMaxMachines;
  plan.hash = ComputeHash(plan);
  llvm::Expected<Plan> largest = FromJson(ToJson(plan), "p.json");
  EXPECT_TRUE(static_cast<bool>(largest)) << (largest ? "" : llvm::toString(largest.takeError()));

  group.processes_per_machine = kMaxProcessesPerMachine + 1;
  plan.hash = ComputeHash(plan);
  llvm::Expected<Plan> workers = FromJson(ToJson(plan), "p.json");
  ASSERT_FALSE(static_cast<bool>(workers));
  EXPECT_EQ(llvm::toString(workers.takeError()),
            "p.json: invalid value 4097 at steps[0].processes_per_machine: accelrun starts at most 4096 "
            "workers on a machine");

  group.processes_per_machine = 2;
  group.num_machines = kMaxMachines + 1;
  plan.hash = ComputeHash(plan);
  llvm::Expected<Plan> machines = FromJson(ToJson(plan), "p.json");
  ASSERT_FALSE(static_cast<bool>(machines));
  EXPECT_EQ(llvm::toString(machines.takeError()),
            "p.json: invalid value 100001 at steps[0].num_machines: accelrun starts at most 100000 machines");
}

// llvm::json::parse recurses once per level: 50,000 nested arrays overflowed the stack of
// accelrun. The depth is counted first, without recursion.
TEST(PlanJson, DeepNestingIsRefusedBeforeParsing) {
  std::string deep = "{\"format\": " + std::string(50000, '[') + std::string(50000, ']') + "}";
  llvm::Expected<Plan> read = FromJson(deep, "p.json");
  ASSERT_FALSE(static_cast<bool>(read));
  EXPECT_EQ(llvm::toString(read.takeError()),
            "p.json: nested deeper than 64 levels; this is not a plan accelc wrote");

  EXPECT_FALSE(JsonNestsDeeperThan(std::string(64, '[') + std::string(64, ']'), 64));
  EXPECT_TRUE(JsonNestsDeeperThan(std::string(65, '[') + std::string(65, ']'), 64));
  // Brackets inside strings, escaped quotes included, are text, not nesting.
  EXPECT_FALSE(JsonNestsDeeperThan("[\"" + std::string(100, '[') + "\\\"[[[\"]", 2));
  EXPECT_TRUE(JsonNestsDeeperThan("[\"\\\\\", [[]]]", 2));  // "\\" ends the string
  // Closing brackets bring the depth back down: siblings do not add up.
  EXPECT_FALSE(JsonNestsDeeperThan("[[[]],[[]],[[]]]", 3));

  // The plans the compiler writes stay far inside the bound.
  EXPECT_FALSE(JsonNestsDeeperThan(ToJson(SamplePlan()), 8));
}

TEST(PlanJson, AnOlderFormatIsRefusedWithRecompile) {
  Plan plan = SamplePlan();
  plan.format = "accel-plan/2";
  llvm::Expected<Plan> read = FromJson(ToJson(plan), "old.json");
  ASSERT_FALSE(static_cast<bool>(read));
  std::string message = llvm::toString(read.takeError());
  EXPECT_NE(message.find("unsupported plan format `accel-plan/2`"), std::string::npos) << message;
  EXPECT_NE(message.find("recompile"), std::string::npos) << message;
}

// docs/reference/plan.schema.json is what JsonSchema() writes (scripts/gen-docs.sh), and it
// requires exactly the fields the reader requires.
TEST(PlanSchema, EveryRecordRequiresTheFieldsOfTheTable) {
  llvm::Expected<llvm::json::Value> schema = llvm::json::parse(JsonSchema());
  ASSERT_TRUE(static_cast<bool>(schema)) << llvm::toString(schema.takeError());
  const llvm::json::Object* defs = schema->getAsObject()->getObject("$defs");
  ASSERT_NE(defs, nullptr);
  const llvm::json::Object* ddp = defs->getObject("DistributedDataParallelKwargs");
  ASSERT_NE(ddp, nullptr);
  std::vector<std::string> required;
  for (const llvm::json::Value& name : *ddp->getArray("required"))
    required.push_back(name.getAsString()->str());
  EXPECT_EQ(required, (std::vector<std::string>{"bucket_cap_mb", "comm_hook", "find_unused_parameters",
                                                "broadcast_buffers"}));
  EXPECT_EQ(ddp->getBoolean("additionalProperties"), false);
  const llvm::json::Object* hook = defs->getObject("DDPCommunicationHookType");
  ASSERT_NE(hook, nullptr);
  EXPECT_EQ(hook->getArray("enum")->size(), 3u);
}

// A plan with an input file of each kind of place: a relative model, a relative and an
// absolute data file, and the output directories.
Plan PlanWithPaths() {
  Plan plan;
  plan.steps.push_back(BuildModel{TorchScript{"specs/models/m.pt"}});
  BuildDataloader data;
  NpyDataset npy;
  npy.features_file = "specs/data/x.npy";
  npy.targets_file = "/data/y.npy";
  data.dataset = npy;
  plan.steps.push_back(data);
  TrainLoop loop;
  loop.logging_dir = "runs/j/logs";
  plan.steps.push_back(loop);
  SaveModel save;
  save.dir = "runs/j";
  plan.steps.push_back(save);
  Checkpoint checkpoint;
  checkpoint.project_dir = "runs/j/project";
  checkpoint.logging_dir = "/scratch/logs";
  plan.steps.push_back(checkpoint);
  plan.hash = ComputeHash(plan);
  return plan;
}

TEST(PlanPaths, RebasesInputsToThePlansDirectoryAndRehashes) {
  Plan plan = PlanWithPaths();
  std::string before = plan.hash;
  RebaseInputPaths(plan, "/src/repo", "/src/repo/build/plans");
  EXPECT_EQ(std::get<TorchScript>(plan.Find<BuildModel>()->model).path, "../../specs/models/m.pt");
  const auto& npy = std::get<NpyDataset>(plan.Find<BuildDataloader>()->dataset);
  EXPECT_EQ(npy.features_file, "../../specs/data/x.npy");
  EXPECT_EQ(npy.targets_file, "/data/y.npy");
  // Outputs are not inputs.
  EXPECT_EQ(plan.Find<SaveModel>()->dir, "runs/j");
  EXPECT_NE(plan.hash, before);
  EXPECT_EQ(plan.hash, ComputeHash(plan));
}

TEST(PlanPaths, ResolvesInputsUnderTheBaseAndKeepsTheHash) {
  Plan plan = PlanWithPaths();
  std::string before = plan.hash;
  ResolveInputPaths(plan, "/moved/plans/../job");
  EXPECT_EQ(std::get<TorchScript>(plan.Find<BuildModel>()->model).path, "/moved/job/specs/models/m.pt");
  EXPECT_EQ(std::get<NpyDataset>(plan.Find<BuildDataloader>()->dataset).targets_file, "/data/y.npy");
  EXPECT_EQ(plan.hash, before);
}

TEST(PlanPaths, OutputDirMovesWhatTheOutputDirectoryHolds) {
  Plan plan = PlanWithPaths();
  MoveOutputDir(plan, "elsewhere");
  EXPECT_EQ(plan.Find<SaveModel>()->dir, "elsewhere");
  EXPECT_EQ(plan.Find<Checkpoint>()->project_dir, "elsewhere/project");
  EXPECT_EQ(plan.Find<TrainLoop>()->logging_dir, "elsewhere/logs");
  // Chosen outside the output directory: stays.
  EXPECT_EQ(plan.Find<Checkpoint>()->logging_dir, "/scratch/logs");
  // The output directory itself, and a sibling that only shares a prefix.
  Plan same = PlanWithPaths();
  std::get<Checkpoint>(same.steps.back()).project_dir = "runs/j";
  std::get<Checkpoint>(same.steps.back()).logging_dir = "runs/jj";
  MoveOutputDir(same, "x");
  EXPECT_EQ(same.Find<Checkpoint>()->project_dir, "x");
  EXPECT_EQ(same.Find<Checkpoint>()->logging_dir, "runs/jj");
}

}  // namespace
}  // namespace accel::plan
