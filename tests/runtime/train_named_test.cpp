// Models that compute their own loss from named columns: binding columns to a TorchScript
// forward's inputs (named arguments or one dict), reading the loss it returns, the errors before
// the first step, and evaluation with gather_for_metrics weighting. The modules are written in
// TorchScript here (torch::jit::Module::define) and saved, as torch.jit.save would.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/script.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <future>
#include <string>

#include "runtime/data/columns.h"
#include "runtime/data/loader.h"
#include "runtime/distributed/collectives.h"
#include "runtime/distributed/operations.h"
#include "runtime/launch/launcher.h"
#include "runtime/launch/rendezvous_port.h"
#include "runtime/model/trainer.h"
#include "runtime/train/batch_size_search.h"
#include "runtime/train/data_source.h"
#include "runtime/train/evaluation.h"
#include "tests/support/gloo_ranks.h"
#include "tests/support/plan_builders.h"
#include "tests/unit/scratch_dir.h"

namespace accel::rt::train {
namespace {

// A linear regression `x @ w` with its loss; `source` is the TorchScript of its forward.
plan::TorchScript SaveModule(const std::string& name, const std::string& source,
                             std::vector<plan::InputBinding> inputs = {}) {
  torch::jit::Module module("Model");
  module.register_parameter("w", torch::zeros({3, 1}).set_requires_grad(true), /*is_buffer=*/false);
  module.define(source);
  std::string path = (testing::ScratchDir("named") / (name + ".pt")).string();
  module.save(path);
  return plan::TorchScript{path, std::move(inputs)};
}

const char* kNamedArguments = R"(
def forward(self, x: Tensor, y: Optional[Tensor] = None, scale: float = 1.0) -> Dict[str, Tensor]:
    prediction = torch.matmul(x, self.w)
    out = {"prediction": prediction}
    if y is not None:
        out["loss"] = ((prediction - y) ** 2).mean() * scale
        out["error"] = (prediction - y).abs().mean()
    return out
)";

const char* kDictInput = R"(
def forward(self, batch: Dict[str, Tensor]) -> Tuple[Tensor, Tensor]:
    prediction = torch.matmul(batch["x"], self.w)
    return ((prediction - batch["y"]) ** 2).mean(), prediction
)";

plan::TrainLoop Loop() {
  plan::TrainLoop loop;
  loop.steps = 10;
  loop.loss = plan::Loss::model;
  loop.optimizer = testing::OptimizerNamed("sgd", 0.1);
  return loop;
}

// y = x · [1, -2, 0.5] on 32 rows.
data::Columns Regression(const std::string& x = "x", const std::string& y = "y") {
  at::Tensor features = at::randn({32, 3}, at::TensorOptions().dtype(at::kFloat));
  at::Tensor weights = at::tensor({1.0f, -2.0f, 0.5f}).reshape({3, 1});
  return {{x, features}, {y, at::matmul(features, weights)}};
}

