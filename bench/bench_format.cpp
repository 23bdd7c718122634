// How long `accelc fmt` takes on a 1,000-line spec, against parsing it alone.
// Group naming: `<group>/baseline:<what>` is the reference for the other `<group>/...` rows.
#include <benchmark/benchmark.h>

#include <string>

#include "compiler/format/format.h"
#include "compiler/parse/parse.h"

namespace {

// About 1,000 lines in the canonical layout: a job of blocks with comments, lists, a
// one-line block and a list of records broken one per line.
std::string FormattedSpec() {
  std::string text = "/// A large job for the formatter's benchmark.\njob big {\n";
  for (int i = 0; i < 45; ++i) {
    std::string n = std::to_string(i);
    text += "  // Section " + n + ".\n";
    text += "  section_" + n + " {\n";
    text += "    name = \"section " + n + "\" // trailing\n";
    text += "    steps = " + n + "\n";
    text += "    timeout = 800s\n";
    text += "    sizes = [64, 128, 256, 512]\n";
    text += "    output { dir = \"runs/" + n + "\" }\n";
    text += "    optimizer = AdamW {\n      lr = 2e-5\n      weight_decay = 0.01\n    }\n";
    text += "    kwargs = [\n";
    text += "      DistributedDataParallelKwargs { find_unused_parameters = true },\n";
    text += "      InitProcessGroupKwargs { timeout = 800s },\n";
    text += "    ]\n";
    text +=
        "    tags = {\n      \"first_key_of_the_map\": \"first value\",\n"
        "      \"second_key_of_the_map\": \"second value\",\n      \"third_key_of_the_map\": 3,\n    }\n\n";
    text += "    enabled = true\n  }\n";
  }
  return text + "}\n";
}

// The same spec written carelessly: one line per section, `;` between statements.
std::string UnformattedSpec() {
  std::string text = "job big {\n";
  for (int i = 0; i < 45; ++i) {
    std::string n = std::to_string(i);
    text += "section_" + n + " { name = \"section " + n + "\"; steps = " + n +
            "; timeout = 800s; sizes = [64,128,256,512]; output { dir = \"runs/" + n +
            "\" }; optimizer = AdamW { lr = 2e-5; weight_decay = 0.01 }; kwargs = "
            "[DistributedDataParallelKwargs { find_unused_parameters = true }, InitProcessGroupKwargs "
            "{ timeout = 800s }]; enabled = true }\n";
  }
  return text + "}\n";
}

// Baseline: the parse every accelc command starts with.
void Parse(benchmark::State& state) {
  accel::source::SourceFile source("big.accel", FormattedSpec());
  for (auto _ : state) {
    accel::diag::DiagnosticEngine diagnostics;
    accel::ast::File file = accel::parse::Parse(source, diagnostics);
    benchmark::DoNotOptimize(file);
  }
  state.counters["lines"] = static_cast<double>(source.line_count());
}
BENCHMARK(Parse)->Name("fmt_1000_lines/baseline:parse")->Unit(benchmark::kMillisecond)->UseRealTime();

// A file already formatted: parse and print (the output equals the input, so no re-parse).
void FormatFormatted(benchmark::State& state) {
  accel::source::SourceFile source("big.accel", FormattedSpec());
  for (auto _ : state) {
    accel::diag::DiagnosticEngine diagnostics;
    accel::format::Formatted formatted = accel::format::Format(source, diagnostics);
    if (formatted.text != source.text()) state.SkipWithError("the spec is not in the canonical layout");
    benchmark::DoNotOptimize(formatted);
  }
}
BENCHMARK(FormatFormatted)
    ->Name("fmt_1000_lines/already_formatted")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// A file that changes: parse, print, parse the result and compare the two.
void FormatUnformatted(benchmark::State& state) {
  accel::source::SourceFile source("big.accel", UnformattedSpec());
  for (auto _ : state) {
    accel::diag::DiagnosticEngine diagnostics;
    accel::format::Formatted formatted = accel::format::Format(source, diagnostics);
    if (formatted.outcome != accel::format::Formatted::Outcome::kFormatted)
      state.SkipWithError("did not format");
    benchmark::DoNotOptimize(formatted);
  }
}
BENCHMARK(FormatUnformatted)
    ->Name("fmt_1000_lines/reformatted")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
