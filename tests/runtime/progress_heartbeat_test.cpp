// A rank at its own long work says so: loading a large CSV file, verifying a checkpoint, saving
// and restoring the training state and building the model repeat the work last named on the
// progress pipe, so the launcher's watchdog does not take slow work for a stalled rank (a
// dataset, a save or a model load that took longer than the collective timeout used to stop
// the job). Its own binary: the pipe is read from ACCEL_PROGRESS_FD once per process.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "runtime/checkpoint/checkpoint_dir.h"
#include "runtime/checkpoint/checkpoint_store.h"
#include "runtime/data/dataset.h"
#include "runtime/engine/train_state.h"
#include "runtime/model/trainer.h"
#include "runtime/support/progress.h"
#include "tests/support/plan_builders.h"
#include "tests/unit/scratch_dir.h"

namespace accel::rt {
namespace {

// The pipe the launcher would read: set up once, before the first word.
int ProgressPipe() {
  static const int read_end = [] {
    int fds[2];
    if (::pipe(fds) != 0) return -1;
    ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
    ::setenv(progress::kEnvFd, std::to_string(fds[1]).c_str(), 1);
    return fds[0];
  }();
  return read_end;
}

// What the pipe holds now.
std::string Said() {
  char buffer[4096];
  ssize_t got = ::read(ProgressPipe(), buffer, sizeof buffer);
  return got > 0 ? std::string(buffer, static_cast<size_t>(got)) : "";
}

TEST(ProgressHeartbeat, LoadingACsvFileSaysTheRankIsAtWork) {
  ASSERT_GE(ProgressPipe(), 0);
  progress::Working("building the model and the data loaders");

  const std::string path = (std::filesystem::temp_directory_path() / "accel_heartbeat_test.csv").string();
  {
    std::ofstream csv(path);
    csv << "a,b,y\n";
    for (int row = 0; row < 10000; ++row) csv << row << "," << row * 2 << "," << row % 3 << "\n";
  }
  ASSERT_NE(Said(), "");  // the Working line
  // The heartbeat says at most one line a second.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  llvm::Expected<data::Dataset> dataset = data::LoadCsv(path, {}, {"y"}, data::TargetKind::kRegression);
  ASSERT_TRUE(static_cast<bool>(dataset)) << llvm::toString(dataset.takeError());
  EXPECT_EQ(Said(), "S building the model and the data loaders\n") << "the loader said nothing in 10,000 rows";
  std::filesystem::remove(path);
}

// A rank waiting for its peers' share of a save names that wait while it lasts, then the work
// it was at before, so a later silence is reported against `step 3`, not against the save.
TEST(ProgressHeartbeat, AScopedWaitForPeersWorkNamesItThenTheWorkBefore) {
  ASSERT_GE(ProgressPipe(), 0);
  Said();
  progress::SetStillWorkingInterval(std::chrono::milliseconds(0));
  progress::Working("step 3");
  {
    progress::ScopedWork waiting("waiting for its peers to finish the checkpoint save");
    progress::StillWaitingForWork();
  }
  progress::StillWorking();
  progress::SetStillWorkingInterval(std::chrono::seconds(1));
  EXPECT_EQ(Said(),
            "S step 3\n"
            "S waiting for its peers to finish the checkpoint save\n"
            "S waiting for its peers to finish the checkpoint save\n"
            "S step 3\n"
            "S step 3\n");
}

// Beats reach a listener only while it lives, from the work's heartbeat and never from a rank
// that only waits for its peers' work.
TEST(ProgressHeartbeat, BeatsReachAListenerOnlyWhileItLivesAndOnlyFromWork) {
  progress::SetStillWorkingInterval(std::chrono::milliseconds(0));
  int beats = 0;
  {
    progress::BeatListener listener([&beats] { ++beats; });
    progress::StillWorking();
    progress::StillWorking();
    progress::StillWaitingForWork();
  }
  progress::StillWorking();
  progress::SetStillWorkingInterval(std::chrono::seconds(1));
  Said();
  EXPECT_EQ(beats, 2);
}

TEST(ProgressHeartbeat, VerifyingACheckpointSaysTheRankIsAtWork) {
  ASSERT_GE(ProgressPipe(), 0);
  const std::string directory = (std::filesystem::temp_directory_path() / "accel_heartbeat_checkpoint").string();
  std::filesystem::remove_all(directory);
  const std::string bytes(1000, 'x');
  ASSERT_FALSE(static_cast<bool>(checkpoint::WriteCheckpointDirectory(directory, {{"a.bin", {bytes}}}, 1)));
  progress::Working("restoring the training state");
  ASSERT_NE(Said(), "");
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  llvm::Expected<checkpoint::VerifiedCheckpoint> verified = checkpoint::VerifyCheckpointDirectory(directory);
  ASSERT_TRUE(static_cast<bool>(verified)) << llvm::toString(verified.takeError());
  EXPECT_EQ(Said(), "S restoring the training state\n") << "verification said nothing";
  std::filesystem::remove_all(directory);
}

// How many times the work was said again while `work` ran: every call of StillWorking speaks
// meanwhile (it says at most a line a second otherwise).
template <typename Work>
int SaidAgainWhile(Work work) {
  while (!Said().empty()) {
  }
  progress::SetStillWorkingInterval(std::chrono::milliseconds(0));
  int lines = 0;
  std::string pending;
  // Read as it comes: a busy piece of work could fill the pipe, which then drops lines.
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (true) {
      const bool last = done.load();
      std::string got = Said();
      for (char c : got) lines += c == '\n';
      if (got.empty() && last) return;
      if (got.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  work();
  done = true;
  reader.join();
  progress::SetStillWorkingInterval(std::chrono::seconds(1));
  return lines;
}

plan::TrainLoop Loop() {
  plan::TrainLoop loop;
  loop.steps = 1;
  loop.optimizer = testing::OptimizerNamed("adamw", 0.01);
  return loop;
}

TEST(ProgressHeartbeat, WritingACheckpointSaysSoEveryMiB) {
  ASSERT_GE(ProgressPipe(), 0);
  progress::Working("saving the checkpoint of step 3");
  const std::string directory = (testing::ScratchDir() / "heartbeat_write").string();
  std::filesystem::remove_all(directory);
  const std::string bytes(size_t{4} << 20, 'x');
  const int said = SaidAgainWhile([&] {
    llvm::Error error = checkpoint::WriteCheckpointDirectory(directory, {{"a.bin", {bytes}}}, 1);
    EXPECT_FALSE(static_cast<bool>(error)) << llvm::toString(std::move(error));
  });
  EXPECT_GE(said, 4) << "a 4 MiB file was written saying so " << said << " times";
}

// The tensors copied out of the model and the optimizer, then written; then read back into
// another model. Neither said a word before, however large the model.
TEST(ProgressHeartbeat, SavingAndRestoringTheTrainingStateSayTheRankIsAtWork) {
  ASSERT_GE(ProgressPipe(), 0);
  const plan::BuildModel model = testing::Mlp(4, {8, 6}, 2);  // 6 parameters
  std::unique_ptr<train::Trainer> trainer = train::MakeTrainer(model, Loop());
  trainer->ForwardBackward(at::randn({8, 4}), at::randn({8, 2}));
  trainer->OptimizerStep();
  const std::string directory = (testing::ScratchDir() / "heartbeat_state").string();
  std::filesystem::remove_all(directory);
  llvm::Expected<checkpoint::CheckpointStore> store =
      checkpoint::CheckpointStore::Open({directory, true, 2, 0});
  ASSERT_TRUE(static_cast<bool>(store)) << llvm::toString(store.takeError());

  progress::Working("saving the checkpoint of step 1");
  std::unique_ptr<train::StateFiles> files;
  int said = SaidAgainWhile([&] {
    llvm::Expected<std::unique_ptr<train::StateFiles>> encoded =
        train::EncodeTrainingState(*trainer, {1, 8, 0, 8}, {train::CaptureRngState()}, 3);
    if (encoded)
      files = std::move(*encoded);
    else
      ADD_FAILURE() << llvm::toString(encoded.takeError());
  });
  ASSERT_NE(files, nullptr);
  EXPECT_GE(said, 6) << "copying 6 parameters and their state out said so " << said << " times";
  said = SaidAgainWhile([&] {
    llvm::Expected<checkpoint::SaveResult> saved = store->Save(files->files());
    EXPECT_TRUE(static_cast<bool>(saved)) << llvm::toString(saved.takeError());
  });
  EXPECT_GE(said, 1);

  progress::Working("restoring the training state");
  llvm::Expected<checkpoint::VerifiedCheckpoint> loaded = store->LoadLatest();
  ASSERT_TRUE(static_cast<bool>(loaded)) << llvm::toString(loaded.takeError());
  std::unique_ptr<train::Trainer> resumed = train::MakeTrainer(model, Loop());
  said = SaidAgainWhile([&] {
    llvm::Expected<train::Progress> restored = train::RestoreTrainingState(*loaded, *resumed, 0, 1, 3);
    EXPECT_TRUE(static_cast<bool>(restored)) << llvm::toString(restored.takeError());
  });
  EXPECT_GE(said, 6) << "loading 6 parameters and their state said so " << said << " times";
}

TEST(ProgressHeartbeat, BuildingTheModelSaysTheRankIsAtWork) {
  ASSERT_GE(ProgressPipe(), 0);
  progress::Working("building the model and the data loaders");
  // Each built-in layer's weights, once created.
  int said = SaidAgainWhile([] { train::MakeTrainer(testing::Mlp(4, {8, 8, 6}, 2), Loop()); });
  EXPECT_GE(said, 4) << "building 4 Linear layers said so " << said << " times";
  // A TorchScript file, as it is read.
  const plan::BuildModel scripted{
      plan::TorchScript{std::string(ACCEL_SOURCE_DIR) + "/specs/models/classifier.pt"}};
  plan::TrainLoop loop = Loop();
  loop.loss = plan::Loss::cross_entropy;
  said = SaidAgainWhile([&] { train::MakeTrainer(scripted, loop); });
  EXPECT_GE(said, 1) << "loading a TorchScript file said nothing";
}

}  // namespace
}  // namespace accel::rt
