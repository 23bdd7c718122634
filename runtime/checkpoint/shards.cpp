#include "runtime/checkpoint/shards.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "runtime/checkpoint/atomic_file.h"
#include "runtime/checkpoint/json.h"

namespace accel::rt::checkpoint {
namespace {

llvm::Error SizeError(std::string_view text, const std::string& why) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "invalid max_shard_size `%s`: %s",
                                 std::string(text).c_str(), why.c_str());
}

std::string_view Strip(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// `12`, `1.5`, `1.`, `.5`: what Python's float() takes, less signs, exponents and `inf`.
bool IsPlainDecimal(std::string_view number) {
  size_t dot = number.find('.');
  std::string_view whole = number.substr(0, dot);
  std::string_view fraction = dot == std::string_view::npos ? std::string_view() : number.substr(dot + 1);
  auto digits = [](std::string_view s) { return std::all_of(s.begin(), s.end(), IsDigit); };
  return digits(whole) && digits(fraction) && whole.size() + fraction.size() > 0;
}

// Whether `name` is `{stem}-<digits>-of-<digits>.safetensors`: a shard of some earlier save.
bool IsShardName(std::string_view name, std::string_view stem) {
  constexpr std::string_view kSuffix = ".safetensors";
  if (name.size() <= stem.size() + kSuffix.size() || name.substr(0, stem.size()) != stem ||
      name.substr(name.size() - kSuffix.size()) != kSuffix) {
    return false;
  }
  std::string_view middle = name.substr(stem.size(), name.size() - stem.size() - kSuffix.size());
  if (middle.empty() || middle[0] != '-') return false;
  middle.remove_prefix(1);
  size_t of = middle.find("-of-");
  if (of == std::string_view::npos || of == 0 || of + 4 >= middle.size()) return false;
  std::string_view k = middle.substr(0, of), n = middle.substr(of + 4);
  return std::all_of(k.begin(), k.end(), IsDigit) && std::all_of(n.begin(), n.end(), IsDigit);
}

}  // namespace

