// save_state / load_state of the training state: a round trip through CheckpointStore gives
// back the weights, the optimizer state and the RNG bit for bit, and training continues
// exactly as if it had never stopped.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cstring>
#include <filesystem>
#include <limits>

#include "runtime/checkpoint/checkpoint_store.h"
#include "runtime/checkpoint/dtype.h"
#include "runtime/checkpoint/safetensors.h"
#include "runtime/engine/train_state.h"
#include "runtime/model/trainer.h"
#include "runtime/tensor/scalar_type.h"
#include "runtime/train/checkpointing.h"
#include "runtime/train/data_source.h"
#include "tests/support/plan_builders.h"
#include "tests/unit/scratch_dir.h"

namespace accel::rt::train {
namespace {

plan::BuildModel Model() { return testing::Mlp(4, {8, 6}, 2); }

plan::BuildDataloader Data() {
  plan::BuildDataloader data;
  data.dataset = plan::SyntheticRegression{/*samples=*/40, /*features=*/4, /*outputs=*/2, /*noise=*/0.01,
                                           /*seed=*/3};
  data.batch_size = 8;
  data.shuffle = true;
  data.data_seed = 5;
  return data;
}

data::DataLoader Loader(int rank, int world_size) {
  llvm::Expected<data::DataLoader> loader = OpenDataLoader(Data(), rank, world_size);
  if (!loader) throw std::runtime_error(llvm::toString(loader.takeError()));
  return std::move(*loader);
}

plan::TrainLoop Loop(const std::string& optimizer) {
  plan::TrainLoop loop;
  loop.steps = 10;
  loop.log_every = 1;
  loop.ddp.bucket_cap_mb = 1;
  loop.optimizer = testing::OptimizerNamed(optimizer, 0.05, /*weight_decay=*/0.01);
  return loop;
}

std::unique_ptr<Trainer> Build(const std::string& optimizer, uint64_t seed) {
  at::manual_seed(seed);
  return MakeTrainer(Model(), Loop(optimizer));
}

void Train(Trainer& trainer, data::DataLoader& data, int steps) {
  for (int i = 0; i < steps; ++i) {
    data::Batch batch = data.Next();
    trainer.ForwardBackward(batch.features, batch.targets);
    trainer.OptimizerStep();
  }
}

bool SameBits(const at::Tensor& a, const at::Tensor& b) {
  at::Tensor ca = a.contiguous(), cb = b.contiguous();
  return ca.scalar_type() == cb.scalar_type() && ca.sizes() == cb.sizes() &&
         std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.numel() * ca.element_size()) == 0;
}

void ExpectSameState(const Trainer& a, const Trainer& b) {
  auto pa = a.NamedParameters(), pb = b.NamedParameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_EQ(pa[i].first, pb[i].first);
    EXPECT_TRUE(SameBits(pa[i].second, pb[i].second)) << pa[i].first;
  }
  OptimizerState oa = a.ExportOptimizerState(), ob = b.ExportOptimizerState();
  EXPECT_EQ(oa.type, ob.type);
  EXPECT_EQ(llvm::json::Value(llvm::json::Object(oa.hyperparameters)),
            llvm::json::Value(llvm::json::Object(ob.hyperparameters)));
  ASSERT_EQ(oa.parameters.size(), ob.parameters.size());
  for (size_t i = 0; i < oa.parameters.size(); ++i) {
    EXPECT_EQ(oa.parameters[i].name, ob.parameters[i].name);
    EXPECT_EQ(oa.parameters[i].counters, ob.parameters[i].counters);
    ASSERT_EQ(oa.parameters[i].tensors.size(), ob.parameters[i].tensors.size());
    for (size_t k = 0; k < oa.parameters[i].tensors.size(); ++k) {
      EXPECT_EQ(oa.parameters[i].tensors[k].first, ob.parameters[i].tensors[k].first);
      EXPECT_TRUE(SameBits(oa.parameters[i].tensors[k].second, ob.parameters[i].tensors[k].second))
          << oa.parameters[i].name << "." << oa.parameters[i].tensors[k].first;
    }
  }
}

checkpoint::CheckpointStore Store(const std::string& dir) {
  llvm::Expected<checkpoint::CheckpointStore> store = checkpoint::CheckpointStore::Open({dir, true, 2, 0});
  EXPECT_TRUE(static_cast<bool>(store)) << llvm::toString(store.takeError());
  return std::move(*store);
}

