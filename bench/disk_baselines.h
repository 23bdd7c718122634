#ifndef ACCEL_BENCH_DISK_BASELINES_H_
#define ACCEL_BENCH_DISK_BASELINES_H_

// What the disk benchmarks share: a scratch folder removed at exit, dropping files from the
// page cache so reads start cold, and `dd` as the disk's limit for a synced sequential write
// (`conv=fdatasync`) and a cold sequential read, measured in the same run as what it bounds.

#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace accel::bench {

namespace fs = std::filesystem;

inline void RemoveWorkDir();

// `$ACCEL_BENCH_DIR` (or the temp folder) / `accel_bench_<tag>_<pid>`, created on first use and
// removed at exit. One folder per process: the first call's tag names it.
inline const fs::path& WorkDir(const char* tag) {
  static const fs::path dir = [tag] {
    const char* base = std::getenv("ACCEL_BENCH_DIR");
    fs::path path = fs::path(base ? base : fs::temp_directory_path().string()) /
                    ("accel_bench_" + std::string(tag) + "_" + std::to_string(::getpid()));
    fs::create_directories(path);
    return path;
  }();
  // Registered after `dir` is built, so it runs at exit before `dir` is destroyed.
  static const bool registered = (std::atexit(RemoveWorkDir), true);
  (void)registered;
  return dir;
}

inline void RemoveWorkDir() {
  std::error_code ec;
  fs::remove_all(WorkDir(nullptr), ec);  // built by then: the tag is not read
}

// Drops `path` (a file, or every file under a folder) from the page cache, so that the next
// read comes from the disk. Clean pages only: the files were synced when written.
inline void Evict(const fs::path& path) {
  std::vector<fs::path> files;
  if (fs::is_directory(path)) {
    for (const auto& entry : fs::recursive_directory_iterator(path)) {
      if (entry.is_regular_file()) files.push_back(entry.path());
    }
  } else {
    files.push_back(path);
  }
  for (const fs::path& file : files) {
    int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

inline void FdataSync(const fs::path& file) {
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ::fdatasync(fd);
    ::close(fd);
  }
}

// The settings of every disk row: one timed iteration (it moves the whole state), five
// repetitions, wall-clock milliseconds. `BENCHMARK(f)->Apply(DiskRow)->Name("group/row")`.
inline void DiskRow(benchmark::internal::Benchmark* row) {
  row->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1)->Repetitions(5);
}

inline void Shell(benchmark::State& state, const std::string& command) {
  if (std::system(command.c_str()) != 0) state.SkipWithError(("failed: " + command).c_str());
}

// `dd` writing `bytes` (rounded up to 16 MiB blocks) of zeros to `file`, synced.
inline std::string DdWriteCommand(const fs::path& file, int64_t bytes) {
  int64_t blocks = (bytes + (16 << 20) - 1) / (16 << 20);
  return "dd if=/dev/zero of=" + file.string() + " bs=16M count=" + std::to_string(blocks) +
         " conv=fdatasync status=none";
}

// The baseline rows, in `dir`: a synced write of `bytes`, and a cold read of as many.
inline void DdWrite(benchmark::State& state, const fs::path& dir, int64_t bytes) {
  fs::path file = dir / "dd.bin";
  for (auto _ : state) {
    Shell(state, DdWriteCommand(file, bytes));
    state.PauseTiming();
    fs::remove(file);
    state.ResumeTiming();
  }
  state.SetBytesProcessed(state.iterations() * bytes);
}

inline void DdRead(benchmark::State& state, const fs::path& dir, int64_t bytes) {
  fs::path file = dir / "dd_read.bin";
  if (!fs::exists(file)) Shell(state, DdWriteCommand(file, bytes));
  for (auto _ : state) {
    state.PauseTiming();
    Evict(file);
    state.ResumeTiming();
    Shell(state, "dd if=" + file.string() + " of=/dev/null bs=16M status=none");
  }
  state.SetBytesProcessed(state.iterations() * bytes);
}

}  // namespace accel::bench

#endif  // ACCEL_BENCH_DISK_BASELINES_H_
