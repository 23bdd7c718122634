// `accelc lsp` on a 1,000-line spec: what an editor waits for. Each row goes through the
// server as a client's message does (JSON in, JSON out), against `accelc check`'s compilation
// of the same text alone.
// Group naming: `<group>/baseline:<what>` is the reference for the other `<group>/...` rows.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "llvm/Support/JSON.h"

#include "compiler/pipeline/stdlib.h"
#include "compiler/lsp/analysis.h"
#include "compiler/lsp/server.h"

namespace {

const accel::pipeline::Stdlib& TheStdlib() {
  static accel::diag::DiagnosticEngine diagnostics;
  static std::unique_ptr<accel::pipeline::Stdlib> stdlib = accel::pipeline::Stdlib::Load(diagnostics);
  return *stdlib;
}

// About 1,000 lines that check clean: documented constants, and a job whose model has one
// hidden layer width per line.
std::string LargeSpec() {
  std::string text = "/// A large spec for the language server's benchmark.\n";
  for (int i = 0; i < 250; ++i) {
    std::string n = std::to_string(i);
    text += "/// Constant " + n + ".\nlet width_" + n + " = " + std::to_string(16 + i % 48) + "\n\n";
  }
  text += "job large {\n  compute {\n    distributed_type = MULTI_CPU\n    num_processes = 2\n  }\n";
  text += "  accelerator {\n    mixed_precision = no\n    seed = 42\n  }\n";
  text += "  model = MLP {\n    inputs = 16\n    hidden = [\n";
  for (int i = 0; i < 200; ++i) text += "      width_" + std::to_string(i) + ",\n";
  text += "    ]\n    outputs = 1\n  }\n";
  text += "  data = SyntheticRegression {\n    samples = 2048\n    features = 16\n    batch_size = 32\n  }\n";
  text += "  train {\n    steps = 200\n    optimizer = AdamW { lr = 0.003 }\n    log_every = 20\n  }\n}\n";
  return text;
}

class NullSink : public accel::lsp::ByteSink {
 public:
  bool Write(std::string_view bytes) override {
    written += bytes.size();
    return true;
  }
  size_t written = 0;
};

std::string Json(llvm::json::Value value) {
  std::string out;
  llvm::raw_string_ostream stream(out);
  stream << value;
  return stream.str();
}

constexpr const char* kUri = "file:///bench/large.accel";

std::string Open(const std::string& text, int version) {
  return Json(llvm::json::Object{
      {"jsonrpc", "2.0"},
      {"method", "textDocument/didOpen"},
      {"params", llvm::json::Object{
                     {"textDocument",
                      llvm::json::Object{
                          {"uri", kUri}, {"languageId", "accel"}, {"version", version}, {"text", text}}}}}});
}

// The line and column of `needle` in `text`, ASCII.
std::pair<int, int> Find(const std::string& text, const std::string& needle) {
  size_t at = text.find(needle);
  int line = 0;
  for (size_t i = 0; i < at; ++i) line += text[i] == '\n';
  return {line, static_cast<int>(at - text.rfind('\n', at) - 1)};
}

std::string At(const char* method, int id, std::pair<int, int> position) {
  return Json(llvm::json::Object{
      {"jsonrpc", "2.0"},
      {"id", id},
      {"method", method},
      {"params", llvm::json::Object{{"textDocument", llvm::json::Object{{"uri", kUri}}},
                                    {"position", llvm::json::Object{{"line", position.first},
                                                                    {"character", position.second}}}}}});
}

// A server with the large spec open.
struct Session {
  NullSink sink;
  accel::lsp::Server server{sink, TheStdlib(), accel::lsp::ServerOptions{}};
  std::string text = LargeSpec();
  Session() {
    server.HandleMessage(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{}})");
    server.HandleMessage(Open(text, 1));
  }
};

// Baseline: `accelc check`'s compilation of the text, with nothing around it.
void Check(benchmark::State& state) {
  accel::lsp::Document document{kUri, "/bench/large.accel", 1, LargeSpec()};
  for (auto _ : state) {
    std::unique_ptr<accel::lsp::Analysis> analysis = accel::lsp::Analyze(document, TheStdlib());
    if (!analysis->diagnostics.empty()) state.SkipWithError("the benchmark spec must check clean");
    benchmark::DoNotOptimize(analysis);
  }
  state.counters["lines"] = 1000;
}
BENCHMARK(Check)->Name("lsp_1000_lines/baseline:check")->Unit(benchmark::kMillisecond)->UseRealTime();

// didOpen: the document stored, compiled, its diagnostics published.
void OpenDocument(benchmark::State& state) {
  Session session;
  std::string open = Open(session.text, 1);
  for (auto _ : state) session.server.HandleMessage(open);
}
BENCHMARK(OpenDocument)->Name("lsp_1000_lines/open")->Unit(benchmark::kMillisecond)->UseRealTime();

// didChange of one character (an incremental edit), to the diagnostics published.
void EditToDiagnostics(benchmark::State& state) {
  Session session;
  auto [line, column] = Find(session.text, "seed = 42");
  int version = 2;
  for (auto _ : state) {
    // Alternate 42 and 43 so every edit changes the text.
    std::string digit = version % 2 ? "2" : "3";
    session.server.HandleMessage(Json(llvm::json::Object{
        {"jsonrpc", "2.0"},
        {"method", "textDocument/didChange"},
        {"params", llvm::json::Object{
                       {"textDocument", llvm::json::Object{{"uri", kUri}, {"version", version++}}},
                       {"contentChanges",
                        llvm::json::Array{llvm::json::Object{
                            {"range",
                             llvm::json::Object{
                                 {"start", llvm::json::Object{{"line", line}, {"character", column + 8}}},
                                 {"end", llvm::json::Object{{"line", line}, {"character", column + 9}}}}},
                            {"text", digit}}}}}}}));
  }
}
BENCHMARK(EditToDiagnostics)
    ->Name("lsp_1000_lines/edit_to_diagnostics")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void HoverField(benchmark::State& state) {
  Session session;
  std::string request = At("textDocument/hover", 1, Find(session.text, "batch_size"));
  size_t before = session.sink.written;
  for (auto _ : state) session.server.HandleMessage(request);
  if (session.sink.written == before) state.SkipWithError("no hover");
}
BENCHMARK(HoverField)->Name("lsp_1000_lines/hover")->Unit(benchmark::kMillisecond)->UseRealTime();

// Field names in `train { ... }` near the end of the file: the scan from the top is the cost.
void CompleteField(benchmark::State& state) {
  Session session;
  std::string request = At("textDocument/completion", 1, Find(session.text, "log_every"));
  for (auto _ : state) session.server.HandleMessage(request);
}
BENCHMARK(CompleteField)->Name("lsp_1000_lines/completion")->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