// Trains 3 steps, saves, trains 4 more; a second trainer built from another seed loads the
// checkpoint, trains the same 4 steps, and must end bit-identical, RNG included.
void RoundTrip(const std::string& optimizer) {
  std::string dir = accel::testing::ScratchDir("round_trip_" + optimizer).string();
  std::unique_ptr<Trainer> original = Build(optimizer, 1);
  data::DataLoader data = Loader(0, 1);
  Train(*original, data, 3);

  at::manual_seed(77);
  at::Tensor rng = CaptureRngState();
  Progress progress;
  progress.step = 3;
  progress.samples_seen = 24;
  progress.data_epoch = data.epoch();
  progress.data_position = data.position();
  progress.scheduler_steps = 3;
  {
    llvm::Expected<std::unique_ptr<StateFiles>> files =
        EncodeTrainingState(*original, progress, {rng}, DataIdentitySeed(Data()));
    ASSERT_TRUE(static_cast<bool>(files)) << llvm::toString(files.takeError());
    checkpoint::CheckpointStore store = Store(dir);
    llvm::Expected<checkpoint::SaveResult> saved = store.Save((*files)->files());
    ASSERT_TRUE(static_cast<bool>(saved)) << llvm::toString(saved.takeError());
  }
  at::Tensor expected_draw = at::randn({5});
  Train(*original, data, 4);

  std::unique_ptr<Trainer> resumed = Build(optimizer, 2);
  at::manual_seed(99);  // restoring must replace this
  checkpoint::CheckpointStore store = Store(dir);
  llvm::Expected<checkpoint::VerifiedCheckpoint> loaded = store.LoadLatest();
  ASSERT_TRUE(static_cast<bool>(loaded)) << llvm::toString(loaded.takeError());
  EXPECT_EQ(store.iteration(), 1u);
  llvm::Expected<Progress> restored = RestoreTrainingState(*loaded, *resumed, 0, 1, DataIdentitySeed(Data()));
  ASSERT_TRUE(static_cast<bool>(restored)) << llvm::toString(restored.takeError());
  EXPECT_EQ(restored->step, 3);
  EXPECT_EQ(restored->samples_seen, 24);
  EXPECT_TRUE(SameBits(at::randn({5}), expected_draw));

  EXPECT_EQ(restored->scheduler_steps, 3);
  data::DataLoader resumed_data = Loader(0, 1);
  ASSERT_FALSE(static_cast<bool>(resumed_data.Restore(restored->data_epoch, restored->data_position)));
  Train(*resumed, resumed_data, 4);
  ExpectSameState(*original, *resumed);
}

TEST(TrainState, SgdWithMomentumRoundTripsBitIdentical) { RoundTrip("sgd"); }

TEST(TrainState, AdamWRoundTripsBitIdentical) { RoundTrip("adamw"); }

TEST(TrainState, OptimizerStateIsKeyedByParameterName) {
  std::unique_ptr<Trainer> trainer = Build("adamw", 1);
  data::DataLoader data = Loader(0, 1);
  Train(*trainer, data, 2);
  llvm::Expected<std::unique_ptr<StateFiles>> files =
      EncodeTrainingState(*trainer, {2, 16, 0, 16}, {CaptureRngState(), CaptureRngState()}, 3);
  ASSERT_TRUE(static_cast<bool>(files)) << llvm::toString(files.takeError());
  std::vector<std::string> names;
  for (const checkpoint::CheckpointFile& file : (*files)->files()) names.push_back(file.name);
  EXPECT_EQ(names, (std::vector<std::string>{"model.safetensors", "optimizer.safetensors", "optimizer.json",
                                             "scheduler.json", "dataloader_0.json", "trainer_state.json",
                                             "random_states_0.safetensors", "random_states_1.safetensors"}));
  std::string optimizer;
  for (std::string_view part : (*files)->files()[1].parts) optimizer += part;
  llvm::Expected<checkpoint::SafetensorsFile> parsed =
      checkpoint::SafetensorsFile::Parse(optimizer, "optimizer.safetensors");
  ASSERT_TRUE(static_cast<bool>(parsed)) << llvm::toString(parsed.takeError());
  EXPECT_EQ(parsed->tensors().count("state.0.weight.exp_avg"), 1u);
  EXPECT_EQ(parsed->tensors().count("state.4.bias.exp_avg_sq"), 1u);
  EXPECT_EQ(parsed->tensors().size(), 12u);  // 6 parameters x (exp_avg, exp_avg_sq)
  std::string json;
  for (std::string_view part : (*files)->files()[2].parts) json += part;
  EXPECT_NE(json.find("\"betas\""), std::string::npos);
  EXPECT_NE(json.find("\"step\": 2"), std::string::npos);
}

