#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <ATen/autocast_mode.h>

#include <cmath>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "compiler/plan/builtin_modules.h"
#include "runtime/checkpoint/safetensors.h"
#include "runtime/data/dataset.h"
#include "runtime/distributed/collectives.h"
#include "runtime/distributed/environment.h"
#include "runtime/model/trainer.h"
#include "runtime/train/data_source.h"
#include "runtime/train/worker.h"
#include "tests/support/plan_builders.h"

namespace accel::rt::train {
namespace {

plan::TrainLoop Loop(const std::string& optimizer, double lr) {
  plan::TrainLoop loop;
  loop.steps = 50;
  loop.log_every = 10;
  loop.optimizer = testing::OptimizerNamed(optimizer, lr);
  return loop;
}

data::Dataset Regression(int64_t samples) {
  return data::GenerateSyntheticRegression(samples, 4, 1, 0.0, 11);
}

float TrainSteps(Trainer& trainer, const data::Dataset& data, int steps, float* first) {
  float last = 0;
  for (int step = 0; step < steps; ++step) {
    int64_t begin = (step * 16) % data.size();
    at::Tensor x = data.features.narrow(0, begin, 16), y = data.targets.narrow(0, begin, 16);
    last = trainer.ForwardBackward(x, y);
    if (step == 0 && first != nullptr) *first = last;
    trainer.OptimizerStep();
  }
  return last;
}

TEST(Trainer, LossFallsWithEveryOptimizer) {
  data::Dataset data = Regression(256);
  for (auto [name, lr] : {std::pair{"sgd", 0.05}, {"adam", 0.01}, {"adamw", 0.01}}) {
    at::manual_seed(0);
    std::unique_ptr<Trainer> trainer = MakeTrainer(testing::Mlp(4, {16}, 1), Loop(name, lr));
    EXPECT_EQ(trainer->NamedParameters().size(), 4u);
    EXPECT_EQ(trainer->NamedParameters()[0].first, "0.weight");
    float first = 0;
    float last = TrainSteps(*trainer, data, 60, &first);
    EXPECT_LT(last, first * 0.25f) << name << ": first " << first << " last " << last;
    EXPECT_EQ(trainer->ExportOptimizerState().type, name);
  }
}

TEST(Trainer, TheBuiltInTransformerLearnsAndNamesItsParametersLikeTorch) {
  plan::BuildModel model{plan::Transformer{/*inputs=*/4, /*d_model=*/16, /*heads=*/4, /*layers=*/2,
                                           /*feedforward=*/32, /*outputs=*/1}};
  at::manual_seed(4);
  std::unique_ptr<Trainer> trainer = MakeTrainer(model, Loop("adamw", 0.01));
  std::vector<std::string> names;
  for (const auto& [name, tensor] : trainer->NamedParameters()) names.push_back(name);
  // A module's own parameters come before its children's, as in Python's named_parameters().
  ASSERT_GE(names.size(), 2u);
  EXPECT_EQ(names[0], "position");
  EXPECT_EQ(names[1], "value.weight");
  EXPECT_NE(std::find(names.begin(), names.end(), "encoder.layers.1.self_attn.in_proj_weight"), names.end());
  EXPECT_EQ(names.back(), "head.bias");
  float first = 0;
  float last = TrainSteps(*trainer, Regression(256), 80, &first);
  EXPECT_LT(last, first * 0.5f) << "first " << first << " last " << last;
  EXPECT_THROW(trainer->ForwardBackward(at::randn({2, 5}), at::randn({2, 1})), std::invalid_argument);
}

void CollectClasses(const ModuleNode& node, std::set<std::string>& classes) {
  if (!node.path.empty()) classes.insert(node.type);
  for (const ModuleNode& child : node.children) CollectClasses(child, classes);
}

// The compiler refuses a wrap class a built-in model lacks from its own table
// (plan::BuiltInModuleClasses): the table must be what the runtime builds.
TEST(Trainer, TheCompilersTableOfBuiltInModuleClassesIsWhatTheRuntimeBuilds) {
  std::vector<plan::BuildModel> models = {
      testing::Mlp(4, {16, 8}, 1), testing::Mlp(4, {}, 1),
      plan::BuildModel{plan::Transformer{/*inputs=*/4, /*d_model=*/16, /*heads=*/4, /*layers=*/2,
                                         /*feedforward=*/32, /*outputs=*/1}}};
  for (const plan::BuildModel& model : models) {
    std::set<std::string> built;
    CollectClasses(MakeTrainer(model, Loop("adamw", 0.01))->Modules(), built);
    std::optional<std::vector<std::string>> table = plan::BuiltInModuleClasses(model.model);
    ASSERT_TRUE(table.has_value());
    EXPECT_EQ(std::vector<std::string>(built.begin(), built.end()), *table);
  }
}

TEST(Trainer, GradientsAccumulateUntilTheOptimizerStepClearsThem) {
  at::manual_seed(1);
  std::unique_ptr<Trainer> trainer = MakeTrainer(testing::Mlp(4, {8}, 1), Loop("sgd", 0.1));
  data::Dataset data = Regression(32);
  at::Tensor x = data.features.narrow(0, 0, 8), y = data.targets.narrow(0, 0, 8);
  trainer->ForwardBackward(x, y);
  at::Tensor once = trainer->NamedParameters()[0].second.grad().clone();
  // Two halves of the loss scale add up to the gradient of the whole. The step frees the
  // gradients (set to None), as PyTorch's optimizer.zero_grad() does by default.
  trainer->OptimizerStep(/*skip=*/true);
  EXPECT_FALSE(trainer->NamedParameters()[0].second.grad().defined());
  trainer->ForwardBackward(x, y, 0.5);
  trainer->ForwardBackward(x, y, 0.5);
  EXPECT_TRUE(at::allclose(trainer->NamedParameters()[0].second.grad(), once, 1e-6, 1e-7));
}

TEST(Trainer, ClipsTheGlobalGradientNorm) {
  at::manual_seed(2);
  std::unique_ptr<Trainer> trainer = MakeTrainer(testing::Mlp(4, {8}, 1), Loop("sgd", 0.1));
  data::Dataset data = Regression(32);
  trainer->ForwardBackward(data.features, data.targets * 100);
  double before = trainer->ClipGradNorm(0.5);
  double after = 0;
  for (const auto& [name, p] : trainer->NamedParameters()) after += p.grad().pow(2).sum().item<double>();
  EXPECT_GT(before, 0.5);
  EXPECT_NEAR(std::sqrt(after), 0.5, 1e-4);
}

TEST(Trainer, TheSchedulerSetsTheLearningRate) {
  std::unique_ptr<Trainer> trainer = MakeTrainer(testing::Mlp(4, {8}, 1), Loop("adamw", 0.1));
  EXPECT_DOUBLE_EQ(trainer->learning_rate(), 0.1);
  trainer->SetLearningRate(0.025);
  EXPECT_DOUBLE_EQ(trainer->learning_rate(), 0.025);
  EXPECT_EQ(trainer->ExportOptimizerState().hyperparameters.getNumber("lr"), 0.025);
}

TEST(Trainer, Bf16AutocastRunsTheForwardPassInBf16) {
  plan::TrainLoop loop = Loop("sgd", 0.05);
  data::Dataset data = Regression(64);
  at::manual_seed(3);
  std::unique_ptr<Trainer> fp32 = MakeTrainer(testing::Mlp(4, {16}, 1), loop);
  loop.mixed_precision = plan::MixedPrecision::bf16;
  at::manual_seed(3);
  std::unique_ptr<Trainer> bf16 = MakeTrainer(testing::Mlp(4, {16}, 1), loop);
  loop.autocast.enabled = false;  // AutocastKwargs(enabled=False): full precision again
  at::manual_seed(3);
  std::unique_ptr<Trainer> disabled = MakeTrainer(testing::Mlp(4, {16}, 1), loop);
  float a = fp32->ForwardBackward(data.features, data.targets);
  float b = bf16->ForwardBackward(data.features, data.targets);
  float c = disabled->ForwardBackward(data.features, data.targets);
  EXPECT_NE(a, b) << "bf16 rounding must change the loss";
  EXPECT_NEAR(a, b, 0.05 * std::abs(a));
  EXPECT_EQ(a, c);
  // Parameters and their gradients stay fp32; autocast is off again afterwards.
  EXPECT_EQ(bf16->NamedParameters()[0].second.grad().scalar_type(), at::kFloat);
  EXPECT_FALSE(at::autocast::is_autocast_enabled(c10::kCPU));
}

TEST(Trainer, CrossEntropyNeedsClassIndicesInRange) {
  plan::TrainLoop loop = Loop("sgd", 0.05);
  loop.loss = plan::Loss::cross_entropy;
  std::unique_ptr<Trainer> trainer = MakeTrainer(testing::Mlp(4, {8}, 3), loop);
  at::Tensor x = at::randn({6, 4});
  float loss = trainer->ForwardBackward(x, at::tensor({0, 1, 2, 0, 1, 2}, at::kLong));
  EXPECT_GT(loss, 0.5f);  // about log(3) for an untrained model
  try {
    trainer->ForwardBackward(x, at::tensor({0, 1, 3, 0, 1, 2}, at::kLong));
    FAIL() << "class 3 of 3 outputs was accepted";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("outside [0, 3)"), std::string::npos) << error.what();
  }
}

TEST(Trainer, MismatchedTargetsAreAnErrorNotABroadcast) {
  std::unique_ptr<Trainer> trainer = MakeTrainer(testing::Mlp(4, {8}, 2), Loop("sgd", 0.05));
  EXPECT_THROW(trainer->ForwardBackward(at::randn({5, 4}), at::randn({5, 1})), std::invalid_argument);
}

TEST(Trainer, LoadsATorchScriptModelWithPythonsParameterNames) {
  plan::BuildModel model{plan::TorchScript{std::string(ACCEL_SOURCE_DIR) + "/specs/models/classifier.pt"}};
  plan::TrainLoop loop = Loop("adam", 0.01);
  loop.loss = plan::Loss::cross_entropy;
  std::unique_ptr<Trainer> trainer = MakeTrainer(model, loop);
  std::vector<std::string> names, buffers;
  for (const auto& [name, tensor] : trainer->NamedParameters()) names.push_back(name);
  for (const auto& [name, tensor] : trainer->NamedBuffers()) buffers.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"hidden.weight", "norm.weight", "norm.bias", "head.weight",
                                             "head.bias"}));
  EXPECT_EQ(buffers,
            (std::vector<std::string>{"norm.running_mean", "norm.running_var", "norm.num_batches_tracked"}));
  at::Tensor before = trainer->NamedParameters()[0].second.clone();
  trainer->ForwardBackward(at::randn({8, 4}), at::tensor({0, 1, 2, 0, 1, 2, 0, 1}, at::kLong));
  trainer->OptimizerStep();
  EXPECT_FALSE(at::equal(before, trainer->NamedParameters()[0].second));
  EXPECT_EQ(trainer->NamedBuffers()[2].second.item<int64_t>(), 1);  // batch norm ran in training mode
}

