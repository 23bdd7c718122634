// The sharded engine (runtime/engine/sharded_engine.h) in a world of one process, against the
// plain trainer: every stage steps the same weights and optimizer state bit for bit, the whole
// state it gathers for checkpoints is the plain trainer's, its shard slices round-trip, and a
// `state_dict_type = sharded` checkpoint written from them resumes the engine and a plain
// trainer alike. On two Gloo ranks (threads): overlapped and bucketed reductions, prefetching
// and persistent units change no bit, nor does activation checkpointing, and stage 3 holds
// gathered only what it should.
// (Multi-rank equivalence with DDP: tests/e2e/sharded_equivalence_test.py.)
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/checkpoint/checkpoint_store.h"
#include "runtime/checkpoint/sharded_state.h"
#include "runtime/distributed/collectives.h"
#include "runtime/engine/sharded_checkpoint.h"
#include "runtime/engine/sharded_engine.h"
#include "runtime/engine/train_state.h"
#include "tests/support/fault_injection.h"
#include "tests/support/gloo_ranks.h"
#include "tests/support/peak_memory.h"
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
  // The final weights need no optimizer state: it stays sharded.
  engine.BeginFullState(FullState::kWeights);
  ExpectSameState(plain->NamedParameters(), {}, engine.NamedParameters(), {});
  EXPECT_THROW(engine.ExportOptimizerState(), std::logic_error);
  engine.EndFullState();
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

