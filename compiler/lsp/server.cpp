#include "compiler/lsp/server.h"

#include <csignal>

#include <fmt/format.h>

#include "compiler/lsp/features.h"
#include "compiler/lsp/protocol.h"
#include "compiler/lsp/uri.h"
#include "compiler/plan/plan.h"

namespace accel::lsp {
namespace {

constexpr const char* kServerVersion = "0.1.0";

llvm::json::Value Capabilities() {
  return llvm::json::Object{
      {"positionEncoding", "utf-16"},
      {"textDocumentSync",
       llvm::json::Object{{"openClose", true},
                          {"change", static_cast<int>(TextDocumentSyncKind::kIncremental)},
                          {"save", llvm::json::Object{{"includeText", false}}}}},
      {"hoverProvider", true},
      {"completionProvider", llvm::json::Object{{"triggerCharacters", llvm::json::Array{".", "="}}}},
      {"definitionProvider", true},
      {"documentSymbolProvider", true},
      {"documentFormattingProvider", true},
      {"codeActionProvider", llvm::json::Object{{"codeActionKinds", llvm::json::Array{"quickfix"}}}},
  };
}

// The message of an error, consumed; a ProtocolError keeps its code.
std::pair<ErrorCode, std::string> Describe(llvm::Error error) {
  ErrorCode code = ErrorCode::kInternalError;
  std::string message;
  llvm::handleAllErrors(
      std::move(error),
      [&](const ProtocolError& e) {
        code = e.code();
        message = e.text();
      },
      [&](const llvm::ErrorInfoBase& e) { message = e.message(); });
  return {code, message};
}

llvm::Error NotOpen(const std::string& uri) {
  return llvm::make_error<ProtocolError>(ErrorCode::kInvalidParams, fmt::format("`{}` is not open", uri));
}

}  // namespace

Server::Server(ByteSink& out, const pipeline::Stdlib& stdlib, ServerOptions options)
    : out_(out), stdlib_(stdlib), options_(std::move(options)) {}

void Server::Send(llvm::json::Value message) {
  std::string body;
  llvm::raw_string_ostream stream(body);
  stream << message;
  stream.flush();
  out_.Write(FrameMessage(body));
}

void Server::ReplyError(const llvm::json::Value& id, ErrorCode code, const std::string& message) {
  Send(llvm::json::Object{
      {"jsonrpc", "2.0"},
      {"id", id},
      {"error", llvm::json::Object{{"code", static_cast<int>(code)}, {"message", message}}}});
}

void Server::Reply(const llvm::json::Value& id, llvm::Expected<llvm::json::Value> result) {
  if (!result) {
    auto [code, message] = Describe(result.takeError());
    ReplyError(id, code, message);
    return;
  }
  Send(llvm::json::Object{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(*result)}});
}

void Server::Notify(const std::string& method, llvm::json::Value params) {
  Send(llvm::json::Object{{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}});
}

void Server::Log(const std::string& message) {
  // MessageType.Log: clients keep it in their log, not in the user's face.
  Notify("window/logMessage", llvm::json::Object{{"type", 4}, {"message", message}});
}

void Server::HandleBadFrame(const std::string& problem) {
  ReplyError(nullptr, ErrorCode::kInvalidRequest, "unreadable message: " + problem);
}

