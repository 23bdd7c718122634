// The server end to end in one process: JSON-RPC in, framed JSON out.
#include "compiler/lsp/server.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "llvm/Support/JSON.h"

namespace accel::lsp {
namespace {

const pipeline::Stdlib& TheStdlib() {
  static diag::DiagnosticEngine diagnostics;
  static std::unique_ptr<pipeline::Stdlib> stdlib = pipeline::Stdlib::Load(diagnostics);
  return *stdlib;
}

class StringSink : public ByteSink {
 public:
  bool Write(std::string_view bytes) override {
    text.append(bytes);
    return true;
  }
  std::string text;
};

class StringSource : public ByteSource {
 public:
  explicit StringSource(std::string text) : text_(std::move(text)) {}
  size_t Read(char* buffer, size_t size) override {
    size_t n = std::min(size, text_.size() - position_);
    text_.copy(buffer, n, position_);
    position_ += n;
    return n;
  }

 private:
  std::string text_;
  size_t position_ = 0;
};

// The messages the server wrote, parsed; the test fails on a frame that does not parse.
std::vector<llvm::json::Value> Messages(const std::string& stream) {
  std::vector<llvm::json::Value> messages;
  StringSource source(stream);
  MessageReader reader(source);
  for (Frame frame = reader.Next(); frame.status != Frame::Status::kEnd; frame = reader.Next()) {
    EXPECT_EQ(frame.status, Frame::Status::kMessage);
    llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(frame.body);
    if (!parsed) {
      ADD_FAILURE() << llvm::toString(parsed.takeError());
      continue;
    }
    messages.push_back(std::move(*parsed));
  }
  return messages;
}

class Session {
 public:
  Session() : server_(sink_, TheStdlib(), ServerOptions{"https://docs.example/reference/", ""}) {}

  // Sends `message` and returns what the server wrote in answer.
  std::vector<llvm::json::Value> Send(const std::string& message) {
    sink_.text.clear();
    server_.HandleMessage(message);
    return Messages(sink_.text);
  }
  std::vector<llvm::json::Value> Request(int id, const std::string& method, const std::string& params) {
    return Send("{\"jsonrpc\":\"2.0\",\"id\":" + std::to_string(id) + ",\"method\":\"" + method +
                "\",\"params\":" + params + "}");
  }
  std::vector<llvm::json::Value> Notify(const std::string& method, const std::string& params) {
    return Send("{\"jsonrpc\":\"2.0\",\"method\":\"" + method + "\",\"params\":" + params + "}");
  }
  void Initialize() { ASSERT_EQ(Request(1, "initialize", "{\"capabilities\":{}}").size(), 1u); }
  Server& server() { return server_; }