// Saves a 1-rank checkpoint of `trainer` into a fresh store under `name`; returns it verified.
checkpoint::VerifiedCheckpoint SaveAndLoad(const Trainer& trainer, const std::string& name, int world_size) {
  std::string dir = accel::testing::ScratchDir(name).string();
  std::vector<at::Tensor> rng(world_size, CaptureRngState());
  auto files = EncodeTrainingState(trainer, {1, 8, 0, 8}, rng, 3);
  EXPECT_TRUE(static_cast<bool>(files));
  checkpoint::CheckpointStore store = Store(dir);
  EXPECT_TRUE(static_cast<bool>(store.Save((*files)->files())));
  llvm::Expected<checkpoint::VerifiedCheckpoint> loaded = store.LoadLatest();
  EXPECT_TRUE(static_cast<bool>(loaded));
  return std::move(*loaded);
}

TEST(TrainState, LoadsAnotherWorldSizeButRefusesAnotherSeedOptimizerOrModel) {
  std::unique_ptr<Trainer> sgd = Build("sgd", 1);
  data::DataLoader data = Loader(0, 1);
  Train(*sgd, data, 1);
  // Another world size loads (the worker converts what depends on it), and says so.
  checkpoint::VerifiedCheckpoint two_ranks = SaveAndLoad(*sgd, "two_ranks", 2);
  llvm::Expected<Progress> other_world = RestoreTrainingState(two_ranks, *sgd, 0, 1, 3);
  ASSERT_TRUE(static_cast<bool>(other_world)) << llvm::toString(other_world.takeError());
  EXPECT_EQ(other_world->saved_world_size, 2);

  checkpoint::VerifiedCheckpoint one_rank = SaveAndLoad(*sgd, "one_rank", 1);
  llvm::Expected<Progress> wrong_seed = RestoreTrainingState(one_rank, *sgd, 0, 1, 4);
  ASSERT_FALSE(static_cast<bool>(wrong_seed));
  EXPECT_NE(llvm::toString(wrong_seed.takeError()).find("data seed is 3, this run's is 4"),
            std::string::npos);

  std::unique_ptr<Trainer> adamw = Build("adamw", 1);
  llvm::Expected<Progress> wrong_optimizer = RestoreTrainingState(one_rank, *adamw, 0, 1, 3);
  ASSERT_FALSE(static_cast<bool>(wrong_optimizer));
  EXPECT_NE(llvm::toString(wrong_optimizer.takeError()).find("optimizer is `sgd`, this run's is `adamw`"),
            std::string::npos);

  at::manual_seed(1);
  plan::BuildModel wider = Model();
  std::get<plan::MLP>(wider.model).hidden = {9, 6};
  std::unique_ptr<Trainer> other = MakeTrainer(wider, Loop("sgd"));
  llvm::Expected<Progress> wrong_model = RestoreTrainingState(one_rank, *other, 0, 1, 3);
  ASSERT_FALSE(static_cast<bool>(wrong_model));
  EXPECT_NE(llvm::toString(wrong_model.takeError()).find("has another shape"), std::string::npos);
}