void Server::HandleMessage(std::string_view body) {
  // llvm::json parses and frees recursively: a body nested 50,000 deep would overflow the stack.
  if (plan::JsonNestsDeeperThan(body, plan::kMaxJsonDepth)) {
    ReplyError(nullptr, ErrorCode::kParseError,
               fmt::format("the message nests objects and arrays deeper than {} levels", plan::kMaxJsonDepth));
    return;
  }
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(llvm::StringRef(body.data(), body.size()));
  if (!parsed) {
    ReplyError(nullptr, ErrorCode::kParseError, "invalid JSON: " + llvm::toString(parsed.takeError()));
    return;
  }
  const llvm::json::Object* message = parsed->getAsObject();
  if (message == nullptr) {
    ReplyError(nullptr, ErrorCode::kInvalidRequest, "a message must be a JSON object");
    return;
  }
  const llvm::json::Value* id = message->get("id");
  // JSON-RPC ids are numbers or strings; anything else cannot be answered by id.
  if (id != nullptr && id->kind() != llvm::json::Value::Number && id->kind() != llvm::json::Value::String) {
    ReplyError(nullptr, ErrorCode::kInvalidRequest, "`id` must be a number or a string");
    return;
  }
  auto method = message->getString("method");
  if (!method) {
    // A response to a request of ours (we send none) or nonsense; only the latter is answered.
    if (id != nullptr && (message->get("result") != nullptr || message->get("error") != nullptr)) return;
    ReplyError(id ? *id : nullptr, ErrorCode::kInvalidRequest, "a request needs a string `method`");
    return;
  }
  static const llvm::json::Object kNoParams;
  const llvm::json::Value* params_value = message->get("params");
  // `null` params are absent ones: some clients send them for `shutdown` and `exit`.
  const llvm::json::Object* params =
      params_value == nullptr || params_value->kind() == llvm::json::Value::Null
          ? &kNoParams
          : params_value->getAsObject();
  if (params == nullptr) {
    if (id != nullptr) ReplyError(*id, ErrorCode::kInvalidParams, "`params` must be an object");
    return;
  }
  if (id != nullptr) {
    HandleRequest(*id, method->str(), *params);
  } else {
    HandleNotification(method->str(), *params);
  }
}

void Server::HandleRequest(const llvm::json::Value& id, const std::string& method,
                           const llvm::json::Object& params) {
  if (method == "initialize") {
    if (initialized_) return ReplyError(id, ErrorCode::kInvalidRequest, "`initialize` was already received");
    initialized_ = true;
    return Reply(id, Initialize(params));
  }
  if (!initialized_)
    return ReplyError(id, ErrorCode::kServerNotInitialized, "the first request must be `initialize`");
  if (shutdown_) return ReplyError(id, ErrorCode::kInvalidRequest, "the server is shutting down");
  if (method == "shutdown") {
    shutdown_ = true;
    return Reply(id, llvm::json::Value(nullptr));
  }
  Reply(id, Dispatch(method, params));
}

llvm::Expected<llvm::json::Value> Server::Dispatch(const std::string& method,
                                                   const llvm::json::Object& params) {
  using Feature = llvm::Expected<llvm::json::Value> (*)(const FeatureContext&, const llvm::json::Object&);
  static const std::map<std::string, Feature, std::less<>> kFeatures = {
      {"textDocument/hover", Hover},           {"textDocument/completion", Completion},
      {"textDocument/definition", Definition}, {"textDocument/documentSymbol", DocumentSymbols},
      {"textDocument/formatting", Formatting}, {"textDocument/codeAction", CodeActions},
  };
  auto feature = kFeatures.find(method);
  if (feature == kFeatures.end()) {
    return llvm::make_error<ProtocolError>(ErrorCode::kMethodNotFound,
                                           fmt::format("unknown method `{}`", method));
  }
  llvm::Expected<std::string> uri = GetDocumentUri(params);
  if (!uri) return uri.takeError();
  Document* document = documents_.Find(*uri);
  auto analysis = analyses_.find(*uri);
  if (document == nullptr || analysis == analyses_.end()) return NotOpen(*uri);
  FeatureContext context{*document, *analysis->second, stdlib_.schema(), *links_};
  return feature->second(context, params);
}

void Server::HandleNotification(const std::string& method, const llvm::json::Object& params) {
  if (method == "exit") {
    exited_ = true;
    return;
  }
  // Before `initialize`, notifications are dropped (LSP: all but `exit`).
  if (!initialized_ || shutdown_) return;
  llvm::Error error = llvm::Error::success();
  if (method == "textDocument/didOpen") {
    error = DidOpen(params);
  } else if (method == "textDocument/didChange") {
    error = DidChange(params);
  } else if (method == "textDocument/didClose") {
    error = DidClose(params);
  }
  // didSave needs nothing: the text was compiled on every change. Other notifications
  // (`initialized`, `$/cancelRequest`, `$/setTrace`, ...) have nothing to do either.
  if (error) Log(fmt::format("{}: {}", method, Describe(std::move(error)).second));
}

