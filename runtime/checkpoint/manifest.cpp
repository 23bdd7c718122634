#include "runtime/checkpoint/manifest.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/checkpoint/json.h"
#include "runtime/support/error.h"

namespace accel::rt::checkpoint {
namespace {

bool IsHexDigest(std::string_view text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace

std::string InvalidFileName(std::string_view name) {
  if (name.empty()) return "an empty file name";
  if (name == "." || name == "..") return "not a file name";
  if (name.find('/') != std::string_view::npos || name.find('\0') != std::string_view::npos) {
    return "not a plain file name (it has `/` or a NUL byte)";
  }
  if (name == kManifestName) return "the manifest's own name";
  if (name.size() >= 4 && name.substr(name.size() - 4) == ".tmp") return "a name ending in `.tmp`";
  if (!IsValidUtf8(name)) return "not valid UTF-8";
  return "";
}

uint64_t ChunkCount(uint64_t size, uint64_t chunk_size) {
  if (chunk_size == 0 || size == 0) return 1;
  return size / chunk_size + (size % chunk_size != 0);
}

std::string EncodeManifest(const Manifest& manifest) {
  std::vector<const ManifestEntry*> files;
  for (const ManifestEntry& entry : manifest.files) files.push_back(&entry);
  std::sort(files.begin(), files.end(), [](const auto* a, const auto* b) { return a->name < b->name; });
  bool whole_files = manifest.chunk_size == 0;
  std::string out = "{\n  \"format\": ";
  AppendJsonString(out, kManifestFormat);
  out += fmt::format(",\n  \"version\": {},\n  \"iteration\": {},", manifest.version, manifest.iteration);
  if (!whole_files) out += fmt::format("\n  \"chunk_size\": {},", manifest.chunk_size);
  out += "\n  \"files\": {";
  for (size_t i = 0; i < files.size(); ++i) {
    out += i == 0 ? "\n    " : ",\n    ";
    AppendJsonString(out, files[i]->name);
    if (whole_files) {
      out += fmt::format(": {{\"size\": {}, \"sha256\": \"{}\"}}", files[i]->size,
                         files[i]->sha256.empty() ? "" : files[i]->sha256.front());
    } else {
      out += fmt::format(": {{\"size\": {}, \"sha256\": [\"{}\"]}}", files[i]->size,
                         fmt::join(files[i]->sha256, "\", \""));
    }
  }
  out += files.empty() ? "}\n}\n" : "\n  }\n}\n";
  return out;
}

namespace {

// A file's digests: version 1 has one string, version 2 a list of ChunkCount strings.
llvm::Expected<std::vector<std::string>> ParseDigests(const JsonValue* sha256, uint64_t size,
                                                      uint64_t chunk_size, const std::string& path,
                                                      const std::string& name) {
  if (chunk_size == 0) {
    if (sha256 == nullptr || sha256->kind != JsonValue::Kind::kString || !IsHexDigest(sha256->text)) {
      return Fail(path, fmt::format("files.`{}`.sha256 is not 64 lower-case hex digits", name));
    }
    return std::vector<std::string>{sha256->text};
  }
  if (sha256 == nullptr || sha256->kind != JsonValue::Kind::kArray) {
    return Fail(path, fmt::format("files.`{}`.sha256 is not a list of digests", name));
  }
  uint64_t expected = ChunkCount(size, chunk_size);
  if (sha256->items.size() != expected) {
    return Fail(
        path, fmt::format("files.`{}`.sha256 has {} digests, a file of {} bytes in pieces of {} has {}", name,
                          sha256->items.size(), size, chunk_size, expected));
  }
  std::vector<std::string> digests;
  for (const JsonValue& digest : sha256->items) {
    if (digest.kind != JsonValue::Kind::kString || !IsHexDigest(digest.text)) {
      return Fail(path,
                  fmt::format("files.`{}`.sha256[{}] is not 64 lower-case hex digits", name, digests.size()));
    }
    digests.push_back(digest.text);
  }
  return digests;
}

}  // namespace

llvm::Expected<Manifest> ParseManifest(std::string_view text, const std::string& path) {
  llvm::Expected<JsonValue> json = ParseJson(text);
  if (!json) return Fail(path, "invalid manifest JSON: " + llvm::toString(json.takeError()));
  if (json->kind != JsonValue::Kind::kObject) return Fail(path, "the manifest is not a JSON object");
  const JsonValue* format = json->Find("format");
  if (format == nullptr || format->kind != JsonValue::Kind::kString || format->text != kManifestFormat) {
    return Fail(path, fmt::format("`format` is not \"{}\"", kManifestFormat));
  }
  Manifest manifest;
  const JsonValue* version = json->Find("version");
  std::optional<uint64_t> version_number = version ? version->AsUnsigned() : std::nullopt;
  if (!version_number) return Fail(path, "`version` is not a non-negative integer");
  if (*version_number > kManifestVersion) {
    return Fail(path, fmt::format("written by a newer Accel: version {}, this build reads up to {}",
                                  *version_number, kManifestVersion));
  }
  manifest.version = *version_number;
  const JsonValue* iteration = json->Find("iteration");
  std::optional<uint64_t> iteration_number = iteration ? iteration->AsUnsigned() : std::nullopt;
  if (!iteration_number) return Fail(path, "`iteration` is not a non-negative integer");
  manifest.iteration = *iteration_number;
  manifest.chunk_size = 0;
  if (manifest.version >= 2) {
    const JsonValue* chunk_size = json->Find("chunk_size");
    std::optional<uint64_t> bytes = chunk_size ? chunk_size->AsUnsigned() : std::nullopt;
    if (!bytes || *bytes == 0) return Fail(path, "`chunk_size` is not a positive integer");
    manifest.chunk_size = *bytes;
  }
  const JsonValue* files = json->Find("files");
  if (files == nullptr || files->kind != JsonValue::Kind::kObject)
    return Fail(path, "`files` is not an object");
  // The strict parser already refused a repeated name.
  for (const auto& [name, entry] : files->members) {
    std::string invalid = InvalidFileName(name);
    if (!invalid.empty()) return Fail(path, fmt::format("files.`{}`: {}", name, invalid));
    const JsonValue* size = entry.Find("size");
    std::optional<uint64_t> bytes = size ? size->AsUnsigned() : std::nullopt;
    if (!bytes) return Fail(path, fmt::format("files.`{}`.size is not a non-negative integer", name));
    llvm::Expected<std::vector<std::string>> digests =
        ParseDigests(entry.Find("sha256"), *bytes, manifest.chunk_size, path, name);
    if (!digests) return digests.takeError();
    manifest.files.push_back({name, *bytes, std::move(*digests)});
  }
  return manifest;
}

}  // namespace accel::rt::checkpoint