// A trainer_state.json edited to a negative step (and rehashed into the manifest) must not
// resume a run at step -5, nor a loader at a negative position.
TEST(TrainState, RefusesNegativeCountsInTheSavedProgress) {
  std::unique_ptr<Trainer> sgd = Build("sgd", 1);
  data::DataLoader data = Loader(0, 1);
  Train(*sgd, data, 1);
  auto save_with = [&](const std::string& name, Progress progress) {
    std::string dir = accel::testing::ScratchDir(name).string();
    llvm::Expected<std::unique_ptr<StateFiles>> files =
        EncodeTrainingState(*sgd, progress, {CaptureRngState()}, DataIdentitySeed(Data()));
    EXPECT_TRUE(static_cast<bool>(files)) << llvm::toString(files.takeError());
    checkpoint::CheckpointStore store = Store(dir);
    llvm::Expected<checkpoint::SaveResult> saved = store.Save((*files)->files());
    EXPECT_TRUE(static_cast<bool>(saved)) << llvm::toString(saved.takeError());
    llvm::Expected<checkpoint::VerifiedCheckpoint> loaded = store.LoadLatest();
    EXPECT_TRUE(static_cast<bool>(loaded)) << llvm::toString(loaded.takeError());
    return std::move(*loaded);
  };
  Progress good;
  good.step = 0;  // the lowest value is still a valid checkpoint
  llvm::Expected<Progress> zero =
      RestoreTrainingState(save_with("step_zero", good), *sgd, 0, 1, DataIdentitySeed(Data()));
  EXPECT_TRUE(static_cast<bool>(zero)) << llvm::toString(zero.takeError());

  Progress negative_step = good;
  negative_step.step = -5;
  llvm::Expected<Progress> step =
      RestoreTrainingState(save_with("step_negative", negative_step), *sgd, 0, 1, DataIdentitySeed(Data()));
  ASSERT_FALSE(static_cast<bool>(step));
  EXPECT_NE(llvm::toString(step.takeError())
                .find("trainer_state.json: invalid value -5 of `step`: must be at least 0"),
            std::string::npos);

  Progress negative_position = good;
  negative_position.data_position = -1;
  llvm::Expected<Progress> position = RestoreTrainingState(save_with("position_negative", negative_position),
                                                           *sgd, 0, 1, DataIdentitySeed(Data()));
  ASSERT_FALSE(static_cast<bool>(position));
  EXPECT_NE(llvm::toString(position.takeError()).find("dataloader_0.json: invalid value -1 of `position`"),
            std::string::npos);
}

// A checkpoint whose trainer_state.json was edited (`from` → `to`) and rehashed into the
// manifest, as an adversary with write access to the checkpoint folder would leave it.
checkpoint::VerifiedCheckpoint SaveEdited(const Trainer& trainer, const std::string& name, int world_size,
                                          const std::string& from, const std::string& to) {
  std::string dir = accel::testing::ScratchDir(name).string();
  std::vector<at::Tensor> rng(world_size, CaptureRngState());
  auto files = EncodeTrainingState(trainer, {1, 8, 0, 8}, rng, 3);
  EXPECT_TRUE(static_cast<bool>(files));
  std::vector<checkpoint::CheckpointFile> edited = (*files)->files();
  std::string state;
  for (checkpoint::CheckpointFile& file : edited) {
    if (file.name != "trainer_state.json") continue;
    for (std::string_view part : file.parts) state += part;
    size_t at = state.find(from);
    EXPECT_NE(at, std::string::npos) << state;
    if (at != std::string::npos) state.replace(at, from.size(), to);
    file.parts = {state};
  }
  checkpoint::CheckpointStore store = Store(dir);
  EXPECT_TRUE(static_cast<bool>(store.Save(edited)));
  llvm::Expected<checkpoint::VerifiedCheckpoint> loaded = store.LoadLatest();
  EXPECT_TRUE(static_cast<bool>(loaded));
  return std::move(*loaded);
}

// A world size of 2^32 was cut to 0 and used as a divisor (SIGFPE); one that names more ranks
// than left their random state would read a file that is not there.
TEST(TrainState, RefusesAWorldSizeTheCheckpointDoesNotHold) {
  std::unique_ptr<Trainer> sgd = Build("sgd", 1);
  llvm::Expected<Progress> huge =
      RestoreTrainingState(SaveEdited(*sgd, "world_2_32", 1, "\"world_size\": 1", "\"world_size\": 4294967296"),
                           *sgd, 3, 4, 3);
  ASSERT_FALSE(static_cast<bool>(huge));
  EXPECT_NE(llvm::toString(huge.takeError()).find("invalid value 4294967296 of `world_size`: must be at most 1048576"),
            std::string::npos);
  llvm::Expected<Progress> more =
      RestoreTrainingState(SaveEdited(*sgd, "world_3_of_2", 2, "\"world_size\": 2", "\"world_size\": 3"), *sgd,
                           0, 1, 3);
  ASSERT_FALSE(static_cast<bool>(more));
  EXPECT_NE(llvm::toString(more.takeError())
                .find("`world_size` is 3, but the checkpoint holds no random_states_2.safetensors"),
            std::string::npos);
}