// Rank 0's check before the rendezvous: the model on the meta device, one batch of the data's width.
TEST(Trainer, AScriptedModelIsCheckedAgainstTheDatasRowWidthOnTheMetaDevice) {
  plan::TorchScript model{std::string(ACCEL_SOURCE_DIR) + "/specs/models/classifier.pt"};
  EXPECT_EQ(CheckScriptedModelTakes(model, 4), "");
  std::string refused = CheckScriptedModelTakes(model, 8);
  EXPECT_NE(refused.find("does not take this data's rows of 8 features: RuntimeError: mat1 and mat2 "
                         "shapes cannot be multiplied (2x8 and 4x"),
            std::string::npos)
      << refused;
  EXPECT_NE(refused.find("\n  Traceback of TorchScript"), std::string::npos) << refused;
  // A file that does not load is the trainer's to explain.
  EXPECT_EQ(CheckScriptedModelTakes(plan::TorchScript{::testing::TempDir() + "/absent.pt"}, 4), "");
}

// The width read from what the files say of themselves, without loading their rows.
TEST(DataSource, PeeksTheFeatureWidthOfEveryOneTensorDataset) {
  std::string dir = ::testing::TempDir() + "/peek";
  std::filesystem::create_directories(dir);
  EXPECT_EQ(PeekFeatureWidth(plan::SyntheticRegression{64, 6}), 6);

  std::ofstream(dir + "/rows.csv") << "a,b,c,y\n1,2,3,4\n";
  EXPECT_EQ(PeekFeatureWidth(plan::CsvDataset{dir + "/rows.csv", {}, {"y"}}), 3);
  EXPECT_EQ(PeekFeatureWidth(plan::CsvDataset{dir + "/rows.csv", {"a", "c"}, {"y"}}), 2);

  // numpy.save of a float32 [2, 5] array: version 1, a 118-byte header padded to 128 bytes.
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 5), }";
  header.resize(117, ' ');
  header += '\n';
  std::string npy = std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header.size()) + '\0' + header +
                    std::string(2 * 5 * 4, '\0');
  std::ofstream(dir + "/x.npy", std::ios::binary) << npy;
  EXPECT_EQ(PeekFeatureWidth(plan::NpyDataset{dir + "/x.npy", dir + "/y.npy"}), 5);
  std::ofstream(dir + "/not.npy") << "not numpy";
  EXPECT_EQ(PeekFeatureWidth(plan::NpyDataset{dir + "/not.npy", dir + "/y.npy"}), std::nullopt);

  std::vector<float> values(3 * 7, 0.5f);
  std::string_view bytes(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  ASSERT_FALSE(static_cast<bool>(
      checkpoint::WriteSafetensors(dir + "/data.safetensors", {{"x", "F32", {3, 7}, bytes}})));
  EXPECT_EQ(PeekFeatureWidth(plan::SafetensorsDataset{dir + "/data.safetensors", "x", "y"}), 7);
  EXPECT_EQ(PeekFeatureWidth(plan::SafetensorsDataset{dir + "/data.safetensors", "missing", "y"}),
            std::nullopt);
}

