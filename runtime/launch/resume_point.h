#ifndef ACCEL_RUNTIME_LAUNCH_RESUME_POINT_H_
#define ACCEL_RUNTIME_LAUNCH_RESUME_POINT_H_

#include <filesystem>
#include <string>

#include "compiler/plan/plan.h"

// What the launcher resumes from, decided before and between attempts (torch-free: the workers
// verify and load the checkpoint itself).
namespace accel::rt::launch {

// Why `--resume PATH` cannot be resumed from, or "" when it may be: a folder with a manifest
// that parses. The user named the path, so a typo stops the launch before any worker starts,
// instead of failing every rank and being "fixed" by a restart that resumes something else.
// `auto` and "" are not paths: "".
std::string WhyNotAResumePoint(const std::string& resume);

// What a restart resumes: `auto` (the newest complete checkpoint) once the job has written a
// checkpoint since `started`, so that no finished step is trained twice; until then what the
// first attempt was asked for (`asked`: a path, `auto`, or "" for a fresh start). `output_dir`
// is where the plan's checkpoints go when it names no project directory.
std::string ResumeForRestart(const plan::Checkpoint& checkpoint, const std::filesystem::path& output_dir,
                             const std::string& asked, std::filesystem::file_time_type started);

}  // namespace accel::rt::launch

#endif  // ACCEL_RUNTIME_LAUNCH_RESUME_POINT_H_
