// What the launcher resumes from (runtime/launch/resume_point.h): a named path checked before
// anything starts, and a restart that continues from what the job wrote, else from where it
// was asked to begin.
#include "runtime/launch/resume_point.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/unit/scratch_dir.h"

namespace accel::rt::launch {
namespace {

namespace fs = std::filesystem;

// A folder with a manifest that parses, as the checkpoint store writes one.
void WriteCheckpoint(const fs::path& folder) {
  fs::create_directories(folder);
  std::ofstream(folder / "accel_manifest.json")
      << R"({"format": "accel-checkpoint", "version": 2, "iteration": 0, "chunk_size": 8388608, "files": {}})";
}

TEST(ResumePoint, ANamedPathMustBeACheckpointFolder) {
  fs::path dir = testing::ScratchDir("resume_point_named");
  EXPECT_EQ(WhyNotAResumePoint(""), "");
  EXPECT_EQ(WhyNotAResumePoint("auto"), "");
  EXPECT_NE(WhyNotAResumePoint((dir / "chekpoint_3").string()).find("no such checkpoint folder"), std::string::npos);
  std::ofstream(dir / "file") << "x";
  EXPECT_NE(WhyNotAResumePoint((dir / "file").string()).find("is not a folder"), std::string::npos);
  fs::create_directories(dir / "empty");
  EXPECT_NE(WhyNotAResumePoint((dir / "empty").string()).find("the checkpoint was never finished"),
            std::string::npos);
  WriteCheckpoint(dir / "checkpoint_0");
  EXPECT_EQ(WhyNotAResumePoint((dir / "checkpoint_0").string()), "");
}

TEST(ResumePoint, ARestartContinuesFromWhatTheJobWroteElseFromWhereItBegan) {
  fs::path project = testing::ScratchDir("resume_point_restart");
  plan::Checkpoint automatic;
  automatic.project_dir = project.string();
  WriteCheckpoint(project / "checkpoints" / "checkpoint_0");
  const std::string asked = (project / "checkpoints" / "checkpoint_0").string();
  // Nothing written since the start: the restart resumes what the user named, or starts afresh.
  const auto started = fs::file_time_type::clock::now() + std::chrono::seconds(1);
  EXPECT_EQ(ResumeForRestart(automatic, project, asked, started), asked);
  EXPECT_EQ(ResumeForRestart(automatic, project, "", started), "");
  // A checkpoint written since: the newest one.
  WriteCheckpoint(project / "checkpoints" / "checkpoint_1");
  fs::last_write_time(project / "checkpoints" / "checkpoint_1" / "accel_manifest.json",
                      started + std::chrono::seconds(1));
  EXPECT_EQ(ResumeForRestart(automatic, project, asked, started), "auto");
  // Manual naming: the one folder, `{project}/checkpoint`; the output dir when no project is set.
  plan::Checkpoint manual;
  manual.automatic_checkpoint_naming = false;
  fs::path output = testing::ScratchDir("resume_point_manual");
  EXPECT_EQ(ResumeForRestart(manual, output, "auto", started), "auto");
  EXPECT_EQ(ResumeForRestart(manual, output, "", started), "");
  WriteCheckpoint(output / "checkpoint");
  fs::last_write_time(output / "checkpoint" / "accel_manifest.json", started + std::chrono::seconds(1));
  EXPECT_EQ(ResumeForRestart(manual, output, "", started), "auto");
}

}  // namespace
}  // namespace accel::rt::launch