llvm::Expected<uint64_t> ParseShardSize(std::string_view original) {
  std::string_view text = Strip(original);
  if (text.empty()) return SizeError(original, "empty");
  uint64_t bytes = 0;
  if (std::all_of(text.begin(), text.end(), IsDigit)) {
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), bytes);
    if (ec != std::errc() || end != text.data() + text.size()) return SizeError(original, "too large");
  } else {
    // Binary units first: `GiB` must not be read as a number ending in `iB`.
    double multiplier = 0;
    size_t unit_length = 0;
    std::string upper(text.size() >= 3 ? text.substr(text.size() - 3) : text);
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    constexpr std::pair<std::string_view, double> kBinary[] = {
        {"TIB", 1099511627776.0}, {"GIB", 1073741824.0}, {"MIB", 1048576.0}, {"KIB", 1024.0}};
    constexpr std::pair<std::string_view, double> kDecimal[] = {
        {"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}};
    for (const auto& [unit, factor] : kBinary) {
      if (upper == unit) multiplier = factor, unit_length = 3;
    }
    if (unit_length == 0 && text.size() >= 2) {
      std::string_view unit = text.substr(text.size() - 2);
      if (std::isupper(static_cast<unsigned char>(unit[0])) && unit[1] == 'b') {
        return SizeError(original,
                         fmt::format("`{}` is ambiguous (bits for Accelerate's convert_file_size_to_int, "
                                     "bytes for save_model); write `{}B`",
                                     unit, unit[0]));
      }
      for (const auto& [name, factor] : kDecimal) {
        if (upper.substr(upper.size() - 2) == name) multiplier = factor, unit_length = 2;
      }
    }
    if (unit_length == 0) {
      return SizeError(original,
                       "expected a number of bytes or a number with a unit TB, GB, MB, KB "
                       "(decimal, as save_model reads them) or TiB, GiB, MiB, KiB");
    }
    std::string number(Strip(text.substr(0, text.size() - unit_length)));
    if (!IsPlainDecimal(number)) return SizeError(original, fmt::format("`{}` is not a number", number));
    double value = 0;
    auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (ec != std::errc() || end != number.data() + number.size()) {
      return SizeError(original, fmt::format("`{}` is not a number", number));
    }
    // Python's int(value * multiplier): the same double product, truncated.
    double product = std::trunc(value * multiplier);
    if (!(product < 18446744073709551616.0)) return SizeError(original, "too large");
    bytes = static_cast<uint64_t>(product);
  }
  if (bytes == 0) return SizeError(original, "must be at least one byte");
  return bytes;
}

std::vector<ShardPlan> PlanShards(const std::vector<TensorRef>& tensors, uint64_t max_shard_size,
                                  std::string_view stem) {
  std::vector<ShardPlan> shards;
  ShardPlan current;
  for (size_t i = 0; i < tensors.size(); ++i) {
    uint64_t size = tensors[i].bytes.size();
    if (size > max_shard_size) {
      // The hub appends an oversized tensor's shard at once and keeps filling the current one.
      ShardPlan own;
      own.tensors.push_back(i);
      own.bytes = size;
      shards.push_back(std::move(own));
      continue;
    }
    if (current.bytes + size > max_shard_size) {
      shards.push_back(std::move(current));
      current = ShardPlan();
    }
    current.tensors.push_back(i);
    current.bytes += size;
  }
  if (!current.tensors.empty() || shards.empty()) shards.push_back(std::move(current));
  if (shards.size() == 1) {
    shards[0].file_name = fmt::format("{}.safetensors", stem);
  } else {
    for (size_t k = 0; k < shards.size(); ++k) {
      shards[k].file_name = fmt::format("{}-{:05d}-of-{:05d}.safetensors", stem, k + 1, shards.size());
    }
  }
  return shards;
}

std::string IndexFileName(std::string_view stem) { return fmt::format("{}.safetensors.index.json", stem); }

std::string EncodeShardIndex(const std::vector<TensorRef>& tensors, const std::vector<ShardPlan>& shards) {
  // sort_keys: byte order of UTF-8 is code point order, which is how Python sorts str keys.
  std::map<std::string_view, std::string_view> weight_map;
  uint64_t total_size = 0;
  for (const ShardPlan& shard : shards) {
    for (size_t index : shard.tensors) {
      weight_map[tensors[index].name] = shard.file_name;
      total_size += tensors[index].bytes.size();
    }
  }
  std::string out =
      fmt::format("{{\n  \"metadata\": {{\n    \"total_size\": {}\n  }},\n  \"weight_map\": ", total_size);
  if (weight_map.empty()) {
    out += "{}";
  } else {
    out += "{";
    bool first = true;
    for (const auto& [name, file] : weight_map) {
      out += first ? "\n    " : ",\n    ";
      first = false;
      AppendJsonString(out, name, /*ascii_only=*/true);
      out += ": ";
      AppendJsonString(out, file, /*ascii_only=*/true);
    }
    out += "\n  }";
  }
  out += "\n}\n";
  return out;
}

std::vector<CheckpointFile> EncodedShards::Files() const {
  std::vector<CheckpointFile> files;
  for (const auto& [name, encoded] : shards) files.push_back({name, encoded.Parts()});
  if (!index_name.empty()) files.push_back({index_name, {index}});
  return files;
}

llvm::Expected<EncodedShards> EncodeShards(const std::vector<TensorRef>& tensors, uint64_t max_shard_size,
                                           std::string_view stem,
                                           const std::map<std::string, std::string>& metadata) {
  // Each shard checks its own tensors; a name repeated in two shards only shows here.
  std::set<std::string_view> names;
  for (const TensorRef& tensor : tensors) {
    if (!names.insert(tensor.name).second) {
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "tensor `%s`: duplicate tensor name",
                                     tensor.name.c_str());
    }
  }
  EncodedShards out;
  std::vector<ShardPlan> plan = PlanShards(tensors, max_shard_size, stem);
  for (const ShardPlan& shard : plan) {
    std::vector<TensorRef> members;
    members.reserve(shard.tensors.size());
    for (size_t index : shard.tensors) members.push_back(tensors[index]);
    llvm::Expected<EncodedSafetensors> encoded = EncodeSafetensors(members, metadata);
    if (!encoded) {
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s: %s", shard.file_name.c_str(),
                                     llvm::toString(encoded.takeError()).c_str());
    }
    out.shards.emplace_back(shard.file_name, std::move(*encoded));
  }
  if (plan.size() > 1) {
    out.index_name = IndexFileName(stem);
    out.index = EncodeShardIndex(tensors, plan);
  }
  return out;
}

llvm::Error SaveShardedSafetensors(const std::string& directory, const std::vector<TensorRef>& tensors,
                                   uint64_t max_shard_size, std::string_view stem) {
  namespace fs = std::filesystem;
  llvm::Expected<EncodedShards> encoded = EncodeShards(tensors, max_shard_size, stem);
  if (!encoded) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s: %s", directory.c_str(),
                                   llvm::toString(encoded.takeError()).c_str());
  }
  std::set<std::string> written;
  // The index goes last: a reader that finds it finds every shard it names.
  for (const CheckpointFile& file : encoded->Files()) {
    if (llvm::Error error = WriteFileAtomically((fs::path(directory) / file.name).string(), file.parts))
      return error;
    written.insert(file.name);
  }
  // Leftovers of an earlier save would be read instead of, or mixed with, the new files.
  std::string single = fmt::format("{}.safetensors", stem), index = IndexFileName(stem);
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(directory, ec)) {
    std::string name = entry.path().filename().string();
    bool stale = IsShardName(name, stem) || name == single || name == index;
    if (stale && written.count(name) == 0) {
      fs::remove(entry.path(), ec);
      if (ec) {
        return llvm::createStringError(ec, "%s: cannot remove stale shard: %s", entry.path().c_str(),
                                       ec.message().c_str());
      }
    }
  }
  if (ec)
    return llvm::createStringError(ec, "%s: cannot list directory: %s", directory.c_str(),
                                   ec.message().c_str());
  return llvm::Error::success();
}

}  // namespace accel::rt::checkpoint