TEST(Trainer, ABadTorchScriptFileIsAClearError) {
  std::string path = ::testing::TempDir() + "/not-a-model.pt";
  std::ofstream(path) << "not a zip archive";
  plan::BuildModel model{plan::TorchScript{path}};
  try {
    MakeTrainer(model, Loop("sgd", 0.1));
    FAIL() << "a text file loaded as a model";
  } catch (const std::invalid_argument& error) {
    std::string text = error.what();
    EXPECT_NE(text.find("cannot load the TorchScript model " + path), std::string::npos) << text;
    EXPECT_NE(text.find("torch.jit.save"), std::string::npos) << text;
  }
}

plan::Plan QuickstartPlan() {
  std::ifstream in(std::string(ACCEL_SOURCE_DIR) + "/tests/golden/plans/quickstart.accel.plan.json");
  std::stringstream text;
  text << in.rdbuf();
  llvm::Expected<plan::Plan> plan = plan::FromJson(text.str(), "quickstart.accel.plan.json");
  if (!plan) throw std::runtime_error(llvm::toString(plan.takeError()));
  return std::move(*plan);
}

// The quickstart on one process, `steps` steps, every step logged, into a fresh directory.
plan::Plan OneProcess(int64_t steps) {
  plan::Plan plan = QuickstartPlan();
  for (plan::Step& step : plan.steps) {
    if (auto* init = std::get_if<plan::InitProcessGroup>(&step)) init->processes_per_machine = 1;
    if (auto* loop = std::get_if<plan::TrainLoop>(&step)) {
      loop->steps = steps;
      loop->log_every = 1;
    }
  }
  return plan;
}