// A fresh folder for one test's checkpoints.
std::string FreshFolder(const std::string& name) {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("accel_sharded_ckpt_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(path);
  return path.string();
}

// What SaveShardedCheckpoint does on one rank: the engine's slices, rank 0's files, the finish.
checkpoint::VerifiedCheckpoint SaveSharded(const ShardedEngine& engine, const std::string& project) {
  checkpoint::ProjectOptions options;
  options.project_dir = project;
  llvm::Expected<checkpoint::CheckpointStore> store = checkpoint::CheckpointStore::Open(options);
  EXPECT_TRUE(static_cast<bool>(store));
  std::unique_ptr<RankStateSlices> slices = EncodeRankSlices(engine, /*with_buffers=*/true);
  llvm::Error written = checkpoint::WriteRankSlices(store->ShardedStagingDir(), 0, 1, slices->slices());
  EXPECT_FALSE(static_cast<bool>(written)) << llvm::toString(std::move(written));
  Progress progress;
  progress.step = 2;
  llvm::Expected<std::unique_ptr<StateFiles>> files = EncodeShardedTrainingState(
      engine.ExportOptimizerLayout(), progress, {CaptureRngState()}, /*data_seed=*/9);
  EXPECT_TRUE(static_cast<bool>(files));
  llvm::Expected<checkpoint::SaveResult> saved = store->FinishSharded(1, (*files)->files());
  EXPECT_TRUE(static_cast<bool>(saved)) << llvm::toString(saved.takeError());
  llvm::Expected<checkpoint::VerifiedCheckpoint> verified =
      checkpoint::VerifyCheckpointDirectory(saved->path);
  EXPECT_TRUE(static_cast<bool>(verified)) << llvm::toString(verified.takeError());
  return std::move(*verified);
}

TEST_P(ShardedEngineStages, ShardedCheckpointNamesTensorsAsAFullCheckpoint) {
  std::unique_ptr<distributed::Collectives> world = distributed::MakeSingleProcess();
  ShardedEngine trained(Plain(GetParam()), Loop(GetParam()), 1, *world);
  Train(trained, &trained, 2);
  std::unique_ptr<RankStateSlices> slices = EncodeRankSlices(trained, /*with_buffers=*/true);
  std::vector<std::string> model, optimizer;
  for (const checkpoint::TensorSlice& slice : slices->slices().model) model.push_back(slice.name);
  for (const checkpoint::TensorSlice& slice : slices->slices().optimizer) optimizer.push_back(slice.name);
  std::vector<std::string> expected_model, expected_optimizer;
  for (const auto& [name, tensor] : trained.NamedParameters()) {
    expected_model.push_back(name);
    for (const char* key : {"exp_avg", "exp_avg_sq"})
      expected_optimizer.push_back("state." + name + "." + key);
  }
  EXPECT_EQ(model, expected_model);
  EXPECT_EQ(optimizer, expected_optimizer);
  // The layout optimizer.json records: a full export's names, hyper-parameters and counters.
  trained.BeginFullState();
  OptimizerState full = trained.ExportOptimizerState();
  trained.EndFullState();
  OptimizerState layout = trained.ExportOptimizerLayout();
  ASSERT_EQ(layout.parameters.size(), full.parameters.size());
  EXPECT_TRUE(layout.hyperparameters == full.hyperparameters);
  for (size_t i = 0; i < full.parameters.size(); ++i) {
    EXPECT_EQ(layout.parameters[i].name, full.parameters[i].name);
    EXPECT_EQ(layout.parameters[i].counters, full.parameters[i].counters);
    EXPECT_TRUE(layout.parameters[i].tensors.empty());
  }
}

TEST_P(ShardedEngineStages, ShardedCheckpointResumesTheEngineAndAPlainTrainer) {
  std::unique_ptr<distributed::Collectives> world = distributed::MakeSingleProcess();
  ShardedEngine trained(Plain(GetParam()), Loop(GetParam()), 1, *world);
  Train(trained, &trained, 2);
  checkpoint::VerifiedCheckpoint saved =
      SaveSharded(trained, FreshFolder("resume" + std::to_string(GetParam())));
  EXPECT_EQ(saved.files.count("model.safetensors"), 0u);
  trained.BeginFullState();

  // The engine: each rank's own ranges, after the checks.
  at::manual_seed(99);  // other initial weights
  std::unique_ptr<Trainer> model = MakeTrainer(Model(), Loop(GetParam()));
  std::optional<ShardedResume> resume;
  llvm::Expected<Progress> progress = RestoreTrainingState(saved, *model, 0, 1, 9, &resume);
  ASSERT_TRUE(static_cast<bool>(progress)) << llvm::toString(progress.takeError());
  EXPECT_EQ(progress->step, 2);
  ASSERT_TRUE(resume.has_value());
  EXPECT_EQ(resume->state_keys, (std::vector<std::string>{"exp_avg", "exp_avg_sq"}));
  ShardedEngine fresh(std::move(model), Loop(GetParam()), 1, *world);
  ImportShardedResume(*resume, fresh);
  fresh.BeginFullState();
  ExpectSameState(trained.NamedParameters(), trained.ExportOptimizerState(), fresh.NamedParameters(),
                  fresh.ExportOptimizerState());
  fresh.EndFullState();

  // A plain (DDP) trainer: every tensor whole.
  at::manual_seed(98);
  std::unique_ptr<Trainer> plain = MakeTrainer(Model(), Loop(0));
  llvm::Expected<Progress> whole = RestoreTrainingState(saved, *plain, 0, 1, 9);
  ASSERT_TRUE(static_cast<bool>(whole)) << llvm::toString(whole.takeError());
  ExpectSameState(trained.NamedParameters(), trained.ExportOptimizerState(), plain->NamedParameters(),
                  plain->ExportOptimizerState());

  // The mutation self-check: a wrong slice offset on load does not go unnoticed.
  ::setenv("ACCEL_TEST_FAULT", "slice_offset", 1);
  std::unique_ptr<Trainer> again = MakeTrainer(Model(), Loop(GetParam()));
  std::optional<ShardedResume> resume_again;
  ASSERT_TRUE(static_cast<bool>(RestoreTrainingState(saved, *again, 0, 1, 9, &resume_again)));
  ShardedEngine broken(std::move(again), Loop(GetParam()), 1, *world);
  ::unsetenv("ACCEL_TEST_FAULT");
  ImportShardedResume(*resume_again, broken);
  broken.BeginFullState();
  bool same = true;
  std::vector<std::pair<std::string, at::Tensor>> expected = trained.NamedParameters();
  std::vector<std::pair<std::string, at::Tensor>> got = broken.NamedParameters();
  for (size_t i = 0; i < expected.size(); ++i) same = same && SameBits(expected[i].second, got[i].second);
  EXPECT_FALSE(same) << "slice_offset left the weights as they were: the comparison cannot catch it";
  broken.EndFullState();
}

TEST(ShardedCheckpoint, RefusesAnotherModelNamingTheTensor) {
  std::unique_ptr<distributed::Collectives> world = distributed::MakeSingleProcess();
  ShardedEngine trained(Plain(3), Loop(3), 1, *world);
  Train(trained, &trained, 1);
  checkpoint::VerifiedCheckpoint saved = SaveSharded(trained, FreshFolder("refuse"));
  plan::BuildModel other;
  other.model = plan::MLP{/*inputs=*/4, /*hidden=*/{5, 4}, /*outputs=*/2};
  std::unique_ptr<Trainer> model = MakeTrainer(other, Loop(3));
  std::optional<ShardedResume> resume;
  llvm::Expected<Progress> progress = RestoreTrainingState(saved, *model, 0, 1, 9, &resume);
  ASSERT_FALSE(static_cast<bool>(progress));
  std::string message = llvm::toString(progress.takeError());
  EXPECT_NE(message.find("sharded_state.index.json: model tensor"), std::string::npos) << message;
  EXPECT_NE(message.find("is F32 3x5, this model's is F32 4x5"), std::string::npos) << message;
  EXPECT_FALSE(resume.has_value());
  // Another data seed is refused before anything is read.
  llvm::Expected<Progress> seed =
      RestoreTrainingState(saved, *MakeTrainer(Model(), Loop(3)), 0, 1, 8, &resume);
  ASSERT_FALSE(static_cast<bool>(seed));
  EXPECT_NE(llvm::toString(seed.takeError()).find("data seed is 9, this run's is 8"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Stages, ShardedEngineStages, ::testing::Values(1, 2, 3));

// The ranks are threads: the global generator that seeds the model is shared.
// A model built as shapes only draws from it too.
std::unique_ptr<Trainer> SeededTrainer(const plan::TrainLoop& loop, uint64_t seed = 7,
                                       InitialWeights weights = InitialWeights::kValues) {
  static std::mutex seeding;
  std::lock_guard<std::mutex> lock(seeding);
  at::manual_seed(seed);
  return MakeTrainer(Model(), loop, {}, weights);
}

// Each rank trains on its own batches; returns its final parameters. `model`: the rank's
// trainer (SeededTrainer's by default); `initial`: the engine's InitialWeights.
std::vector<at::Tensor> TrainOnRank(int rank, distributed::Collectives& world, const plan::TrainLoop& loop,
                                    std::unique_ptr<Trainer> model = nullptr,
                                    InitialWeights initial = InitialWeights::kValues) {
  ShardedEngine engine(model ? std::move(model) : SeededTrainer(loop), loop, 2, world, true, initial);
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

// Recomputed blocks run again in backward, after stage 3 has freed and regathered their units:
// the same gradients, so the same weights.
TEST(ShardedEngineOnTwoRanks, ActivationCheckpointingChangesNoBit) {
  for (int64_t stage : {1, 2, 3}) {
    plan::TrainLoop kept = Loop(stage);
    plan::TrainLoop recomputed = Loop(stage);
    recomputed.sharding.activation_checkpointing = true;
    distributed::RunGlooRanks(2, [&](int rank, std::unique_ptr<distributed::Collectives>& world) {
      std::vector<at::Tensor> expected = TrainOnRank(rank, *world, kept);
      std::vector<at::Tensor> weights = TrainOnRank(rank, *world, recomputed);
      ASSERT_EQ(weights.size(), expected.size());
      for (size_t i = 0; i < weights.size(); ++i)
        EXPECT_TRUE(SameBits(weights[i], expected[i]))
            << "stage " << stage << ", parameter " << i << ", rank " << rank;
    });
  }
}

// cpu_ram_efficient_loading: rank 1's own weights (other values here) are never read; it
// trains on rank 0's, received whole (stages 1-2, a persistent unit) or as its shards (stage
// 3), exactly as when every rank built rank 0's. A shard from another offset, or a unit left
// as rank 1 built it, changes the weights.
TEST(ShardedEngineOnTwoRanks, RankZerosWeightsReplaceWhatTheOtherRanksBuilt) {
  for (int64_t stage : {1, 2, 3}) {
    for (int64_t persistence : {0, 10}) {
      plan::TrainLoop loop = Loop(stage);
      loop.sharding.param_persistence_threshold = persistence;  // 10: the last Linear stays whole
      distributed::RunGlooRanks(2, [&](int rank, std::unique_ptr<distributed::Collectives>& world) {
        std::vector<at::Tensor> expected = TrainOnRank(rank, *world, loop);
        std::unique_ptr<Trainer> own = SeededTrainer(loop, rank == 0 ? 7 : 99);
        std::vector<at::Tensor> weights =
            TrainOnRank(rank, *world, loop, std::move(own), InitialWeights::kShapesOnly);
        ASSERT_EQ(weights.size(), expected.size());
        for (size_t i = 0; i < weights.size(); ++i)
          EXPECT_TRUE(SameBits(weights[i], expected[i]))
              << "stage " << stage << ", persistence " << persistence << ", parameter " << i << ", rank "
              << rank;
      });
    }
  }
}

// The same with rank 1's model built as shapes only, as the worker builds it.
TEST(ShardedEngineOnTwoRanks, ARankThatBuiltShapesOnlyTrainsOnRankZerosWeights) {
  for (int64_t stage : {1, 2, 3}) {
    plan::TrainLoop loop = Loop(stage);
    distributed::RunGlooRanks(2, [&](int rank, std::unique_ptr<distributed::Collectives>& world) {
      std::vector<at::Tensor> expected = TrainOnRank(rank, *world, loop);
      std::unique_ptr<Trainer> own =
          SeededTrainer(loop, 7, rank == 0 ? InitialWeights::kValues : InitialWeights::kShapesOnly);
      if (rank == 1) {
        for (const auto& [name, tensor] : own->NamedParameters())
          EXPECT_EQ(tensor.storage().nbytes(), 0u) << name;
      }
      std::vector<at::Tensor> weights =
          TrainOnRank(rank, *world, loop, std::move(own), InitialWeights::kShapesOnly);
      ASSERT_EQ(weights.size(), expected.size());
      for (size_t i = 0; i < weights.size(); ++i)
        EXPECT_TRUE(SameBits(weights[i], expected[i]))
            << "stage " << stage << ", parameter " << i << ", rank " << rank;
    });
  }
}

// At stage 3 a rank other than 0 never holds the whole model: building its shapes holds one
// Linear at a time, and the engine hands it its shards alone. Building the values and taking
// the shard of them holds the whole model at least.
TEST(ShardedEngineOnTwoRanks, AtStageThreeOnlyRankZeroEverHoldsTheWholeModel) {
  plan::BuildModel model;
  model.model = plan::MLP{/*inputs=*/32, /*hidden=*/{256, 256, 256}, /*outputs=*/4};
  const int64_t model_bytes = (32 * 256 + 256 + 2 * (256 * 256 + 256) + 256 * 4 + 4) * 4;
  plan::TrainLoop loop = Loop(3);
  std::map<InitialWeights, int64_t> peaks;
  for (InitialWeights weights : {InitialWeights::kValues, InitialWeights::kShapesOnly}) {
    distributed::RunGlooRanks(2, [&](int rank, std::unique_ptr<distributed::Collectives>& world) {
      auto build = [&] {
        std::unique_ptr<Trainer> trainer =
            MakeTrainer(model, loop, {}, rank == 0 ? InitialWeights::kValues : weights);
        ShardedEngine engine(std::move(trainer), loop, 2, *world, false, weights);
      };
      if (rank == 0) {
        build();
      } else {
        peaks[weights] = testing::PeakAllocatedBytes(build);
      }
    });
  }
  EXPECT_GE(peaks[InitialWeights::kValues], model_bytes);
  EXPECT_LT(peaks[InitialWeights::kShapesOnly], model_bytes * 6 / 10)
      << "the model is " << model_bytes << " bytes; rank 1 held " << peaks[InitialWeights::kShapesOnly];
}

// Whether parameter `index`'s gathered storage is there.
bool Held(const ShardedEngine& engine, size_t index) {
  return engine.NamedParameters().at(index).second.storage().nbytes() > 0;
}

// A full checkpoint for the first rank only (FSDP's rank0_only): rank 0 reads exactly what
// every rank would; rank 1 takes part in the gathers and holds neither the parameters (stage 3)
// nor the optimizer state.
TEST(ShardedEngineOnTwoRanks, AFullStateForTheFirstRankOnlyLeavesTheOthersHoldingNothing) {
  for (int64_t stage : {1, 2, 3}) {
    plan::TrainLoop loop = Loop(stage);
    loop.sharding.param_persistence_threshold = 10;  // the last Linear stays gathered
    distributed::RunGlooRanks(2, [&](int rank, std::unique_ptr<distributed::Collectives>& world) {
      ShardedEngine engine(SeededTrainer(loop), loop, 2, *world);
      engine.PrepareForBackward(true);
      engine.ForwardBackward(at::cos(at::arange(32, at::kFloat).view({8, 4}) * (0.3 + rank)),
                             at::sin(at::arange(16, at::kFloat).view({8, 2})), 1.0);
      engine.Finalize();
      engine.OptimizerStep(false);
      engine.BeginFullState();
      std::vector<std::pair<std::string, at::Tensor>> weights;
      for (const auto& [name, tensor] : engine.NamedParameters())
        weights.emplace_back(name, tensor.detach().clone());
      OptimizerState state = engine.ExportOptimizerState();
      engine.EndFullState();

      engine.BeginFullState(FullState::kWeightsAndOptimizer, FullStateReaders::kFirstRanks);
      if (rank == 0) {
        ExpectSameState(weights, state, engine.NamedParameters(), engine.ExportOptimizerState());
      } else {
        EXPECT_THROW(engine.ExportOptimizerState(), std::logic_error) << "stage " << stage;
        for (size_t i = 0; i < 6; ++i)
          EXPECT_EQ(Held(engine, i), stage < 3 || i >= 4) << "stage " << stage << ", parameter " << i;
      }
      engine.EndFullState();
      // Training goes on as before.
      for (size_t i = 0; i < 6; ++i)
        EXPECT_EQ(Held(engine, i), stage < 3 || i >= 4) << "after, parameter " << i;
    });
  }
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

// reshard_after_forward = false keeps each block's units gathered from forward to backward: a
// stage-3 step gathers fewer times than one that frees them after forward and gathers them again
// (the same numbers either way, so only the traffic shows it).
TEST(ShardedEngineOnTwoRanks, KeepingUnitsAfterForwardSavesTheirSecondGather) {
  std::map<bool, int> gathers;
  for (bool reshard : {true, false}) {
    plan::TrainLoop loop = Loop(3);
    loop.sharding.reshard_after_forward = reshard;
    loop.sharding.backward_prefetch = plan::BackwardPrefetch::none;
    std::mutex counted;
    distributed::RunGlooRanks(2, [&](int rank, std::unique_ptr<distributed::Collectives>& world) {
      auto counting = std::make_unique<distributed::FaultInjectingCollectives>(std::move(world),
                                                                               std::vector<distributed::Fault>{});
      {
        ShardedEngine engine(SeededTrainer(loop), loop, 2, *counting);
        at::Tensor features = at::cos(at::arange(32, at::kFloat).view({8, 4}) * (0.3 + rank));
        at::Tensor targets = at::sin(at::arange(16, at::kFloat).view({8, 2}));
        int before = counting->calls("all_gather");
        engine.PrepareForBackward(true);
        engine.ForwardBackward(features, targets, 1.0);
        engine.Finalize();
        int step = counting->calls("all_gather") - before;
        std::lock_guard<std::mutex> lock(counted);
        if (rank == 0) gathers[reshard] = step;
      }
      world = std::move(counting);
    });
  }
  EXPECT_LT(gathers[false], gathers[true]) << "gathers in a step: " << gathers[false] << " kept, "
                                           << gathers[true] << " resharded";
}

}  // namespace
}  // namespace accel::rt::train