std::string ErrorOf(const std::function<void()>& run) {
  try {
    run();
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  ADD_FAILURE() << "no std::invalid_argument";
  return "";
}

TEST(NamedColumns, NamedArgumentsTrainOnTheLossTheModelReturns) {
  std::unique_ptr<Trainer> trainer =
      MakeTrainer(plan::BuildModel{SaveModule("named", kNamedArguments)}, Loop());
  data::Columns batch = Regression();
  trainer->CheckColumns(batch);
  float first = trainer->ForwardBackward(batch);
  // w starts at zero: the loss is the mean of y², exactly what the model computes.
  EXPECT_NEAR(first, batch[1].values.pow(2).mean().item<float>(), 1e-5);
  trainer->OptimizerStep();
  float last = first;
  for (int step = 0; step < 30; ++step) {
    last = trainer->ForwardBackward(batch);
    trainer->OptimizerStep();
  }
  EXPECT_LT(last, first / 10);
  ModelOutputs outputs = trainer->Evaluate(batch);
  EXPECT_EQ(outputs.loss.dim(), 0);
  // `prediction` is [32, 1], not a metric; `error` is 0-dim.
  ASSERT_EQ(outputs.metrics.size(), 1u);
  EXPECT_EQ(outputs.metrics[0].first, "error");
}

TEST(NamedColumns, ADictInputTakesEveryColumnAndATupleReturnsTheLossFirst) {
  std::unique_ptr<Trainer> trainer = MakeTrainer(plan::BuildModel{SaveModule("dict", kDictInput)}, Loop());
  data::Columns batch = Regression();
  trainer->CheckColumns(batch);
  float first = trainer->ForwardBackward(batch);
  trainer->OptimizerStep();
  EXPECT_LT(trainer->ForwardBackward(batch), first);
}

TEST(NamedColumns, InputsRenameColumns) {
  std::unique_ptr<Trainer> trainer = MakeTrainer(
      plan::BuildModel{SaveModule("renamed", kNamedArguments, {{"features", "x"}, {"target", "y"}})}, Loop());
  trainer->CheckColumns(Regression("features", "target"));
  EXPECT_GT(trainer->ForwardBackward(Regression("features", "target")), 0);
}

TEST(NamedColumns, NamesThatDoNotBindAreErrorsNamingColumnInputAndSignature) {
  const std::string signature = "forward(x: Tensor, y: Optional[Tensor] = None, scale: float = 1.0)";
  std::unique_ptr<Trainer> trainer =
      MakeTrainer(plan::BuildModel{SaveModule("named", kNamedArguments)}, Loop());
  EXPECT_EQ(
      ErrorOf([&] { trainer->CheckColumns(Regression("x", "target")); }),
      "column `target` feeds input `target`, which " + signature +
          " does not take; its inputs are `x`, `y`, `scale`: map the column with `model.inputs = { target: "
          "\"...\" }`, or leave it out of the dataset's `columns`");
  EXPECT_EQ(ErrorOf([&] {
              trainer->CheckColumns({{"y", at::zeros({4, 1})}});
            }),
            "input `x` of " + signature +
                " has no default and no column feeds it; the dataset's columns are `y` (map one with "
                "`model.inputs`)");
  EXPECT_EQ(ErrorOf([&] {
              trainer->CheckColumns({{"x", at::zeros({4, 3})}, {"scale", at::zeros({4})}});
            }),
            "column `scale` feeds input `scale` of " + signature + ", which is `float`, not a tensor");

  std::unique_ptr<Trainer> renamed = MakeTrainer(
      plan::BuildModel{SaveModule("renamed", kNamedArguments, {{"features", "x"}, {"label", "y"}})}, Loop());
  EXPECT_EQ(
      ErrorOf([&] { renamed->CheckColumns(Regression("features", "y")); }),
      "`model.inputs` maps column `label` to input `y`, but the dataset has no column `label`; its columns "
      "are `features`, `y`");
  std::unique_ptr<Trainer> twice =
      MakeTrainer(plan::BuildModel{SaveModule("twice", kNamedArguments, {{"features", "x"}})}, Loop());
  EXPECT_EQ(ErrorOf([&] {
              twice->CheckColumns({{"features", at::zeros({4, 3})}, {"x", at::zeros({4, 3})}});
            }),
            "columns `features` and `x` both feed input `x` of " + signature +
                "; map one of them to another input in `model.inputs`");
}

TEST(NamedColumns, AShapeTheModelRejectsFailsBeforeTheFirstStepNamingTheColumns) {
  std::unique_ptr<Trainer> trainer =
      MakeTrainer(plan::BuildModel{SaveModule("named", kNamedArguments)}, Loop());
  std::string error = ErrorOf([&] {
    trainer->CheckColumns({{"x", at::zeros({2, 5})}, {"y", at::zeros({2, 1})}});
  });
  EXPECT_EQ(
      error.rfind("forward(x: Tensor, y: Optional[Tensor] = None, scale: float = 1.0) fails on the first 2 "
                  "samples (columns `x` float32 [2, 5], `y` float32 [2, 1]): ",
                  0),
      0u)
      << error;
  // The interpreter's own message, not its traceback.
  EXPECT_NE(error.find("cannot be multiplied"), std::string::npos) << error;
  EXPECT_NE(error.find("check each column's shape and dtype"), std::string::npos) << error;
}

TEST(NamedColumns, ForwardMustReturnOneLossValue) {
  const char* no_loss = R"(
def forward(self, x: Tensor) -> Dict[str, Tensor]:
    return {"logits": torch.matmul(x, self.w)}
)";
  const char* outputs = R"(
def forward(self, x: Tensor) -> Tensor:
    return torch.matmul(x, self.w)
)";
  std::unique_ptr<Trainer> dict = MakeTrainer(plan::BuildModel{SaveModule("no_loss", no_loss)}, Loop());
  data::Columns batch{{"x", at::ones({4, 3})}};
  EXPECT_EQ(
      ErrorOf([&] { dict->CheckColumns(batch); }),
      "forward(x: Tensor) returned a dict without `loss` (its keys are `logits`); a model on named columns "
      "returns its loss: a tensor, a dict with `loss`, or a tuple whose first element is the loss");
  std::unique_ptr<Trainer> tensor = MakeTrainer(plan::BuildModel{SaveModule("outputs", outputs)}, Loop());
  EXPECT_EQ(
      ErrorOf([&] { tensor->ForwardBackward(batch); }),
      "forward(x: Tensor) returned a loss of float32 [4, 1], not one floating-point value; a model on named "
      "columns returns its loss: a tensor, a dict with `loss`, or a tuple whose first element is the loss "
      "(reduce it, e.g. with `.mean()`)");
}

