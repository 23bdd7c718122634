// The sharded engine (runtime/train/sharded_engine.h) in a world of one process, against the
// plain trainer: every stage steps the same weights and optimizer state bit for bit, the whole
// state it gathers for checkpoints is the plain trainer's, and its shard slices round-trip.
// (Multi-rank equivalence: tests/e2e/sharded_equivalence_test.py.)
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>

#include "runtime/distributed/collectives.h"
#include "runtime/train/sharded_engine.h"
#include "tests/support/plan_builders.h"

namespace accel::rt::train {
namespace {

plan::BuildModel Model() {
  plan::BuildModel model;
  model.model = plan::MLP{/*inputs=*/4, /*hidden=*/{5, 3}, /*outputs=*/2};
  return model;
}

plan::TrainLoop Loop(int64_t stage) {
  plan::TrainLoop loop;
  loop.optimizer = testing::OptimizerNamed("adamw", 0.05, /*weight_decay=*/0.01);
  loop.sharding.stage = stage;
  loop.sharding.wrap_policy = plan::WrapPolicy::transformer_based;
  loop.sharding.transformer_layer_cls_to_wrap = {"Linear"};
  return loop;
}

std::unique_ptr<Trainer> Plain(int64_t stage) {
  at::manual_seed(7);
  return MakeTrainer(Model(), Loop(stage));
}

// The gradient norms before each step. Clipping at a bound they stay under keeps the runs
// bit-identical (the engine sums the shards' squares in double, clip_grad_norm_ in float).
std::vector<double> Train(Trainer& trainer, GradientSync* sync, int steps) {
  std::vector<double> norms;
  for (int step = 0; step < steps; ++step) {
    at::Tensor features = at::cos(at::arange(32, at::kFloat).view({8, 4}) * (0.3 + step));
    at::Tensor targets = at::sin(at::arange(16, at::kFloat).view({8, 2}) + step);
    if (sync != nullptr) sync->PrepareForBackward(true);
    trainer.ForwardBackward(features, targets, 1.0);
    if (sync != nullptr) sync->Finalize();
    norms.push_back(trainer.ClipGradNorm(1e6));
    trainer.OptimizerStep(false);
  }
  return norms;
}

bool SameBits(const at::Tensor& a, const at::Tensor& b) {
  at::Tensor ca = a.contiguous(), cb = b.contiguous();
  return ca.sizes() == cb.sizes() &&
         std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.numel() * sizeof(float)) == 0;
}

void ExpectSameState(const std::vector<std::pair<std::string, at::Tensor>>& a, const OptimizerState& state_a,
                     const std::vector<std::pair<std::string, at::Tensor>>& b,
                     const OptimizerState& state_b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    EXPECT_TRUE(SameBits(a[i].second, b[i].second)) << a[i].first;
  }
  ASSERT_EQ(state_a.parameters.size(), state_b.parameters.size());
  for (size_t i = 0; i < state_a.parameters.size(); ++i) {
    const auto& pa = state_a.parameters[i];
    const auto& pb = state_b.parameters[i];
    EXPECT_EQ(pa.name, pb.name);
    EXPECT_EQ(pa.counters, pb.counters) << pa.name;
    ASSERT_EQ(pa.tensors.size(), pb.tensors.size()) << pa.name;
    for (size_t k = 0; k < pa.tensors.size(); ++k) {
      EXPECT_EQ(pa.tensors[k].first, pb.tensors[k].first);
      EXPECT_TRUE(SameBits(pa.tensors[k].second, pb.tensors[k].second))
          << pa.name << " " << pa.tensors[k].first;
    }
  }
}

class ShardedEngineStages : public ::testing::TestWithParam<int64_t> {};

TEST_P(ShardedEngineStages, StepsAndGathersWhatThePlainTrainerDoes) {
  std::unique_ptr<Trainer> plain = Plain(0);
  std::vector<double> plain_norms = Train(*plain, nullptr, 3);
  std::unique_ptr<distributed::Collectives> world = distributed::MakeSingleProcess();
  ShardedEngine engine(Plain(GetParam()), Loop(GetParam()), 1, *world);
  EXPECT_EQ(engine.units().size(), 3u);  // one per Linear
  std::vector<double> norms = Train(engine, &engine, 3);
  for (size_t i = 0; i < norms.size(); ++i) EXPECT_NEAR(norms[i], plain_norms[i], 1e-5 * plain_norms[i]);
  engine.BeginFullState();
  ExpectSameState(plain->NamedParameters(), plain->ExportOptimizerState(), engine.NamedParameters(),
                  engine.ExportOptimizerState());
  engine.EndFullState();
  EXPECT_THROW(engine.ExportOptimizerState(), std::logic_error);
}

TEST_P(ShardedEngineStages, ShardSlicesRoundTrip) {
  std::unique_ptr<distributed::Collectives> world = distributed::MakeSingleProcess();
  ShardedEngine trained(Plain(GetParam()), Loop(GetParam()), 1, *world);
  Train(trained, &trained, 2);
  std::map<std::string, ShardedEngine::ShardSlice> slices;
  for (ShardedEngine::ShardSlice& slice : trained.ExportShardSlices()) {
    // One rank holds every element.
    EXPECT_EQ(slice.start, 0);
    EXPECT_EQ(slice.end, slice.data.numel());
    slices.emplace(slice.name, std::move(slice));
  }
  EXPECT_EQ(slices.size(), 6u);
  at::manual_seed(99);  // other initial weights
  ShardedEngine fresh(MakeTrainer(Model(), Loop(GetParam())), Loop(GetParam()), 1, *world);
  fresh.ImportShardSlices(
      [&](const std::string& name, const std::string& key, int64_t start, int64_t end) {
        const ShardedEngine::ShardSlice& slice = slices.at(name);
        if (key.empty()) return slice.data.narrow(0, start, end - start);
        for (const auto& [state_key, tensor] : slice.state)
          if (state_key == key) return tensor.narrow(0, start, end - start);
        throw std::out_of_range(key);
      },
      {"exp_avg", "exp_avg_sq"}, slices.begin()->second.counters);
  trained.BeginFullState();
  fresh.BeginFullState();
  ExpectSameState(trained.NamedParameters(), trained.ExportOptimizerState(), fresh.NamedParameters(),
                  fresh.ExportOptimizerState());
}

INSTANTIATE_TEST_SUITE_P(Stages, ShardedEngineStages, ::testing::Values(1, 2, 3));

}  // namespace
}  // namespace accel::rt::train