plan::TrainLoop& LoopOf(plan::Plan& plan) {
  for (plan::Step& step : plan.steps) {
    if (auto* loop = std::get_if<plan::TrainLoop>(&step)) return *loop;
  }
  throw std::logic_error("no train step");
}

RunSummary RunOne(const plan::Plan& plan, const std::string& name, const std::string& resume = "") {
  WorkerContext context;
  context.output_dir = ::testing::TempDir() + "/" + name;
  std::filesystem::remove_all(context.output_dir);
  context.resume = resume;
  llvm::Expected<RunSummary> summary = RunWorker(plan, context);
  if (!summary) throw std::runtime_error(llvm::toString(summary.takeError()));
  return *summary;
}

std::vector<double> LoggedRates(const std::string& name) {
  std::ifstream in(::testing::TempDir() + "/" + name + "/metrics.jsonl");
  std::vector<double> rates;
  for (std::string line; std::getline(in, line);) {
    llvm::Expected<llvm::json::Value> value = llvm::json::parse(line);
    if (!value) throw std::runtime_error(llvm::toString(value.takeError()));
    if (auto lr = value->getAsObject()->getNumber("lr")) rates.push_back(*lr);
  }
  return rates;
}

TEST(RunWorker, HeldOutRowsWithoutEvalEveryAreEvaluatedOnceAtTheEnd) {
  plan::Plan plan = OneProcess(3);
  LoopOf(plan).eval_samples = 64;  // eval_every stays 0 (was a division by zero)
  RunSummary summary = RunOne(plan, "eval_at_end");
  EXPECT_GE(summary.eval_loss, 0.0);
}

