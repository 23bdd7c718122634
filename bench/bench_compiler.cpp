// How long `accelc` takes to compile the quickstart, against reading the plan it produces.
// Group naming: `<group>/baseline:<what>` is the reference for the other `<group>/...` rows.
#include <benchmark/benchmark.h>

#include <fstream>
#include <sstream>

#include "compiler/driver/compile.h"
#include "llvm/Support/JSON.h"

namespace {

std::string ReadSpec() {
  std::ifstream in(std::string(ACCEL_SOURCE_DIR) + "/specs/quickstart.accel");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

const accel::driver::Stdlib& SharedStdlib() {
  static accel::diag::DiagnosticEngine diagnostics;
  static std::unique_ptr<accel::driver::Stdlib> stdlib = accel::driver::Stdlib::Load(diagnostics);
  return *stdlib;
}

// Baseline: parse the plan JSON of the quickstart (what accelrun does with a compiled plan).
void PlanJsonParse(benchmark::State& state) {
  accel::sema::MapEnvironment environment;
  auto compilation = accel::driver::CompileText("q.accel", ReadSpec(), SharedStdlib(), environment);
  std::string json = accel::plan::ToJson(*compilation.plan);
  for (auto _ : state) {
    auto plan = accel::plan::FromJson(json);
    if (!plan) state.SkipWithError("plan did not parse");
    benchmark::DoNotOptimize(plan);
  }
}
BENCHMARK(PlanJsonParse)->Name("compile_quickstart/baseline:plan_json_read");

// Parse, check and lower the quickstart against an already loaded stdlib.
void CompileQuickstart(benchmark::State& state) {
  std::string spec = ReadSpec();
  accel::sema::MapEnvironment environment;
  for (auto _ : state) {
    auto compilation = accel::driver::CompileText("q.accel", spec, SharedStdlib(), environment);
    if (!compilation.plan) state.SkipWithError("quickstart did not compile");
    benchmark::DoNotOptimize(compilation);
  }
}
BENCHMARK(CompileQuickstart)->Name("compile_quickstart/accelc_pipeline");

// Parse and resolve the embedded stdlib: the fixed start-up cost of every accelc run.
void LoadStdlib(benchmark::State& state) {
  for (auto _ : state) {
    accel::diag::DiagnosticEngine diagnostics;
    auto stdlib = accel::driver::Stdlib::Load(diagnostics);
    benchmark::DoNotOptimize(stdlib);
  }
}
BENCHMARK(LoadStdlib)->Name("compile_quickstart/stdlib_load");

}  // namespace

BENCHMARK_MAIN();
