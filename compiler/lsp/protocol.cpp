#include "compiler/lsp/protocol.h"

#include <limits>

namespace accel::lsp {
namespace {

llvm::Error Invalid(llvm::StringRef where, llvm::StringRef what) {
  return llvm::make_error<ProtocolError>(ErrorCode::kInvalidParams, (where + ": " + what).str());
}

llvm::Expected<uint32_t> GetUnsigned(const llvm::json::Object& object, llvm::StringRef key,
                                     llvm::StringRef where) {
  auto value = object.getInteger(key);
  if (!value) return Invalid((where + "." + key).str(), "expected an integer");
  if (*value < 0 || *value > std::numeric_limits<uint32_t>::max()) {
    return Invalid((where + "." + key).str(), "out of range");
  }
  return static_cast<uint32_t>(*value);
}

}  // namespace

llvm::Expected<std::string> GetString(const llvm::json::Object& object, llvm::StringRef key,
                                      llvm::StringRef where) {
  auto value = object.getString(key);
  if (!value) return Invalid((where + "." + key).str(), "expected a string");
  return value->str();
}

llvm::Expected<const llvm::json::Object*> GetObject(const llvm::json::Object& object, llvm::StringRef key,
                                                    llvm::StringRef where) {
  const llvm::json::Object* value = object.getObject(key);
  if (value == nullptr) return Invalid((where + "." + key).str(), "expected an object");
  return value;
}

llvm::Expected<Position> GetPosition(const llvm::json::Object& object, llvm::StringRef key,
                                     llvm::StringRef where) {
  std::string path = (where + "." + key).str();
  llvm::Expected<const llvm::json::Object*> position = GetObject(object, key, where);
  if (!position) return position.takeError();
  llvm::Expected<uint32_t> line = GetUnsigned(**position, "line", path);
  if (!line) return line.takeError();
  llvm::Expected<uint32_t> character = GetUnsigned(**position, "character", path);
  if (!character) return character.takeError();
  return Position{*line, *character};
}

llvm::Expected<Range> GetRange(const llvm::json::Object& object, llvm::StringRef key, llvm::StringRef where) {
  std::string path = (where + "." + key).str();
  llvm::Expected<const llvm::json::Object*> range = GetObject(object, key, where);
  if (!range) return range.takeError();
  llvm::Expected<Position> start = GetPosition(**range, "start", path);
  if (!start) return start.takeError();
  llvm::Expected<Position> end = GetPosition(**range, "end", path);
  if (!end) return end.takeError();
  return Range{*start, *end};
}

llvm::Expected<std::string> GetDocumentUri(const llvm::json::Object& params) {
  llvm::Expected<const llvm::json::Object*> document = GetObject(params, "textDocument", "params");
  if (!document) return document.takeError();
  return GetString(**document, "uri", "params.textDocument");
}

llvm::json::Value ToJson(Position position) {
  return llvm::json::Object{{"line", position.line}, {"character", position.character}};
}

llvm::json::Value ToJson(const Range& range) {
  return llvm::json::Object{{"start", ToJson(range.start)}, {"end", ToJson(range.end)}};
}

}  // namespace accel::lsp
