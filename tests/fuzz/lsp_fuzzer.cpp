// libFuzzer target for `accelc lsp`. The first byte picks what the rest is:
// - even: the raw byte stream on the server's stdin (framing, JSON-RPC, lifecycle);
// - odd: the text of a document (a spec, or a YAML config when bit 1 is set) that an editor
//   opens and then asks about at positions taken from the text itself: hover, completion,
//   definition, symbols, formatting and code actions, then an incremental edit.
// Built by scripts/fuzz.sh (FUZZ_TARGET=lsp_fuzzer) with clang, ASan and UBSan.
#include <cstddef>
#include <cstdint>
#include <string>

#include "llvm/Support/JSON.h"

#include "compiler/pipeline/stdlib.h"
#include "compiler/lsp/server.h"
#include "compiler/lsp/transport.h"

namespace {

class StringSource : public accel::lsp::ByteSource {
 public:
  explicit StringSource(std::string text) : text_(std::move(text)) {}
  size_t Read(char* buffer, size_t size) override {
    // Short reads, as from a pipe: frames cross read boundaries.
    size_t n = std::min({size, text_.size() - position_, size_t{97}});
    text_.copy(buffer, n, position_);
    position_ += n;
    return n;
  }

 private:
  std::string text_;
  size_t position_ = 0;
};

class NullSink : public accel::lsp::ByteSink {
 public:
  bool Write(std::string_view bytes) override { return true; }
};

std::string Message(llvm::json::Object message) {
  message["jsonrpc"] = "2.0";
  std::string body;
  llvm::raw_string_ostream stream(body);
  stream << llvm::json::Value(std::move(message));
  stream.flush();
  return accel::lsp::FrameMessage(body);
}

// A session about `text`: open it, ask everything at a few positions, edit it, ask again.
std::string Session(const std::string& text, bool yaml) {
  const char* uri = yaml ? "file:///fuzz/config.yaml" : "file:///fuzz/job.accel";
  std::string stream =
      Message(llvm::json::Object{{"id", 1}, {"method", "initialize"}, {"params", llvm::json::Object{}}});
  stream += Message(llvm::json::Object{
      {"method", "textDocument/didOpen"},
      {"params",
       llvm::json::Object{
           {"textDocument",
            llvm::json::Object{{"uri", uri}, {"languageId", "accel"}, {"version", 1}, {"text", text}}}}}});
  int64_t id = 2;
  for (size_t i = 0; i < 4 && i < text.size(); ++i) {
    // Positions anywhere, past line ends and past the last line included.
    llvm::json::Object position{{"line", static_cast<unsigned char>(text[i]) % 8},
                                {"character", static_cast<unsigned char>(text[text.size() - 1 - i]) % 64}};
    for (const char* method : {"textDocument/hover", "textDocument/completion", "textDocument/definition"}) {
      stream += Message(
          llvm::json::Object{{"id", id++},
                             {"method", method},
                             {"params", llvm::json::Object{{"textDocument", llvm::json::Object{{"uri", uri}}},
                                                           {"position", llvm::json::Object(position)}}}});
    }
    llvm::json::Object range{{"start", llvm::json::Object(position)}, {"end", llvm::json::Object(position)}};
    stream += Message(
        llvm::json::Object{{"id", id++},
                           {"method", "textDocument/codeAction"},
                           {"params", llvm::json::Object{{"textDocument", llvm::json::Object{{"uri", uri}}},
                                                         {"range", llvm::json::Object(range)},
                                                         {"context", llvm::json::Object{}}}}});
    stream += Message(llvm::json::Object{
        {"method", "textDocument/didChange"},
        {"params", llvm::json::Object{
                       {"textDocument", llvm::json::Object{{"uri", uri}, {"version", id}}},
                       {"contentChanges", llvm::json::Array{llvm::json::Object{
                                              {"range", std::move(range)}, {"text", text.substr(i, 3)}}}}}}});
  }
  for (const char* method : {"textDocument/documentSymbol", "textDocument/formatting"}) {
    stream += Message(llvm::json::Object{
        {"id", id++},
        {"method", method},
        {"params", llvm::json::Object{{"textDocument", llvm::json::Object{{"uri", uri}}}}}});
  }
  return stream;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static accel::diag::DiagnosticEngine stdlib_diagnostics;
  static std::unique_ptr<accel::pipeline::Stdlib> stdlib = accel::pipeline::Stdlib::Load(stdlib_diagnostics);
  if (size == 0) return 0;
  std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  // llvm::json refuses text that is not UTF-8; a session needs it valid to reach the features.
  std::string stream = data[0] % 2 == 0 ? rest : Session(llvm::json::fixUTF8(rest), (data[0] & 2) != 0);
  StringSource in(std::move(stream));
  NullSink out;
  accel::lsp::Serve(in, out, *stdlib, accel::lsp::ServerOptions{});
  return 0;
}
