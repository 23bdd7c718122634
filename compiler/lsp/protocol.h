#ifndef ACCEL_COMPILER_LSP_PROTOCOL_H_
#define ACCEL_COMPILER_LSP_PROTOCOL_H_

// The JSON shapes of LSP 3.17 the server reads and writes, and JSON-RPC's error codes.

#include <string>

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include "compiler/lsp/position.h"

namespace accel::lsp {

// JSON-RPC 2.0 and LSP error codes.
enum class ErrorCode {
  kParseError = -32700,
  kInvalidRequest = -32600,
  kMethodNotFound = -32601,
  kInvalidParams = -32602,
  kInternalError = -32603,
  kServerNotInitialized = -32002,
  kRequestFailed = -32803,
};

// A request that fails with a JSON-RPC error: handlers return it, the dispatcher answers it.
class ProtocolError : public llvm::ErrorInfo<ProtocolError> {
 public:
  inline static char ID = 0;
  ProtocolError(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}
  ErrorCode code() const { return code_; }
  const std::string& text() const { return message_; }
  void log(llvm::raw_ostream& os) const override { os << message_; }
  std::error_code convertToErrorCode() const override { return llvm::inconvertibleErrorCode(); }

 private:
  ErrorCode code_;
  std::string message_;
};

// Readers of params: each fails with an InvalidParams ProtocolError naming the JSON path that
// was wrong (`params.position.line: expected an integer`). `object` is the params object or a
// member of it, and `where` its path.
llvm::Expected<std::string> GetString(const llvm::json::Object& object, llvm::StringRef key,
                                      llvm::StringRef where);
llvm::Expected<const llvm::json::Object*> GetObject(const llvm::json::Object& object, llvm::StringRef key,
                                                    llvm::StringRef where);
llvm::Expected<Position> GetPosition(const llvm::json::Object& object, llvm::StringRef key,
                                     llvm::StringRef where);
llvm::Expected<Range> GetRange(const llvm::json::Object& object, llvm::StringRef key, llvm::StringRef where);
// `params.textDocument.uri`.
llvm::Expected<std::string> GetDocumentUri(const llvm::json::Object& params);

llvm::json::Value ToJson(Position position);
llvm::json::Value ToJson(const Range& range);

// Enumerations of the protocol the server uses.
enum class DiagnosticSeverity { kError = 1, kWarning = 2, kInformation = 3, kHint = 4 };
enum class CompletionItemKind { kField = 5, kValue = 12, kEnumMember = 20, kStruct = 22, kKeyword = 14 };
enum class SymbolKind { kModule = 2, kField = 8, kEnum = 10, kConstant = 14, kObject = 19, kStruct = 23 };
enum class TextDocumentSyncKind { kNone = 0, kFull = 1, kIncremental = 2 };
enum class InsertTextFormat { kPlainText = 1, kSnippet = 2 };

}  // namespace accel::lsp

#endif  // ACCEL_COMPILER_LSP_PROTOCOL_H_
