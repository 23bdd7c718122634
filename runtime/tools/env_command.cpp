#include "runtime/tools/env_command.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/cli/arguments.h"
#include "compiler/plan/plan.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"
#include "runtime/launch/plan_env.h"
#include "runtime/tools/torch_facts.h"

namespace accel::tools {
namespace {

// The value after `key` and `:` on the first line of `path` that starts with `key`.
std::string FieldOf(const char* path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0) continue;
    size_t colon = line.find_first_of(":=", key.size());
    if (colon == std::string::npos) continue;
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t\""));
    while (!value.empty() && (value.back() == '"' || value.back() == ' ')) value.pop_back();
    return value;
  }
  return "";
}

std::string Compiler() {
#if defined(__clang__)
  return fmt::format("Clang {}", __clang_version__);
#elif defined(__GNUC__)
  return fmt::format("GCC {}", __VERSION__);
#else
  return "unknown";
#endif
}

std::string Memory() {
  // `MemTotal:  131072000 kB`
  auto gib = [](const std::string& field) {
    return field.empty() ? std::string("unknown")
                         : fmt::format("{:.1f} GiB", std::atof(field.c_str()) / 1048576);
  };
  return fmt::format("{} total, {} available", gib(FieldOf("/proc/meminfo", "MemTotal")),
                     gib(FieldOf("/proc/meminfo", "MemAvailable")));
}

// The report as ordered (name, JSON key, value) rows.
struct Row {
  const char* label;
  const char* key;
  std::string value;
};

// LibTorch's facts as accelrun-worker tells them, or rows saying why it could not.
std::vector<Row> TorchRows(const std::string& worker) {
  llvm::Expected<TorchFacts> asked = AskWorkerForFacts(worker);
  if (!asked) {
    std::string why = "unknown: " + llvm::toString(asked.takeError());
    return {{"LibTorch version", "libtorch_version", why}};
  }
  const TorchFacts& torch = *asked;
  std::string blas = torch.blas;
  if (!torch.blas_optimized) blas += "; fp32 matmul will be slow";
  std::string others = fmt::format("{}", fmt::join(torch.other_accelerators, ", "));
  return {
      {"LibTorch version", "libtorch_version", torch.version},
      {"BLAS", "blas", blas},
      {"LibTorch threads", "torch_threads", std::to_string(torch.intra_op_threads)},
      {"CUDA", "cuda",
       torch.cuda_compiled
           ? fmt::format("compiled in (CUDA {}), {}", torch.cuda,
                         torch.devices.empty() ? std::string("no device visible")
                                               : fmt::format("{} device{}: {}", torch.devices.size(),
                                                             torch.devices.size() == 1 ? "" : "s",
                                                             fmt::join(torch.devices, "; ")))
           : "not available: " + torch.cuda},
      {"bf16 available", "bf16", torch.bf16 ? "yes" : "no"},
      {"NCCL", "nccl", torch.nccl},
      {"Gloo", "gloo", torch.gloo ? "yes" : "no"},
      {"MPS, NPU, XPU, XLA", "other_accelerators", others.empty() ? "none available" : others + " available"},
  };
}

std::vector<Row> Collect(const std::string& worker) {
  utsname system{};
  ::uname(&system);
  std::string os = FieldOf("/etc/os-release", "PRETTY_NAME");
  const char* omp = std::getenv("OMP_NUM_THREADS");
  std::string cpu = FieldOf("/proc/cpuinfo", "model name");
  std::vector<Row> rows = {
      {"Accel version", "accel_version", ACCEL_VERSION},
      {"Plan format", "plan_format", std::string(plan::kFormat)},
      {"C++ compiler", "compiler", Compiler()},
      {"OS", "os",
       fmt::format("{}{}{} {} ({})", os, os.empty() ? "" : ", ", system.sysname, system.release,
                   system.machine)},
      {"CPU", "cpu", cpu.empty() ? "unknown" : cpu},
      {"CPU cores", "cpu_cores",
       fmt::format("{} physical, {} logical", rt::launch::PhysicalCoreCount(),
                   std::thread::hardware_concurrency())},
      {"Memory", "memory", Memory()},
      {"OMP_NUM_THREADS", "omp_num_threads", omp ? omp : "not set"},
  };
  for (Row& row : TorchRows(worker)) rows.push_back(std::move(row));
  return rows;
}

}  // namespace

int RunEnvCommand(const std::vector<std::string>& args, const std::string& worker) {
  constexpr const char* kTakes = "`accelrun env` takes `--format text|json`";
  bool json = false;
  bool help = false;
  std::vector<cli::Option> table = {
      cli::Option{.names = {"--format"},
                  .value_name = "text|json",
                  .apply = [&json](std::string_view, std::string_view format) -> std::string {
                    if (format != "json" && format != "text")
                      return fmt::format("`--format` takes text or json, not `{}`", format);
                    json = format == "json";
                    return "";
                  },
                  .needs = "text or json"},
      cli::Option{.names = {"-h", "--help"},
                  .apply =
                      [&help](std::string_view, std::string_view) {
                        help = true;
                        return std::string();
                      },
                  .exits = true},
  };
  std::string error = cli::Parse(args, table, [&](const std::string& arg) {
    return fmt::format("unknown argument `{}`; {}", arg, kTakes);
  });
  if (help) {
    fmt::print(
        "usage: accelrun env [--format text|json]\n\nPrints what a bug report needs: versions, "
        "compiler, OS, CPU, memory, BLAS, threads, devices.\n");
    return 0;
  }
  // The one thing to say about an unknown flag is the one flag there is.
  if (error.rfind("unknown option", 0) == 0) error += fmt::format("; {}", kTakes);
  if (!error.empty()) {
    fmt::print(stderr, "accelrun: error: {}\n", error);
    return 2;
  }
  std::vector<Row> rows = Collect(worker);
  if (json) {
    llvm::json::Object object;
    for (Row& row : rows) object[row.key] = std::move(row.value);
    std::string text;
    llvm::raw_string_ostream out(text);
    out << llvm::formatv("{0:2}", llvm::json::Value(std::move(object)));
    fmt::print("{}\n", out.str());
    return 0;
  }
  fmt::print("Copy this into a bug report:\n\n");
  for (const Row& row : rows) fmt::print("- {}: {}\n", row.label, row.value);
  return 0;
}

}  // namespace accel::tools