TEST(NamedColumns, BuiltInModelsRefuseNamedColumns) {
  std::unique_ptr<Trainer> mlp = MakeTrainer(testing::Mlp(3, {4}, 1), Loop());
  EXPECT_NE(ErrorOf([&] { mlp->CheckColumns(Regression()); }).find("built-in models read one float tensor"),
            std::string::npos);
}

// gather_for_metrics: a batch's loss counts once per sample of the batch, so a short last batch
// weighs less than a full one, and the result is the mean over the held-out samples.
TEST(NamedColumns, EvaluationWeighsEachBatchLossByItsSamples) {
  std::unique_ptr<Trainer> trainer =
      MakeTrainer(plan::BuildModel{SaveModule("named", kNamedArguments)}, Loop());
  data::Dataset held_out;
  held_out.columns = Regression();
  held_out = held_out.Rows(0, 5);
  data::ShardSpec spec;
  spec.batch_size = 2;
  spec.shuffle = false;
  llvm::Expected<data::DataLoader> loader = data::DataLoader::Create(held_out, spec);
  ASSERT_TRUE(static_cast<bool>(loader)) << llvm::toString(loader.takeError());
  std::unique_ptr<distributed::Collectives> group = distributed::MakeSingleProcess();
  distributed::DataOps ops(*group);
  llvm::Expected<EvalResult> result = Evaluate(*trainer, *loader, 5, ops);
  ASSERT_TRUE(static_cast<bool>(result)) << llvm::toString(result.takeError());
  // w = 0: each sample's squared error is y²; batches {0,1}, {2,3}, {4}.
  at::Tensor y2 = held_out.columns[1].values.pow(2).flatten().to(at::kDouble);
  double batch_means[3] = {y2.narrow(0, 0, 2).mean().item<double>(), y2.narrow(0, 2, 2).mean().item<double>(),
                           y2[4].item<double>()};
  double expected = (2 * batch_means[0] + 2 * batch_means[1] + batch_means[2]) / 5;
  EXPECT_NEAR(result->loss, expected, 1e-5);
  EXPECT_NEAR(result->perplexity, std::exp(result->loss), 1e-9);
  ASSERT_EQ(result->metrics.size(), 1u);
  EXPECT_EQ(result->metrics[0].first, "error");
  EXPECT_EQ(result->accuracy, -1);
}

