#include "runtime/memory/dtype.h"

#include <cctype>

#include <fmt/format.h>

#include "runtime/checkpoint/dtype.h"

namespace accel::rt::memory {
namespace {

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool HasAlias(std::string_view aliases, std::string_view word) {
  size_t start = 0;
  while (start < aliases.size()) {
    size_t space = aliases.find(' ', start);
    if (space == std::string_view::npos) space = aliases.size();
    if (aliases.substr(start, space - start) == word) return true;
    start = space + 1;
  }
  return false;
}

// Sizes here are Accelerate's estimate_bytes (bool 1/8), not the bytes a file stores.
Dtype ToDtype(const checkpoint::DtypeInfo& row) {
  return Dtype{std::string(row.name), row.estimate_bytes, row.integral};
}

}  // namespace

std::optional<Dtype> DtypeOfSafetensors(std::string_view dtype) {
  std::optional<checkpoint::Dtype> known = checkpoint::DtypeOfSafetensors(dtype);
  if (!known) return std::nullopt;
  return ToDtype(checkpoint::Info(*known));
}

llvm::Expected<Dtype> ParseDtype(std::string_view text) {
  // Accelerate accepts "float16" and "torch.float16" alike.
  std::string word = Lower(text);
  if (word.rfind("torch.", 0) == 0) word = word.substr(6);
  // Every spelling names one row (checkpoint_dtype_test), so the first match is the only one.
  for (const checkpoint::DtypeInfo& row : checkpoint::AllDtypes()) {
    bool safetensors = !row.safetensors.empty() && word == Lower(row.safetensors);
    if (word == row.name || safetensors || HasAlias(row.aliases, word)) return ToDtype(row);
  }
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      "unknown dtype `%s`; expected fp32, fp16, bf16, fp64, fp8, int8, int4, int2, a torch dtype name "
      "(bfloat16, torch.float16) or a safetensors dtype (BF16)",
      std::string(text).c_str());
}

}  // namespace accel::rt::memory