llvm::json::Value Server::Initialize(const llvm::json::Object& params) {
  std::string reference_base = options_.reference_base;
  if (const llvm::json::Object* init = params.getObject("initializationOptions")) {
    if (auto url = init->getString("referenceUrl")) reference_base = url->str();
  }
  links_ = std::make_unique<Links>(reference_base, options_.stdlib_dir, stdlib_);
  return llvm::json::Object{
      {"capabilities", Capabilities()},
      {"serverInfo", llvm::json::Object{{"name", "accelc"}, {"version", kServerVersion}}}};
}

llvm::Error Server::DidOpen(const llvm::json::Object& params) {
  llvm::Expected<const llvm::json::Object*> item = GetObject(params, "textDocument", "params");
  if (!item) return item.takeError();
  llvm::Expected<std::string> uri = GetString(**item, "uri", "params.textDocument");
  if (!uri) return uri.takeError();
  llvm::Expected<std::string> text = GetString(**item, "text", "params.textDocument");
  if (!text) return text.takeError();
  // A URI that is not a local file (`untitled:`) compiles under its own name; its suffix, if
  // any, still picks the format.
  std::optional<std::string> path = PathFromUri(*uri);
  int64_t version = (*item)->getInteger("version").getValueOr(0);
  Refresh(documents_.Open(*uri, path ? *path : *uri, version, std::move(*text)));
  return llvm::Error::success();
}

llvm::Error Server::DidChange(const llvm::json::Object& params) {
  llvm::Expected<std::string> uri = GetDocumentUri(params);
  if (!uri) return uri.takeError();
  const llvm::json::Array* changes = params.getArray("contentChanges");
  if (changes == nullptr)
    return llvm::make_error<ProtocolError>(ErrorCode::kInvalidParams,
                                           "params.contentChanges: expected an array");
  std::vector<TextChange> edits;
  for (size_t i = 0; i < changes->size(); ++i) {
    const llvm::json::Object* change = (*changes)[i].getAsObject();
    std::string where = fmt::format("params.contentChanges[{}]", i);
    if (change == nullptr)
      return llvm::make_error<ProtocolError>(ErrorCode::kInvalidParams, where + ": expected an object");
    llvm::Expected<std::string> text = GetString(*change, "text", where);
    if (!text) return text.takeError();
    TextChange edit{std::nullopt, std::move(*text)};
    if (change->get("range") != nullptr) {
      llvm::Expected<Range> range = GetRange(*change, "range", where);
      if (!range) return range.takeError();
      edit.range = *range;
    }
    edits.push_back(std::move(edit));
  }
  const llvm::json::Object* document = params.getObject("textDocument");
  int64_t version = document ? document->getInteger("version").getValueOr(0) : 0;
  Document* changed = documents_.Change(*uri, version, edits);
  if (changed == nullptr) return NotOpen(*uri);
  Refresh(*changed);
  return llvm::Error::success();
}

llvm::Error Server::DidClose(const llvm::json::Object& params) {
  llvm::Expected<std::string> uri = GetDocumentUri(params);
  if (!uri) return uri.takeError();
  if (!documents_.Close(*uri)) return NotOpen(*uri);
  analyses_.erase(*uri);
  // The editor keeps published diagnostics until told otherwise.
  Notify("textDocument/publishDiagnostics",
         llvm::json::Object{{"uri", *uri}, {"diagnostics", llvm::json::Array{}}});
  return llvm::Error::success();
}

void Server::Refresh(const Document& document) {
  std::unique_ptr<Analysis>& analysis = analyses_[document.uri];
  analysis = Analyze(document, stdlib_);
  FeatureContext context{document, *analysis, stdlib_.schema(), *links_};
  Notify("textDocument/publishDiagnostics", PublishDiagnostics(context));
}

int Serve(ByteSource& in, ByteSink& out, const pipeline::Stdlib& stdlib, const ServerOptions& options) {
  // A client that goes away must end the server through a failed write, not SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  Server server(out, stdlib, options);
  MessageReader reader(in);
  while (!server.exited()) {
    Frame frame = reader.Next();
    if (frame.status == Frame::Status::kEnd) break;
    if (frame.status == Frame::Status::kBadFrame) {
      server.HandleBadFrame(frame.problem);
      continue;
    }
    server.HandleMessage(frame.body);
  }
  return server.exit_code();
}

}  // namespace accel::lsp