// A token tagger that predicts each id's class mod 3 whatever its weights: its logits are the
// one-hot of input_ids % 3, so the token accuracy is known from the data alone.
const char* kModThreeTagger = R"(
def forward(self, input_ids: Tensor, labels: Tensor) -> Dict[str, Tensor]:
    classes = torch.remainder(input_ids, 3)
    logits = torch.stack([(classes == 0).float(), (classes == 1).float(), (classes == 2).float()], 2)
    return {"loss": self.w.sum() + logits.sum() * 0.0, "logits": logits}
)";

// Six rows of 1 to 7 tokens, `labels` -100 where a token has no label; a batch of one row per
// rank gives the two ranks batches of different lengths.
data::Dataset RaggedTokens() {
  std::vector<int64_t> lengths{1, 5, 2, 7, 3, 1};
  std::vector<int64_t> offsets{0};
  for (int64_t length : lengths) offsets.push_back(offsets.back() + length);
  at::Tensor ids = at::arange(1, offsets.back() + 1, at::kLong);
  // Every third token gets a wrong label, every fifth none.
  at::Tensor labels = at::remainder(ids, 3);
  labels.index_put_({at::arange(0, offsets.back(), 3)},
                    at::remainder(ids.index({at::arange(0, offsets.back(), 3)}) + 1, 3));
  labels.index_put_({at::arange(1, offsets.back(), 5)}, -100);
  data::Dataset dataset;
  at::Tensor offset_tensor = at::tensor(offsets);
  dataset.columns.push_back({"input_ids", ids, offset_tensor});
  dataset.columns.push_back({"labels", labels, offset_tensor});
  dataset.padding.values = {{"labels", -100}};
  dataset.padding.side = data::PadSide::kLeft;
  return dataset;
}

// The share of labelled tokens whose label is their id mod 3.
double ExpectedTokenAccuracy(const data::Dataset& dataset) {
  at::Tensor ids = dataset.columns[0].values;
  at::Tensor labels = dataset.columns[1].values;
  at::Tensor labelled = labels.ne(-100);
  return static_cast<double>(at::remainder(ids, 3).eq(labels).logical_and(labelled).sum().item<int64_t>()) /
         static_cast<double>(labelled.sum().item<int64_t>());
}

double TokenAccuracyOf(const EvalResult& result) {
  for (const auto& [name, value] : result.metrics) {
    if (name == "token_accuracy") return value;
  }
  return -1;
}

// Each rank pads its batch to its own longest row; evaluation pads the per-token predictions
// across processes before gathering them, so 2 ranks count every labelled token once, as 1 does.
TEST(NamedColumns, EvaluationPadsTokenPredictionsAcrossProcesses) {
  plan::TorchScript tagger = SaveModule("tagger", kModThreeTagger);
  const double expected = ExpectedTokenAccuracy(RaggedTokens());
  ASSERT_GT(expected, 0.3);
  ASSERT_LT(expected, 0.9);
  auto evaluate = [&](int world, int rank, distributed::DataOps& ops) {
    std::unique_ptr<Trainer> trainer = MakeTrainer(plan::BuildModel{tagger}, Loop());
    data::ShardSpec spec;
    spec.batch_size = world == 1 ? 2 : 1;
    spec.shuffle = false;
    spec.num_processes = world;
    spec.process_index = rank;
    llvm::Expected<data::DataLoader> loader = data::DataLoader::Create(RaggedTokens(), spec);
    EXPECT_TRUE(static_cast<bool>(loader)) << llvm::toString(loader.takeError());
    llvm::Expected<EvalResult> result = Evaluate(*trainer, *loader, 6, ops);
    EXPECT_TRUE(static_cast<bool>(result)) << llvm::toString(result.takeError());
    return TokenAccuracyOf(*result);
  };
  std::unique_ptr<distributed::Collectives> single = distributed::MakeSingleProcess();
  distributed::DataOps single_ops(*single);
  EXPECT_DOUBLE_EQ(evaluate(1, 0, single_ops), expected);

  int port = launch::PickFreePort();
  std::vector<std::future<double>> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    ranks.push_back(std::async(std::launch::async, [&, rank] {
      std::unique_ptr<distributed::Collectives> group =
          distributed::ConnectGloo(distributed::LoopbackOptions(rank, 2, port, 10000));
      distributed::DataOps ops(*group);
      return evaluate(2, rank, ops);
    }));
  }
  for (auto& rank : ranks) EXPECT_DOUBLE_EQ(rank.get(), expected);
}

