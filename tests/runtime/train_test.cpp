#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <fstream>
#include <set>
#include <sstream>

#include "runtime/dist/collectives.h"
#include "runtime/train/gradient_buckets.h"
#include "runtime/train/synthetic_data.h"
#include "runtime/train/trainer.h"
#include "runtime/train/worker.h"

namespace accel::rt::train {
namespace {

// Two ranks, simulated: the "peer" contributes `peer_value` to every element of every bucket.
class FakePeer final : public dist::Collectives {
 public:
  explicit FakePeer(float peer_value) : peer_value_(peer_value) {}
  int rank() const override { return 0; }
  int world_size() const override { return 2; }
  void AllReduce(std::vector<at::Tensor>& tensors, dist::ReduceOp op) override {
    EXPECT_EQ(op, dist::ReduceOp::kSum);
    calls_ += 1;
    buckets_seen_ = tensors.size();
    for (at::Tensor& t : tensors) t.add_(peer_value_);
  }
  void Broadcast(std::vector<at::Tensor>&, int) override {}
  void AllGather(const at::Tensor&, at::Tensor&) override { ADD_FAILURE() << "unexpected all_gather"; }
  void Barrier() override {}
  int calls_ = 0;
  size_t buckets_seen_ = 0;

 private:
  float peer_value_;
};

TEST(GradientBuckets, GroupsParametersUpToTheCapInReverseOrder) {
  std::vector<at::Tensor> params = {at::zeros({100}), at::zeros({100}), at::zeros({300}), at::zeros({10})};
  // Cap 800 B, filled from the last parameter: {p3}, then p2 alone (1200 B), then {p1, p0}.
  GradientBuckets small(params, 800);
  EXPECT_EQ(small.bucket_count(), 3u);  // {p3}, {p2}, {p1, p0}
  GradientBuckets large(params, 1 << 20);
  EXPECT_EQ(large.bucket_count(), 1u);
}

TEST(GradientBuckets, AveragesGradientsWithThePeer) {
  std::vector<at::Tensor> params = {at::zeros({4}).set_requires_grad(true),
                                    at::zeros({2, 3}).set_requires_grad(true)};
  params[0].mutable_grad() = at::full({4}, 1.0f);
  params[1].mutable_grad() = at::arange(6, at::kFloat).view({2, 3});
  GradientBuckets buckets(params, 16);  // one bucket per parameter
  FakePeer peer(3.0f);
  buckets.AverageGradients(peer);
  EXPECT_EQ(peer.calls_, 1);  // all buckets travel in one call
  EXPECT_EQ(peer.buckets_seen_, 2u);
  EXPECT_TRUE(at::allclose(params[0].grad(), at::full({4}, 2.0f)));
  EXPECT_TRUE(at::allclose(params[1].grad(), (at::arange(6, at::kFloat).view({2, 3}) + 3) / 2));
}

plan::BuildDataloader DataSpec(int64_t samples, bool shuffle) {
  return {"synthetic_regression", samples, 4, 1, 0.0, 11, 8, shuffle};
}

TEST(SyntheticRegression, RanksSplitEachEpochDisjointlyAndCoverEverySample) {
  SyntheticRegression rank0(DataSpec(64, true), 0, 2);
  SyntheticRegression rank1(DataSpec(64, true), 1, 2);
  std::vector<int64_t> a = rank0.ShardIndices(3), b = rank1.ShardIndices(3);
  EXPECT_EQ(a.size(), 32u);
  std::set<int64_t> all(a.begin(), a.end());
  all.insert(b.begin(), b.end());
  EXPECT_EQ(all.size(), 64u);
  EXPECT_NE(rank0.ShardIndices(0), rank0.ShardIndices(1));  // shuffled per epoch
}

TEST(SyntheticRegression, UnevenSamplesStillGiveEveryRankTheSameCount) {
  SyntheticRegression rank0(DataSpec(10, false), 0, 3);
  SyntheticRegression rank2(DataSpec(10, false), 2, 3);
  EXPECT_EQ(rank0.ShardIndices(0).size(), 4u);
  EXPECT_EQ(rank2.ShardIndices(0), (std::vector<int64_t>{2, 5, 8, 1}));  // index 11 wraps to 1
}

TEST(SyntheticRegression, DataIsIdenticalOnEveryRankAndReproducible) {
  SyntheticRegression a(DataSpec(32, true), 0, 2), b(DataSpec(32, true), 1, 2);
  EXPECT_TRUE(at::equal(a.features(), b.features()));
  EXPECT_TRUE(at::equal(a.targets(), b.targets()));
  auto [x1, y1] = a.Next();
  at::Tensor first = x1.clone();
  SyntheticRegression again(DataSpec(32, true), 0, 2);
  EXPECT_TRUE(at::equal(again.Next().first, first));
}

TEST(Trainer, LossFallsOnASingleProcess) {
  at::manual_seed(0);
  plan::BuildModel model{"mlp", 4, {16}, 1};
  plan::TrainLoop loop{50, 10, "no", 25, plan::Optimizer{"sgd", 0.05, 0.9, 0, 0, 0, 0}};
  std::unique_ptr<Trainer> trainer = MakeTrainer(model, loop);
  EXPECT_EQ(trainer->NamedParameters().size(), 4u);
  EXPECT_EQ(trainer->NamedParameters()[0].first, "0.weight");
  SyntheticRegression data(DataSpec(256, true), 0, 1);
  float first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    auto [x, y] = data.Next();
    last = trainer->ForwardBackward(x, y);
    if (step == 0) first = last;
    trainer->OptimizerStep();
  }
  EXPECT_LT(last, first * 0.25f) << "first " << first << " last " << last;
}

TEST(Trainer, UnknownOptimizerIsRejected) {
  plan::TrainLoop loop{1, 1, "no", 25, plan::Optimizer{"lion", 0.1, 0, 0, 0, 0, 0}};
  EXPECT_THROW(MakeTrainer({"mlp", 2, {}, 1}, loop), std::invalid_argument);
}

TEST(RunWorker, UsesThePlansBackendAndExplainsOneThisBuildLacks) {
  std::ifstream in(std::string(ACCEL_SOURCE_DIR) + "/tests/golden/plans/quickstart.accel.plan.json");
  std::stringstream text;
  text << in.rdbuf();
  llvm::Expected<plan::Plan> plan = plan::FromJson(text.str(), "quickstart.accel.plan.json");
  ASSERT_TRUE(static_cast<bool>(plan)) << llvm::toString(plan.takeError());
  for (plan::Step& step : plan->steps) {
    if (auto* init = std::get_if<plan::InitProcessGroup>(&step)) init->backend = "nccl";
  }
  if (dist::IsNcclCompiledIn()) GTEST_SKIP() << "this build has NCCL; the CPU-only case does not apply";
  WorkerContext context;
  context.world_size = 2;
  context.output_dir = ::testing::TempDir() + "/run_worker_backend";
  llvm::Expected<RunSummary> summary = RunWorker(*plan, context);
  ASSERT_FALSE(static_cast<bool>(summary));
  std::string error = llvm::toString(summary.takeError());
  EXPECT_NE(error.find("without CUDA and NCCL"), std::string::npos) << error;
}

}  // namespace
}  // namespace accel::rt::train