TEST(RunWorker, ResumeAutoWithoutACheckpointTrainsLikeAFreshRun) {
  plan::Plan plan = OneProcess(4);
  LoopOf(plan).lr_schedule = plan::LrScheduleType::linear;
  LoopOf(plan).warmup_steps = 2;
  plan::Checkpoint checkpoint;
  checkpoint.checkpoint_every = 100;
  plan.steps.insert(plan.steps.end() - 1, checkpoint);
  std::string fresh = RunOne(plan, "fresh_run").parameter_digest;
  // The first step trains at the warmup's rate 0 either way (it used the base rate).
  EXPECT_EQ(RunOne(plan, "auto_without_checkpoint", "auto").parameter_digest, fresh);
  EXPECT_EQ(LoggedRates("auto_without_checkpoint"), LoggedRates("fresh_run"));
  EXPECT_EQ(LoggedRates("fresh_run").front(), 0.0);
}

TEST(RunWorker, ResumeWithoutCheckpointingNamesBothTriggers) {
  WorkerContext context;
  context.output_dir = ::testing::TempDir() + "/resume_without_checkpoints";
  context.resume = "auto";
  llvm::Expected<RunSummary> summary = RunWorker(OneProcess(2), context);
  ASSERT_FALSE(static_cast<bool>(summary));
  std::string error = llvm::toString(summary.takeError());
  EXPECT_NE(error.find("set `train.checkpoint_every` or `train.checkpoint_every_epoch`"), std::string::npos)
      << error;
}