 private:
  StringSink sink_;
  Server server_;
};

int64_t ErrorCodeOf(const llvm::json::Value& message) {
  const llvm::json::Object* error = message.getAsObject()->getObject("error");
  return error ? error->getInteger("code").getValueOr(0) : 0;
}

std::string OpenParams(const std::string& uri, const std::string& text) {
  std::string escaped;
  llvm::raw_string_ostream stream(escaped);
  stream << llvm::json::Value(text);
  stream.flush();
  return "{\"textDocument\":{\"uri\":\"" + uri +
         "\",\"languageId\":\"accel\",\"version\":1,\"text\":" + escaped + "}}";
}

TEST(Server, RefusesRequestsBeforeInitialize) {
  Session session;
  std::vector<llvm::json::Value> answer = session.Request(7, "textDocument/hover", "{}");
  ASSERT_EQ(answer.size(), 1u);
  EXPECT_EQ(ErrorCodeOf(answer[0]), -32002);
  EXPECT_EQ(answer[0].getAsObject()->getInteger("id").getValueOr(-1), 7);
  // Notifications before initialize are dropped silently.
  EXPECT_TRUE(session.Notify("textDocument/didOpen", OpenParams("file:///t.accel", "job j {}")).empty());
}

TEST(Server, AnswersMalformedMessagesWithJsonRpcErrors) {
  Session session;
  session.Initialize();
  std::vector<llvm::json::Value> answer = session.Send("{not json");
  ASSERT_EQ(answer.size(), 1u);
  EXPECT_EQ(ErrorCodeOf(answer[0]), -32700);
  const llvm::json::Value* id = answer[0].getAsObject()->get("id");
  ASSERT_NE(id, nullptr);
  EXPECT_EQ(*id, llvm::json::Value(nullptr));
  EXPECT_EQ(ErrorCodeOf(session.Send("[1,2]")[0]), -32600);
  EXPECT_EQ(ErrorCodeOf(session.Send("{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"x\"}")[0]), -32600);
  EXPECT_EQ(ErrorCodeOf(session.Request(2, "no/such/method", "{}")[0]), -32601);
  // Unknown notifications are ignored.
  EXPECT_TRUE(session.Notify("no/such/notification", "{}").empty());
  // Params of the wrong shape name what was wrong.
  std::vector<llvm::json::Value> bad =
      session.Request(3, "textDocument/hover", "{\"textDocument\":{\"uri\":5}}");
  ASSERT_EQ(ErrorCodeOf(bad[0]), -32602);
  EXPECT_EQ(bad[0].getAsObject()->getObject("error")->getString("message"),
            llvm::StringRef("params.textDocument.uri: expected a string"));
  EXPECT_EQ(ErrorCodeOf(session.Request(4, "textDocument/hover", "[1]")[0]), -32602);
  EXPECT_EQ(ErrorCodeOf(session.Request(5, "textDocument/hover",
                                        "{\"textDocument\":{\"uri\":\"file:///nope.accel\"},"
                                        "\"position\":{\"line\":0,\"character\":0}}")[0]),
            -32602);
  EXPECT_EQ(ErrorCodeOf(session.Request(6, "initialize", "{}")[0]), -32600);
}

TEST(Server, ExitsWithZeroOnlyAfterShutdown) {
  Session clean;
  clean.Initialize();
  std::vector<llvm::json::Value> answer = clean.Request(2, "shutdown", "null");
  ASSERT_EQ(answer.size(), 1u);
  const llvm::json::Value* result = answer[0].getAsObject()->get("result");
  ASSERT_NE(result, nullptr) << "shutdown with null params must succeed";
  EXPECT_EQ(*result, llvm::json::Value(nullptr));
  EXPECT_EQ(ErrorCodeOf(clean.Request(3, "textDocument/hover", "{}")[0]), -32600);
  EXPECT_FALSE(clean.server().exited());
  clean.Notify("exit", "null");
  EXPECT_TRUE(clean.server().exited());
  EXPECT_EQ(clean.server().exit_code(), 0);

  Session abrupt;
  abrupt.Initialize();
  abrupt.Notify("exit", "{}");
  EXPECT_TRUE(abrupt.server().exited());
  EXPECT_EQ(abrupt.server().exit_code(), 1);
}

TEST(Server, ServeStopsAtEndOfInputAndAnswersBadFrames) {
  StringSink out;
  StringSource in("Content-Length: nope\r\n\r\n" +
                  FrameMessage("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"shutdown\"}"));
  EXPECT_EQ(Serve(in, out, TheStdlib(), {}), 1);
  std::vector<llvm::json::Value> messages = Messages(out.text);
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(ErrorCodeOf(messages[0]), -32600);
  EXPECT_EQ(ErrorCodeOf(messages[1]), -32002);
}

TEST(Server, PublishesCheckDiagnosticsWithCodesLinksAndFixes) {
  Session session;
  session.Initialize();
  // The é before the typo moves it by one UTF-16 unit but two bytes.
  std::string spec =
      "job j {\n"
      "  output { dir = \"\xc3\xa9\" }\n"
      "  accelerator { mixed_precison = bf16 }\n"
      "  model = MLP { inputs = 4; outputs = 1 }\n"
      "  data = SyntheticRegression { samples = 8; features = 4; batch_size = 2 }\n"
      "  train { steps = 1; optimizer = AdamW { lr = 0.1 } }\n"
      "}\n";
  std::vector<llvm::json::Value> published =
      session.Notify("textDocument/didOpen", OpenParams("file:///w/t.accel", spec));
  ASSERT_EQ(published.size(), 1u);
  const llvm::json::Object* params = published[0].getAsObject()->getObject("params");
  ASSERT_NE(params, nullptr);
  const llvm::json::Array* diagnostics = params->getArray("diagnostics");
  ASSERT_NE(diagnostics, nullptr);
  const llvm::json::Object* typo = nullptr;
  for (const llvm::json::Value& d : *diagnostics) {
    if (d.getAsObject()->getString("code") == llvm::StringRef("A2003")) typo = d.getAsObject();
  }
  ASSERT_NE(typo, nullptr);
  EXPECT_EQ(typo->getString("source"), llvm::StringRef("accelc"));
  EXPECT_EQ(typo->getInteger("severity").getValueOr(-1), 1);
  EXPECT_EQ(typo->getObject("codeDescription")->getString("href"),
            llvm::StringRef("https://docs.example/reference/diagnostics.md#a2003"));
  const llvm::json::Object* start = typo->getObject("range")->getObject("start");
  EXPECT_EQ(start->getInteger("line").getValueOr(-1), 2);
  EXPECT_EQ(start->getInteger("character").getValueOr(-1), 16);

  std::vector<llvm::json::Value> actions = session.Request(
      2, "textDocument/codeAction",
      "{\"textDocument\":{\"uri\":\"file:///w/t.accel\"},\"range\":{\"start\":{\"line\":2,\"character\":20},"
      "\"end\":{\"line\":2,\"character\":20}},\"context\":{\"diagnostics\":[]}}");
  const llvm::json::Array* list = actions[0].getAsObject()->getArray("result");
  ASSERT_NE(list, nullptr);
  ASSERT_EQ(list->size(), 1u);
  const llvm::json::Object* action = (*list)[0].getAsObject();
  EXPECT_EQ(action->getString("kind"), llvm::StringRef("quickfix"));
  const llvm::json::Array* edits =
      action->getObject("edit")->getObject("changes")->getArray("file:///w/t.accel");
  ASSERT_NE(edits, nullptr);
  EXPECT_EQ((*edits)[0].getAsObject()->getString("newText"), llvm::StringRef("mixed_precision"));

  // The fixed text has no diagnostics; closing clears them.
  std::vector<llvm::json::Value> fixed = session.Notify(
      "textDocument/didChange",
      "{\"textDocument\":{\"uri\":\"file:///w/t.accel\",\"version\":2},\"contentChanges\":[{\"range\":"
      "{\"start\":{\"line\":2,\"character\":16},\"end\":{\"line\":2,\"character\":30}},\"text\":\"mixed_"
      "precision\"}]}");
  ASSERT_EQ(fixed.size(), 1u);
  EXPECT_TRUE(fixed[0].getAsObject()->getObject("params")->getArray("diagnostics")->empty());
  EXPECT_EQ(fixed[0].getAsObject()->getObject("params")->getInteger("version").getValueOr(-1), 2);
  std::vector<llvm::json::Value> closed =
      session.Notify("textDocument/didClose", "{\"textDocument\":{\"uri\":\"file:///w/t.accel\"}}");
  ASSERT_EQ(closed.size(), 1u);
  EXPECT_TRUE(closed[0].getAsObject()->getObject("params")->getArray("diagnostics")->empty());
}

TEST(Server, HoversCompletesAndFormats) {
  Session session;
  session.Initialize();
  std::string spec = "job j {\n  accelerator {\n    mixed_precision = bf16\n    \n  }\n}\n";
  session.Notify("textDocument/didOpen", OpenParams("file:///w/h.accel", spec));
  std::string at = "{\"textDocument\":{\"uri\":\"file:///w/h.accel\"},\"position\":";
  std::vector<llvm::json::Value> hover =
      session.Request(2, "textDocument/hover", at + "{\"line\":2,\"character\":6}}");
  const llvm::json::Object* result = hover[0].getAsObject()->getObject("result");
  ASSERT_NE(result, nullptr);
  std::string text = result->getObject("contents")->getString("value")->str();
  EXPECT_NE(text.find("Accelerator.mixed_precision: PrecisionType?"), std::string::npos) << text;
  EXPECT_NE(text.find("ACCELERATE_MIXED_PRECISION"), std::string::npos) << text;
  EXPECT_NE(text.find("config-file key: `mixed_precision`"), std::string::npos) << text;

  // The rules of the record that read the field are listed with their ids.
  session.Notify(
      "textDocument/didOpen",
      OpenParams("file:///w/r.accel", "job j {\n  accelerator.dataloader_config.data_seed = 1\n}\n"));
  std::vector<llvm::json::Value> rule_hover = session.Request(
      7, "textDocument/hover",
      "{\"textDocument\":{\"uri\":\"file:///w/r.accel\"},\"position\":{\"line\":1,\"character\":34}}");
  const llvm::json::Object* rule_result = rule_hover[0].getAsObject()->getObject("result");
  ASSERT_NE(rule_result, nullptr);
  std::string rule_text = rule_result->getObject("contents")->getString("value")->str();
  EXPECT_NE(rule_text.find("DataLoaderConfiguration.data_seed"), std::string::npos) << rule_text;
  EXPECT_NE(rule_text.find("- rule `DL-006`"), std::string::npos) << rule_text;

  std::vector<llvm::json::Value> fields =
      session.Request(3, "textDocument/completion", at + "{\"line\":3,\"character\":4}}");
  std::vector<std::string> labels;
  for (const llvm::json::Value& item : *fields[0].getAsObject()->getObject("result")->getArray("items")) {
    labels.push_back(item.getAsObject()->getString("label")->str());
  }
  EXPECT_NE(std::find(labels.begin(), labels.end(), "seed"), labels.end());
  // Already set in this block.
  EXPECT_EQ(std::find(labels.begin(), labels.end(), "mixed_precision"), labels.end());

  std::vector<llvm::json::Value> members =
      session.Request(4, "textDocument/completion", at + "{\"line\":2,\"character\":22}}");
  labels.clear();
  for (const llvm::json::Value& item : *members[0].getAsObject()->getObject("result")->getArray("items")) {
    labels.push_back(item.getAsObject()->getString("label")->str());
  }
  EXPECT_EQ(labels, (std::vector<std::string>{"no", "fp8", "fp16", "bf16"}));

  std::vector<llvm::json::Value> formatted = session.Request(
      5, "textDocument/formatting", "{\"textDocument\":{\"uri\":\"file:///w/h.accel\"},\"options\":{}}");
  const llvm::json::Array* edits = formatted[0].getAsObject()->getArray("result");
  ASSERT_NE(edits, nullptr);
  ASSERT_EQ(edits->size(), 1u);
  EXPECT_EQ((*edits)[0].getAsObject()->getString("newText"),
            llvm::StringRef("job j {\n  accelerator { mixed_precision = bf16 }\n}\n"));

  // A file that does not parse is not formatted.
  session.Notify("textDocument/didOpen", OpenParams("file:///w/broken.accel", "job j { a = }"));
  std::vector<llvm::json::Value> none = session.Request(
      6, "textDocument/formatting", "{\"textDocument\":{\"uri\":\"file:///w/broken.accel\"},\"options\":{}}");
  EXPECT_TRUE(none[0].getAsObject()->getArray("result")->empty());
}

}  // namespace
}  // namespace accel::lsp