// A step edited to 2^63 - 1 resumed at -2^63 after the wrap, trained forever and rotated the
// good checkpoints away: every counter is held to what a run of this plan can reach.
TEST(TrainState, RefusesCountsBeyondWhatThePlanReaches) {
  const ProgressLimits plan{100, 2};
  Progress at_end;
  at_end.step = 100;
  at_end.data_epoch = 200;
  at_end.scheduler_steps = 200;
  at_end.saved_world_size = 1;
  // "" when `progress` fits the plan, else the refusal's text.
  auto refusal = [&plan](const Progress& progress) {
    llvm::Error error = CheckProgressFitsPlan(progress, plan, "ckpt");
    return error ? llvm::toString(std::move(error)) : std::string();
  };
  EXPECT_EQ(refusal(at_end), "");

  Progress wrapped = at_end;
  wrapped.step = std::numeric_limits<int64_t>::max();
  EXPECT_NE(refusal(wrapped).find("ckpt: the checkpoint is at step 9223372036854775807, beyond this plan's "
                                  "100 steps"),
            std::string::npos);

  Progress epoch = at_end;
  epoch.data_epoch = 201;
  EXPECT_NE(refusal(epoch).find("epoch 201 cannot be reached"), std::string::npos);

  // An imported checkpoint counts its position from the first epoch: at most every batch drawn.
  Progress position = at_end;
  position.data_epoch = 0;
  position.data_position = 200;
  EXPECT_EQ(refusal(position), "");
  position.data_position = 201;
  EXPECT_NE(refusal(position).find("position 201 cannot be reached"), std::string::npos);

  // Once per process per step: 4 processes may have counted 400.
  Progress scheduler = at_end;
  scheduler.saved_world_size = 4;
  scheduler.scheduler_steps = 400;
  EXPECT_EQ(refusal(scheduler), "");
  scheduler.scheduler_steps = 401;
  EXPECT_NE(refusal(scheduler).find("`last_epoch` 401 is beyond"), std::string::npos);
}

// Saves a checkpoint of `state` as its trainer_state.json alone, for the rotation tests.
checkpoint::SaveResult SaveState(checkpoint::CheckpointStore& store, const std::string& state) {
  llvm::Expected<checkpoint::SaveResult> saved = store.Save({{"trainer_state.json", {state}}});
  EXPECT_TRUE(static_cast<bool>(saved)) << llvm::toString(saved.takeError());
  return saved ? *saved : checkpoint::SaveResult{};
}

// The worker's rotation guard: with total_limit 2, the save at step 30 would rotate away the two
// oldest; one claims step 100 (beyond anything this run wrote) and one holds no readable step,
// so both stay, each named in a warning, and only the ordinary old one goes.
TEST(TrainState, RotationKeepsCheckpointsBeyondTheRunsNewestStepOrWithoutOne) {
  std::string dir = accel::testing::ScratchDir("rotation_guard").string();
  // What earlier launches left, kept whole (no limit).
  llvm::Expected<checkpoint::CheckpointStore> earlier = checkpoint::CheckpointStore::Open({dir, true, std::nullopt, 0});
  ASSERT_TRUE(static_cast<bool>(earlier));
  SaveState(*earlier, R"({"step": 100})");
  SaveState(*earlier, R"({"no_step": 1})");
  SaveState(*earlier, R"({"step": 20})");
  // This launch: total_limit 2, saving step 30 as checkpoint_3.
  llvm::Expected<checkpoint::CheckpointStore> store = checkpoint::CheckpointStore::Open({dir, true, 2, 3});
  ASSERT_TRUE(static_cast<bool>(store));
  Progress progress;
  progress.step = 30;
  GuardRotation(*store, "", progress);
  checkpoint::SaveResult last = SaveState(*store, R"({"step": 30})");
  const std::string checkpoints = store->checkpoints_dir();
  EXPECT_EQ(last.removed, (std::vector<std::string>{checkpoints + "/checkpoint_2"}));
  ASSERT_EQ(last.warnings.size(), 2u);
  EXPECT_NE(last.warnings[0].find("checkpoint_0: it is at step 100, beyond step 30"), std::string::npos)
      << last.warnings[0];
  EXPECT_NE(last.warnings[1].find("checkpoint_1: " + checkpoints + "/checkpoint_1/trainer_state.json: expected "
                                  "an integer `step`"),
            std::string::npos)
      << last.warnings[1];
}

