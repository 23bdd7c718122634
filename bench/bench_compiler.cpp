// How long `accelc` takes to compile the quickstart, against reading the plan it produces.
// Group naming: `<group>/baseline:<what>` is the reference for the other `<group>/...` rows.
#include <benchmark/benchmark.h>

#include <fstream>
#include <sstream>

#include "compiler/pipeline/compile.h"
#include "llvm/Support/JSON.h"

namespace {

std::string ReadSpec() {
  std::ifstream in(std::string(ACCEL_SOURCE_DIR) + "/specs/quickstart.accel");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

const accel::pipeline::Stdlib& SharedStdlib() {
  static accel::diag::DiagnosticEngine diagnostics;
  static std::unique_ptr<accel::pipeline::Stdlib> stdlib = accel::pipeline::Stdlib::Load(diagnostics);
  return *stdlib;
}

// Baseline: parse the plan JSON of the quickstart (what accelrun does with a compiled plan).
void PlanJsonParse(benchmark::State& state) {
  accel::sema::MapEnvironment environment;
  auto compilation = accel::pipeline::CompileText("q.accel", ReadSpec(), SharedStdlib(), environment);
  std::string json = accel::plan::ToJson(*compilation.plan);
  for (auto _ : state) {
    auto plan = accel::plan::FromJson(json);
    if (!plan) state.SkipWithError("plan did not parse");
    benchmark::DoNotOptimize(plan);
  }
}
BENCHMARK(PlanJsonParse)->Name("compile_quickstart/baseline:plan_json_read")->UseRealTime();

// Parse, check and lower the quickstart against an already loaded stdlib.
void CompileQuickstart(benchmark::State& state) {
  std::string spec = ReadSpec();
  accel::sema::MapEnvironment environment;
  for (auto _ : state) {
    auto compilation = accel::pipeline::CompileText("q.accel", spec, SharedStdlib(), environment);
    if (!compilation.plan) state.SkipWithError("quickstart did not compile");
    benchmark::DoNotOptimize(compilation);
  }
}
BENCHMARK(CompileQuickstart)->Name("compile_quickstart/accelc_pipeline")->UseRealTime();

// Parse and resolve the embedded stdlib: the fixed start-up cost of every accelc run.
void LoadStdlib(benchmark::State& state) {
  for (auto _ : state) {
    accel::diag::DiagnosticEngine diagnostics;
    auto stdlib = accel::pipeline::Stdlib::Load(diagnostics);
    benchmark::DoNotOptimize(stdlib);
  }
}
BENCHMARK(LoadStdlib)->Name("compile_quickstart/stdlib_load")->UseRealTime();

// A large spec, about `bytes` long: many `let` constants of every literal kind, then a job.
std::string LargeSpec(size_t bytes) {
  std::string text;
  for (int i = 0; text.size() < bytes; ++i) {
    text += "/// Constant " + std::to_string(i) + ".\n";
    text += "let c" + std::to_string(i) + " = [" + std::to_string(i) + ", 2.5e-3, \"name_" +
            std::to_string(i) + "\", 800s, 512MiB, true, MULTI_CPU, { k: 1, \"v\": none }]\n";
  }
  return text +
         "job big { model = MLP { inputs = 4 }; data = SyntheticRegression { features = 4 }; train { steps = "
         "1 } }\n";
}

// A JSON document of the same size and a similar shape, for LLVM's JSON parser.
std::string LargeJson(size_t bytes) {
  std::string text = "{";
  for (int i = 0; text.size() < bytes; ++i) {
    if (i) text += ",";
    text += "\"c" + std::to_string(i) + "\": [" + std::to_string(i) + ", 2.5e-3, \"name_" +
            std::to_string(i) + "\", \"800s\", 536870912, true, \"MULTI_CPU\", {\"k\": 1, \"v\": null}]";
  }
  return text + "}";
}

constexpr size_t kLargeBytes = 1 << 20;

// Baseline: LLVM's JSON parser over 1 MiB of similar structure.
void JsonParseLarge(benchmark::State& state) {
  std::string json = LargeJson(kLargeBytes);
  for (auto _ : state) {
    auto value = llvm::json::parse(json);
    if (!value) state.SkipWithError("json did not parse");
    benchmark::DoNotOptimize(value);
  }
  state.SetBytesProcessed(state.iterations() * json.size());
}
BENCHMARK(JsonParseLarge)
    ->Name("parse_1MiB/baseline:llvm_json_parse")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The full front end (parse + check + lower) on a 1 MiB spec.
void CompileLarge(benchmark::State& state) {
  std::string spec = LargeSpec(kLargeBytes);
  accel::sema::MapEnvironment environment;
  for (auto _ : state) {
    auto compilation = accel::pipeline::CompileText("big.accel", spec, SharedStdlib(), environment);
    if (!compilation.plan) state.SkipWithError("large spec did not compile");
    benchmark::DoNotOptimize(compilation);
  }
  state.SetBytesProcessed(state.iterations() * spec.size());
}
BENCHMARK(CompileLarge)->Name("parse_1MiB/accelc_pipeline")->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