namespace accel::lsp {
namespace {

// The result in the one answer to a request (a copy: the answer is a temporary), or a failure.
llvm::json::Value ResultOf(const std::vector<llvm::json::Value>& answer) {
  if (answer.size() != 1 || answer[0].getAsObject()->get("result") == nullptr) {
    ADD_FAILURE() << "no result";
    return nullptr;
  }
  return *answer[0].getAsObject()->get("result");
}

std::string Position(const std::string& uri, int line, int character) {
  return "{\"textDocument\":{\"uri\":\"" + uri + "\"},\"position\":{\"line\":" + std::to_string(line) +
         ",\"character\":" + std::to_string(character) + "}}";
}

TEST(Server, ServesYamlConfigsAsCheckSeesThem) {
  Session session;
  session.Initialize();
  std::string uri = "file:///w/c.yaml";
  std::vector<llvm::json::Value> published =
      session.Notify("textDocument/didOpen",
                     OpenParams(uri,
                                "distributed_type: MULTI_GPU\nmixed_precison: bf16\nnum_processes: 2\n"
                                "# accelc-ignore[CMP-005]: x\n"));
  const llvm::json::Array* diagnostics =
      published[0].getAsObject()->getObject("params")->getArray("diagnostics");
  ASSERT_NE(diagnostics, nullptr);
  // What `accelc check c.yaml` prints: the typo, and the suppression that matches nothing.
  ASSERT_EQ(diagnostics->size(), 2u);
  EXPECT_EQ((*diagnostics)[0].getAsObject()->getString("code"), llvm::StringRef("A2003"));
  EXPECT_EQ((*diagnostics)[1].getAsObject()->getString("code"), llvm::StringRef("A2018"));
  EXPECT_EQ((*diagnostics)[1].getAsObject()->getInteger("severity").getValueOr(-1), 2);

  llvm::json::Value hover_value = ResultOf(session.Request(2, "textDocument/hover", Position(uri, 0, 3)));
  const llvm::json::Object* hover = hover_value.getAsObject();
  ASSERT_NE(hover, nullptr);
  EXPECT_NE(hover->getObject("contents")->getString("value")->str().find("ClusterConfig.distributed_type"),
            std::string::npos);
  // A code in a suppression comment explains itself.
  llvm::json::Value code_value = ResultOf(session.Request(3, "textDocument/hover", Position(uri, 3, 18)));
  const llvm::json::Object* code = code_value.getAsObject();
  ASSERT_NE(code, nullptr);
  EXPECT_NE(code->getObject("contents")->getString("value")->str().find("CMP-005"), std::string::npos);

  // Keys complete by config-file key, without the ones set; values by serialized enum value.
  session.Notify("textDocument/didChange",
                 "{\"textDocument\":{\"uri\":\"" + uri +
                     "\",\"version\":2},\"contentChanges\":[{\"text\":\"distributed_type: MULTI_GPU\\n"
                     "mixed_precision: \\n\\n\"}]}");
  std::vector<std::string> keys;
  llvm::json::Value key_items = ResultOf(session.Request(4, "textDocument/completion", Position(uri, 2, 0)));
  for (const llvm::json::Value& item : *key_items.getAsObject()->getArray("items")) {
    keys.push_back(item.getAsObject()->getString("label")->str());
  }
  EXPECT_NE(std::find(keys.begin(), keys.end(), "num_processes"), keys.end());
  EXPECT_NE(std::find(keys.begin(), keys.end(), "deepspeed_config"), keys.end());
  EXPECT_EQ(std::find(keys.begin(), keys.end(), "distributed_type"), keys.end());
  std::vector<std::string> values;
  llvm::json::Value value_items =
      ResultOf(session.Request(5, "textDocument/completion", Position(uri, 1, 17)));
  for (const llvm::json::Value& item : *value_items.getAsObject()->getArray("items")) {
    values.push_back(item.getAsObject()->getString("label")->str());
  }
  EXPECT_EQ(values, (std::vector<std::string>{"no", "fp8", "fp16", "bf16"}));
}

TEST(Server, LinksNotesAndDefinitionsToTheirFiles) {
  Session session;
  session.Initialize();
  // Without a stdlib folder, stdlib locations use the accel-stdlib scheme.
  std::string uri = "file:///w/missing.accel";
  std::vector<llvm::json::Value> published =
      session.Notify("textDocument/didOpen", OpenParams(uri, "job j {\n}\n"));
  const llvm::json::Array* diagnostics =
      published[0].getAsObject()->getObject("params")->getArray("diagnostics");
  ASSERT_NE(diagnostics, nullptr);
  ASSERT_FALSE(diagnostics->empty());
  const llvm::json::Object* missing = (*diagnostics)[0].getAsObject();
  EXPECT_EQ(missing->getString("code"), llvm::StringRef("A3004"));
  const llvm::json::Array* related = missing->getArray("relatedInformation");
  ASSERT_NE(related, nullptr);
  EXPECT_EQ((*related)[0].getAsObject()->getObject("location")->getString("uri"),
            llvm::StringRef("accel-stdlib:///workload.accel"));

  // `extends` and `import` lead to the files the driver resolved.
  std::string dir = std::string(ACCEL_SOURCE_DIR) + "/tests/lit/compose";
  std::string spec_uri = "file://" + dir + "/extends_copy.accel";
  session.Notify(
      "textDocument/didOpen",
      OpenParams(spec_uri,
                 "import \"Inputs/base.accel\"\njob child extends wide {\n  train { steps = 20 }\n}\n"));
  llvm::json::Value base_value =
      ResultOf(session.Request(2, "textDocument/definition", Position(spec_uri, 1, 21)));
  const llvm::json::Object* base = base_value.getAsObject();
  ASSERT_NE(base, nullptr);
  EXPECT_EQ(base->getString("uri"), llvm::StringRef("file://" + dir + "/Inputs/base.accel"));
  EXPECT_EQ(base->getObject("range")->getObject("start")->getInteger("line").getValueOr(-1), 25);
  llvm::json::Value import_value =
      ResultOf(session.Request(3, "textDocument/definition", Position(spec_uri, 0, 12)));
  const llvm::json::Object* import = import_value.getAsObject();
  ASSERT_NE(import, nullptr);
  EXPECT_EQ(import->getString("uri"), llvm::StringRef("file://" + dir + "/Inputs/base.accel"));
  // A field leads to its stdlib declaration.
  llvm::json::Value field_value =
      ResultOf(session.Request(4, "textDocument/definition", Position(spec_uri, 2, 11)));
  const llvm::json::Object* field = field_value.getAsObject();
  ASSERT_NE(field, nullptr);
  EXPECT_EQ(field->getString("uri"), llvm::StringRef("accel-stdlib:///workload.accel"));
}

TEST(Server, CompletesRecordTypesWithTheirRequiredFields) {
  Session session;
  session.Initialize();
  std::string uri = "file:///w/m.accel";
  session.Notify("textDocument/didOpen", OpenParams(uri, "job j {\n  model = \n}\n"));
  llvm::json::Value items = ResultOf(session.Request(2, "textDocument/completion", Position(uri, 1, 10)));
  std::map<std::string, std::string> snippets;
  for (const llvm::json::Value& item : *items.getAsObject()->getArray("items")) {
    const llvm::json::Object* object = item.getAsObject();
    EXPECT_EQ(object->getInteger("insertTextFormat").getValueOr(-1), 2);
    snippets[object->getString("label")->str()] = object->getString("insertText")->str();
  }
  // `model` is `MLP | Transformer | TorchScript`: one item per record, required fields as stops.
  ASSERT_EQ(snippets.size(), 3u);
  EXPECT_EQ(snippets["MLP"], "MLP {\n  inputs = ${1}\n}");
  EXPECT_EQ(snippets["TorchScript"], "TorchScript {\n  path = ${1}\n}");
}

}  // namespace
}  // namespace accel::lsp
