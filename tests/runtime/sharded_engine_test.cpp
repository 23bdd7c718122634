// The sharded engine (runtime/train/sharded_engine.h) in a world of one process, against the
// plain trainer: every stage steps the same weights and optimizer state bit for bit, the whole
// state it gathers for checkpoints is the plain trainer's, and its shard slices round-trip. On
// two Gloo ranks (threads): overlapped and bucketed reductions, prefetching and persistent units
// change no bit, and stage 3 holds gathered only what it should. (Multi-rank equivalence with
// DDP: tests/e2e/sharded_equivalence_test.py.)
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "runtime/distributed/collectives.h"
#include "runtime/train/sharded_engine.h"
#include "tests/support/gloo_ranks.h"
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

// The ranks are threads: the global generator that seeds the model is shared.
std::unique_ptr<Trainer> SeededTrainer(const plan::TrainLoop& loop) {
  static std::mutex seeding;
  std::lock_guard<std::mutex> lock(seeding);
  at::manual_seed(7);
  return MakeTrainer(Model(), loop);
}

// Each rank trains on its own batches; returns its final parameters.
std::vector<at::Tensor> TrainOnRank(int rank, distributed::Collectives& world, const plan::TrainLoop& loop) {
  ShardedEngine engine(SeededTrainer(loop), loop, 2, world);
  for (int step = 0; step < 3; ++step) {
    at::Tensor features = at::cos(at::arange(32, at::kFloat).view({8, 4}) * (0.3 + step + rank));
    at::Tensor targets = at::sin(at::arange(16, at::kFloat).view({8, 2}) + step - rank);
    engine.PrepareForBackward(true);
    engine.ForwardBackward(features, targets, 1.0);
    engine.Finalize();
    engine.ClipGradNorm(1e6);
    engine.OptimizerStep(false);
  }
  engine.BeginFullState();
  std::vector<at::Tensor> weights;
  for (const auto& [name, tensor] : engine.NamedParameters()) weights.push_back(tensor.detach().clone());
  engine.EndFullState();
  return weights;
}

TEST(ShardedEngineOnTwoRanks, OverlapBucketsPrefetchAndPersistenceChangeNoBit) {
  for (int64_t stage : {1, 2, 3}) {
    plan::TrainLoop plain = Loop(stage);
    plain.sharding.overlap_comm = false;
    plain.sharding.reduce_bucket_size = 1;  // one collective per unit
    plain.sharding.allgather_bucket_size = 1;
    plain.sharding.backward_prefetch = plan::BackwardPrefetch::none;
    plan::TrainLoop busy = Loop(stage);
    busy.sharding.overlap_comm = true;
    busy.sharding.reduce_bucket_size = 40;  // the two small units share a bucket
    busy.sharding.allgather_bucket_size = 1000;
    busy.sharding.forward_prefetch = true;
    busy.sharding.backward_prefetch = plan::BackwardPrefetch::backward_pre;
    busy.sharding.param_persistence_threshold = 10;  // the last Linear (3 x 2) stays gathered
    distributed::RunGlooRanks(2, [&](int rank, std::unique_ptr<distributed::Collectives>& world) {
      std::vector<at::Tensor> expected = TrainOnRank(rank, *world, plain);
      std::vector<at::Tensor> weights = TrainOnRank(rank, *world, busy);
      ASSERT_EQ(weights.size(), expected.size());
      for (size_t i = 0; i < weights.size(); ++i)
        EXPECT_TRUE(SameBits(weights[i], expected[i]))
            << "stage " << stage << ", parameter " << i << ", rank " << rank;
    });
  }
}

// Whether parameter `index`'s gathered storage is there.
bool Held(const ShardedEngine& engine, size_t index) {
  return engine.NamedParameters().at(index).second.storage().nbytes() > 0;
}

TEST(ShardedEngineOnTwoRanks, StageThreeFreesUnitsInBackwardAndKeepsPersistentOnes) {
  plan::TrainLoop loop = Loop(3);
  loop.sharding.param_persistence_threshold = 10;  // parameters 4 and 5 (the last Linear, 3 x 2)
  distributed::RunGlooRanks(2, [&](int rank, std::unique_ptr<distributed::Collectives>& world) {
    ShardedEngine engine(SeededTrainer(loop), loop, 2, *world);
    ASSERT_EQ(engine.NamedParameters().size(), 6u);
    auto expect_held = [&](const std::vector<bool>& held, const char* when) {
      for (size_t i = 0; i < held.size(); ++i)
        EXPECT_EQ(Held(engine, i), held[i]) << when << ", parameter " << i;
    };
    expect_held({false, false, false, false, true, true}, "at start");
    at::Tensor features = at::cos(at::arange(32, at::kFloat).view({8, 4}) * (0.3 + rank));
    at::Tensor targets = at::sin(at::arange(16, at::kFloat).view({8, 2}));
    engine.PrepareForBackward(true);
    engine.ForwardBackward(features, targets, 1.0);
    // Backward is over: every unit whose gradients are complete was freed then, before Finalize.
    expect_held({false, false, false, false, true, true}, "after backward");
    engine.Finalize();
    engine.OptimizerStep(false);
    expect_held({false, false, false, false, true, true}, "after the step");
    // The persistent unit holds the stepped weights, as a gathered one would.
    engine.BeginFullState();
    std::vector<at::Tensor> gathered;
    for (const auto& [name, tensor] : engine.NamedParameters()) gathered.push_back(tensor.detach().clone());
    engine.EndFullState();
    expect_held({false, false, false, false, true, true}, "after a save");
    EXPECT_TRUE(SameBits(engine.NamedParameters()[4].second, gathered[4]));
  });
}

}  // namespace
}  // namespace accel::rt::train
