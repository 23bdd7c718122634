#include "runtime/memory/dtype.h"

#include <cctype>

#include <fmt/format.h>

namespace accel::rt::memory {
namespace {

struct DtypeRow {
  std::string_view safetensors;  // empty for Accelerate's CustomDtype sizes
  std::string_view torch;
  double bytes;
  bool integral;
  std::string_view aliases;  // other spellings, space-separated, lower case
};

// Accelerate's `dtype_byte_size`: the trailing bit count of torch's name / 8, except bool (1/8)
// and the float8 types and CustomDtype (fixed). F4 and F6 have no torch dtype: bits / 8.
constexpr DtypeRow kDtypes[] = {
    {"BOOL", "bool", 1.0 / 8, true, ""},
    {"U8", "uint8", 1, true, ""},
    {"I8", "int8", 1, true, ""},
    {"I16", "int16", 2, true, "short"},
    {"U16", "uint16", 2, true, ""},
    {"I32", "int32", 4, true, "int"},
    {"U32", "uint32", 4, true, ""},
    {"I64", "int64", 8, true, "long"},
    {"U64", "uint64", 8, true, ""},
    {"F16", "float16", 2, false, "fp16 half"},
    {"BF16", "bfloat16", 2, false, "bf16"},
    {"F32", "float32", 4, false, "fp32 float"},
    {"F64", "float64", 8, false, "fp64 double"},
    {"C64", "complex64", 8, false, ""},
    {"F8_E5M2", "float8_e5m2", 1, false, ""},
    {"F8_E4M3", "float8_e4m3fn", 1, false, ""},
    {"F8_E8M0", "float8_e8m0fnu", 1, false, ""},
    {"F8_E4M3FNUZ", "float8_e4m3fnuz", 1, false, ""},
    {"F8_E5M2FNUZ", "float8_e5m2fnuz", 1, false, ""},
    {"F4", "float4_e2m1fn_x2", 0.5, false, ""},
    {"F6_E2M3", "float6_e2m3", 0.75, false, ""},
    {"F6_E3M2", "float6_e3m2", 0.75, false, ""},
    {"", "fp8", 1, false, ""},
    {"", "int4", 0.5, false, ""},
    {"", "int2", 0.25, false, ""},
};

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

Dtype ToDtype(const DtypeRow& row) { return Dtype{std::string(row.torch), row.bytes, row.integral}; }

}  // namespace

std::optional<Dtype> DtypeOfSafetensors(std::string_view dtype) {
  for (const DtypeRow& row : kDtypes) {
    if (!row.safetensors.empty() && row.safetensors == dtype) return ToDtype(row);
  }
  return std::nullopt;
}

llvm::Expected<Dtype> ParseDtype(std::string_view text) {
  // Accelerate accepts "float16" and "torch.float16" alike.
  std::string word = Lower(text);
  if (word.rfind("torch.", 0) == 0) word = word.substr(6);
  for (const DtypeRow& row : kDtypes) {
    bool safetensors = !row.safetensors.empty() && word == Lower(row.safetensors);
    if (word == row.torch || safetensors || HasAlias(row.aliases, word)) return ToDtype(row);
  }
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      "unknown dtype `%s`; expected fp32, fp16, bf16, fp64, fp8, int8, int4, int2, a torch dtype name "
      "(bfloat16, torch.float16) or a safetensors dtype (BF16)",
      std::string(text).c_str());
}

}  // namespace accel::rt::memory