// find_executable_batch_size probes a model on named columns with the first rows of every
// column, and leaves no gradient behind.
TEST(NamedColumns, TheBatchSizeSearchProbesNamedColumns) {
  std::unique_ptr<Trainer> trainer =
      MakeTrainer(plan::BuildModel{SaveModule("named", kNamedArguments)}, Loop());
  data::Dataset dataset;
  dataset.columns = Regression();
  std::unique_ptr<distributed::Collectives> group = distributed::MakeSingleProcess();
  Reducer reducer(trainer->NamedParameters(), ReducerOptions{}, *group);
  ::setenv("ACCEL_INJECT_OOM_ABOVE_BATCH", "8", 1);
  BatchSizeSearch found = FindExecutableBatchSize(*trainer, reducer, dataset, 16, false, *group);
  ::unsetenv("ACCEL_INJECT_OOM_ABOVE_BATCH");
  EXPECT_EQ(found.batch_size, 8);
  EXPECT_EQ(found.tried, "16, 14, 12, 10, 9");
  at::Tensor weights = trainer->NamedParameters()[0].second;
  EXPECT_TRUE(!weights.grad().defined() || weights.grad().abs().sum().item<float>() == 0);
  // The probe at size 8 ran forward and backward on the columns: gradients existed to clear.
  EXPECT_GT(trainer->ForwardBackward(dataset.Rows(0, 8).columns), 0);
}

// The plan's token dtypes are rows of the dtype table, and the worker's loaders read them.
TEST(NamedColumns, TokenStreamsOfEveryPlanDtypeOpen) {
  for (const auto& [dtype, name] : plan::EnumInfo<plan::TokenDtype>::kMembers) {
    std::string path = (testing::ScratchDir("tokens") / (std::string(name) + ".bin")).string();
    {
      std::ofstream out(path, std::ios::binary);
      for (int id = 0; id < 9; ++id) {
        if (dtype == plan::TokenDtype::uint16) {
          uint16_t value = static_cast<uint16_t>(id);
          out.write(reinterpret_cast<const char*>(&value), sizeof value);
        } else {
          int32_t value = id;
          out.write(reinterpret_cast<const char*>(&value), sizeof value);
        }
      }
    }
    plan::BuildDataloader spec;
    spec.dataset = plan::TokenStream{path, dtype, 4};
    spec.batch_size = 1;
    spec.shuffle = false;
    llvm::Expected<DataLoaders> loaders = OpenDataLoaders(spec, 1, 0, 1);
    ASSERT_TRUE(static_cast<bool>(loaders)) << name << ": " << llvm::toString(loaders.takeError());
    data::Batch batch = loaders->train.Next();
    EXPECT_TRUE(at::equal(batch.columns[0].values, at::tensor({0, 1, 2, 3}, at::kLong).reshape({1, 4})))
        << name;
    EXPECT_TRUE(at::equal(batch.columns[1].values, at::tensor({1, 2, 3, 4}, at::kLong).reshape({1, 4})))
        << name;
    // The second window is held out.
    EXPECT_EQ(loaders->eval->dataset().size(), 1) << name;
  }
}

}  // namespace
}  // namespace accel::rt::train