TEST(RunWorker, ASchedulerNotSteppedWithTheOptimizerStepsEveryMicroBatch) {
  plan::Plan plan = OneProcess(4);
  plan::TrainLoop& loop = LoopOf(plan);
  loop.gradient_accumulation.num_steps = 2;
  loop.step_scheduler_with_optimizer = false;
  loop.lr_schedule = plan::LrScheduleType::linear;
  loop.warmup_steps = 4;  // 8 scheduler steps of warmup at 2 micro-batches per step
  RunOne(plan, "scheduler_per_micro_batch");
  // Optimizer step s runs after 2s - 1 scheduler steps (one per earlier micro-batch).
  double base = std::get<plan::AdamW>(loop.optimizer).lr;
  std::vector<double> expected{base * 1 / 8, base * 3 / 8, base * 5 / 8, base * 7 / 8};
  std::vector<double> logged = LoggedRates("scheduler_per_micro_batch");
  ASSERT_EQ(logged.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(logged[i], expected[i], 1e-12) << "step " << i + 1;
}

// The one-process quickstart on `device`, checkpointed every 20 of 40 steps, then resumed from
// its step-20 checkpoint: the resumed run ends where the whole one did. Returns the whole run.
RunSummary TrainAndResumeOn(plan::Device device, const std::string& name) {
  plan::Plan plan = OneProcess(40);
  for (plan::Step& step : plan.steps) {
    if (auto* init = std::get_if<plan::InitProcessGroup>(&step)) init->device = device;
  }
  plan::Checkpoint every20;
  every20.checkpoint_every = 20;
  plan.steps.insert(plan.steps.end() - 1, every20);
  RunSummary whole = RunOne(plan, name);
  std::vector<std::string> saved;
  const std::string checkpoints = ::testing::TempDir() + "/" + name + "/checkpoints";
  for (const auto& entry : std::filesystem::directory_iterator(checkpoints)) saved.push_back(entry.path().string());
  std::sort(saved.begin(), saved.end());  // the step-20 checkpoint first, by number
  EXPECT_EQ(saved.size(), 2u);
  RunSummary resumed = RunOne(plan, name + "_resumed", saved.front());
  EXPECT_EQ(resumed.resumed_at_step, 20);
  EXPECT_NEAR(resumed.final_loss, whole.final_loss, 1e-6);
  return whole;
}

TEST(RunWorker, ResumesFromACheckpointOfTheSameRunToTheSameEnd) {
  TrainAndResumeOn(plan::Device::cpu, "resume_cpu");
}

// A `cuda` plan of one process trains on the GPU from the CPU run's weights, every loss within
// float rounding of the CPU's; its checkpoints are written from device memory and a resume reads
// them back onto the GPU.
TEST(RunWorker, TrainsOnTheGpuAsOnTheCpuAndResumesThere) {
  if (!distributed::IsCudaAvailable()) GTEST_SKIP() << "skipped: no CUDA device";
  RunSummary on_cpu = TrainAndResumeOn(plan::Device::cpu, "device_cpu");
  RunSummary on_gpu = TrainAndResumeOn(plan::Device::cuda, "device_gpu");
  EXPECT_NEAR(on_gpu.first_loss, on_cpu.first_loss, 1e-5);
  EXPECT_NEAR(on_gpu.final_loss, on_cpu.final_loss, 1e-4 + 1e-3 * on_cpu.final_loss);
}

TEST(RunWorker, UsesThePlansBackendAndExplainsWhyNcclCannotRunHere) {
  std::optional<plan::Plan> plan = QuickstartPlan();
  for (plan::Step& step : plan->steps) {
    if (auto* init = std::get_if<plan::InitProcessGroup>(&step)) init->backend = plan::Backend::nccl;
  }
  if (distributed::IsCudaAvailable()) GTEST_SKIP() << "skipped: a CUDA device is visible";
  WorkerContext context;
  context.world_size = 2;
  context.output_dir = ::testing::TempDir() + "/run_worker_backend";
  llvm::Expected<RunSummary> summary = RunWorker(*plan, context);
  ASSERT_FALSE(static_cast<bool>(summary));
  std::string error = llvm::toString(summary.takeError());
  EXPECT_NE(error.find("cannot use CUDA: no CUDA device is visible"), std::string::npos) << error;
}

}  // namespace
}  // namespace accel::rt::train