// The run's own starting point is never rotated away, however its path was written, and the
// guard judges each save by the step the run has reached then, not by the step it resumed at:
// an earlier launch's checkpoint at that very step is an ordinary old one and goes.
TEST(TrainState, RotationKeepsTheResumedCheckpointAndJudgesByTheStepAtEachSave) {
  std::string dir = accel::testing::ScratchDir("rotation_resumed").string();
  llvm::Expected<checkpoint::CheckpointStore> earlier = checkpoint::CheckpointStore::Open({dir, true, std::nullopt, 0});
  ASSERT_TRUE(static_cast<bool>(earlier));
  SaveState(*earlier, R"({"step": 10})");
  SaveState(*earlier, R"({"step": 30})");
  // This launch resumed from checkpoint_0 (named through `.`), with total_limit 1.
  llvm::Expected<checkpoint::CheckpointStore> store = checkpoint::CheckpointStore::Open({dir, true, 1, 2});
  ASSERT_TRUE(static_cast<bool>(store));
  const std::string checkpoints = store->checkpoints_dir();
  Progress progress;
  progress.step = 10;
  GuardRotation(*store, checkpoints + "/./checkpoint_0", progress);
  progress.step = 30;  // trained on to step 30 before this save
  checkpoint::SaveResult last = SaveState(*store, R"({"step": 30})");
  EXPECT_EQ(last.removed, (std::vector<std::string>{checkpoints + "/checkpoint_1"}));
  EXPECT_TRUE(last.warnings.empty()) << last.warnings[0];
  EXPECT_TRUE(std::filesystem::exists(checkpoints + "/checkpoint_0"));
}

TEST(DataLoaderResume, RestoreContinuesTheStreamSampleExactly) {
  data::DataLoader straight = Loader(1, 2);
  data::DataLoader resumed = Loader(1, 2);
  for (int i = 0; i < 5; ++i) straight.Next();  // 20 samples per rank: 3 batches per epoch
  ASSERT_FALSE(static_cast<bool>(resumed.Restore(straight.epoch(), straight.position())));
  for (int i = 0; i < 7; ++i) {
    data::Batch a = straight.Next();
    data::Batch b = resumed.Next();
    EXPECT_TRUE(SameBits(a.features, b.features)) << "batch " << i;
    EXPECT_EQ(a.last_in_epoch, b.last_in_epoch) << "batch " << i;
  }
  llvm::Error outside = resumed.Restore(0, 21);
  EXPECT_TRUE(static_cast<bool>(outside));
  llvm::consumeError(std::move(outside));
}

// Every dtype a checkpoint stores (SafetensorsDtype) goes out under its table name and comes back
// through the table as the same ScalarType with the same bytes, so no second list can disagree.
TEST(TrainState, EveryStoredDtypeRoundTripsThroughTheDtypeTable) {
  std::vector<at::ScalarType> stored;
  for (int i = 0; i < static_cast<int>(at::ScalarType::NumOptions); ++i) {
    auto type = static_cast<at::ScalarType>(i);
    if (SafetensorsDtype(type) != nullptr) stored.push_back(type);
  }
  EXPECT_EQ(stored, (std::vector<at::ScalarType>{at::kByte, at::kLong, at::kFloat, at::kDouble}));
  EXPECT_EQ(SafetensorsDtype(at::kBFloat16), nullptr);  // checkpoints do not store it
  for (at::ScalarType type : stored) {
    SCOPED_TRACE(c10::toString(type));
    at::Tensor written = at::arange(6, at::kDouble).reshape({2, 3}).mul_(37).to(type);
    std::string path = (accel::testing::ScratchDir() / "dtype.safetensors").string();
    std::string_view bytes(static_cast<const char*>(written.data_ptr()),
                           written.numel() * written.element_size());
    ASSERT_FALSE(static_cast<bool>(
        checkpoint::WriteSafetensors(path, {{"t", SafetensorsDtype(type), {2, 3}, bytes}})));
    llvm::Expected<checkpoint::SafetensorsFile> file = checkpoint::SafetensorsFile::Read(path);
    ASSERT_TRUE(static_cast<bool>(file)) << llvm::toString(file.takeError());
    const checkpoint::TensorInfo& info = file->tensors().at("t");
    std::optional<checkpoint::Dtype> dtype = checkpoint::DtypeOfSafetensors(info.dtype);
    ASSERT_TRUE(dtype.has_value()) << info.dtype;
    EXPECT_EQ(tensor::ScalarTypeOf(*dtype), type);
    at::Tensor read = at::empty(info.shape, type);
    ASSERT_EQ(file->Bytes("t").size(), bytes.size());
    std::memcpy(read.data_ptr(), file->Bytes("t").data(), bytes.size());
    EXPECT_TRUE(SameBits(read, written));
  }
}

}  // namespace
}  // namespace accel::rt::train
