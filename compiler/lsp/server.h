#ifndef ACCEL_COMPILER_LSP_SERVER_H_
#define ACCEL_COMPILER_LSP_SERVER_H_

// `accelc lsp`: the JSON-RPC dispatcher, the server's lifecycle (initialize, shutdown, exit)
// and the documents it keeps. Entry header of compiler/lsp/.

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "llvm/Support/JSON.h"

#include "compiler/pipeline/stdlib.h"
#include "compiler/lsp/analysis.h"
#include "compiler/lsp/document_store.h"
#include "compiler/lsp/links.h"
#include "compiler/lsp/protocol.h"
#include "compiler/lsp/transport.h"

namespace accel::lsp {

struct ServerOptions {
  // The URL of the generated reference folder for diagnostics' codeDescription (links.h);
  // `initializationOptions.referenceUrl` overrides it. Empty: no links.
  std::string reference_base;
  // Where the embedded stdlib is written for go-to-definition (links.h).
  std::string stdlib_dir;
};

class Server {
 public:
  // `out` receives every response and notification, framed. `stdlib` must outlive the server.
  Server(ByteSink& out, const pipeline::Stdlib& stdlib, ServerOptions options);

  // Handles one message body: answers a request (with its result or a JSON-RPC error), acts
  // on a notification. Never throws; malformed input gets an error response with a null id.
  void HandleMessage(std::string_view body);

  // Answers a frame the transport refused (bad header, oversized body) with an error.
  void HandleBadFrame(const std::string& problem);

  // `exit` was received: stop reading. exit_code() is 0 after `shutdown`, else 1.
  bool exited() const { return exited_; }
  int exit_code() const { return shutdown_ ? 0 : 1; }

 private:
  void HandleRequest(const llvm::json::Value& id, const std::string& method,
                     const llvm::json::Object& params);
  void HandleNotification(const std::string& method, const llvm::json::Object& params);
  llvm::Expected<llvm::json::Value> Dispatch(const std::string& method, const llvm::json::Object& params);
  llvm::json::Value Initialize(const llvm::json::Object& params);
  llvm::Error DidOpen(const llvm::json::Object& params);
  llvm::Error DidChange(const llvm::json::Object& params);
  llvm::Error DidClose(const llvm::json::Object& params);
  // Compiles the document and publishes its diagnostics.
  void Refresh(const Document& document);

  void Send(llvm::json::Value message);
  void Reply(const llvm::json::Value& id, llvm::Expected<llvm::json::Value> result);
  void ReplyError(const llvm::json::Value& id, ErrorCode code, const std::string& message);
  void Notify(const std::string& method, llvm::json::Value params);
  void Log(const std::string& message);

  ByteSink& out_;
  const pipeline::Stdlib& stdlib_;
  ServerOptions options_;
  std::unique_ptr<Links> links_;
  DocumentStore documents_;
  std::map<std::string, std::unique_ptr<Analysis>> analyses_;
  bool initialized_ = false;
  bool shutdown_ = false;
  bool exited_ = false;
};

// Reads messages from `in` until `exit` or the end of input and answers them on `out`.
// Returns the process exit status: 0 after `shutdown`, 1 otherwise (LSP's rule for `exit`).
int Serve(ByteSource& in, ByteSink& out, const pipeline::Stdlib& stdlib, const ServerOptions& options);

}  // namespace accel::lsp

#endif  // ACCEL_COMPILER_LSP_SERVER_H_
