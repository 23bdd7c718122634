#include <gtest/gtest.h>

#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "runtime/checkpoint/dtype.h"
#include "runtime/checkpoint/safetensors.h"

// The one dtype table (runtime/checkpoint/dtypes.def): every row is there, in the writer's
// order, and its columns agree with each other and with what safetensors and Accelerate say.
namespace accel::rt::checkpoint {
namespace {

// The first decimal number in `text` (`float8_e4m3fn` → 8, `C64` → 64), or 0 when none.
unsigned FirstNumber(std::string_view text) {
  size_t begin = 0;
  while (begin < text.size() && !std::isdigit(static_cast<unsigned char>(text[begin]))) ++begin;
  unsigned number = 0;
  for (size_t i = begin; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
    number = number * 10 + static_cast<unsigned>(text[i] - '0');
  }
  return number;
}

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The reference writer's alignment ranking, ascending (catalog §8.3); the same list as
// tests/runtime/checkpoint_interop_test.py's RANK.
TEST(DtypeTable, HasEverySafetensorsDtypeInTheWritersOrder) {
  const std::vector<std::string_view> expected = {
      "BOOL",    "F4",          "F6_E2M3",     "F6_E3M2", "U8",  "I8",  "F8_E5M2", "F8_E4M3",
      "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "I16",     "U16", "F16", "BF16",    "I32",
      "U32",     "F32",         "C64",         "F64",     "I64", "U64"};
  std::vector<std::string_view> names;
  for (const DtypeInfo& row : AllDtypes()) {
    if (!row.safetensors.empty()) names.push_back(row.safetensors);
  }
  EXPECT_EQ(names, expected);
  // The CustomDtype sizes follow every safetensors row, so they never take a writer rank.
  std::vector<std::string_view> custom;
  for (const DtypeInfo& row : AllDtypes().drop_front(expected.size())) custom.push_back(row.name);
  EXPECT_EQ(custom, (std::vector<std::string_view>{"fp8", "int4", "int2"}));
}

TEST(DtypeTable, RowsAreIndexedByTheirDtype) {
  for (size_t i = 0; i < AllDtypes().size(); ++i) {
    const DtypeInfo& row = AllDtypes()[i];
    EXPECT_EQ(static_cast<size_t>(row.dtype), i) << row.name;
    EXPECT_EQ(&Info(row.dtype), &row) << row.name;
    if (!row.safetensors.empty()) {
      EXPECT_EQ(DtypeOfSafetensors(row.safetensors), row.dtype) << row.name;
    }
  }
  EXPECT_FALSE(DtypeOfSafetensors("").has_value());
  EXPECT_FALSE(DtypeOfSafetensors("bf16").has_value());  // the format is case-sensitive
  EXPECT_FALSE(DtypeOfSafetensors("fp8").has_value());
}

// The bit counts in the safetensors string and in torch's name are the file's bits per element;
// Accelerate's estimate is those bits / 8 (as a fraction: F4 is 1/2), except bool, which files
// and torch store in a byte but Accelerate counts as one bit.
TEST(DtypeTable, ColumnsAgreeWithTheNames) {
  for (const DtypeInfo& row : AllDtypes()) {
    SCOPED_TRACE(std::string(row.name));
    if (row.dtype == Dtype::kBool) {
      EXPECT_EQ(row.file_bits, 8u);
      EXPECT_EQ(row.estimate_bytes, 1.0 / 8);
      EXPECT_TRUE(row.integral);
      continue;
    }
    unsigned bits = FirstNumber(row.name);
    ASSERT_NE(bits, 0u);
    EXPECT_EQ(row.estimate_bytes, bits / 8.0);
    if (row.safetensors.empty()) {
      EXPECT_EQ(row.file_bits, 0u);  // CustomDtype: no file stores it
      continue;
    }
    EXPECT_EQ(row.file_bits, bits);
    EXPECT_EQ(FirstNumber(row.safetensors), bits);
    char kind = row.safetensors[0];
    EXPECT_EQ(row.integral, kind == 'I' || kind == 'U');
    EXPECT_EQ(row.name.substr(0, 3) == "int" || row.name.substr(0, 4) == "uint", row.integral);
  }
}

TEST(DtypeTable, SizesOnDiskAndInEstimatesDiffer) {
  EXPECT_EQ(DtypeSize("BF16"), 2u);
  EXPECT_EQ(Info(Dtype::kBF16).estimate_bytes, 2);
  EXPECT_EQ(Info(Dtype::kBF16).name, "bfloat16");
  EXPECT_EQ(DtypeSize("BOOL"), 1u);
  EXPECT_EQ(Info(Dtype::kBool).estimate_bytes, 0.125);
  EXPECT_EQ(DtypeSize("F8_E4M3"), 1u);
  EXPECT_EQ(DtypeSize("C64"), 8u);
  EXPECT_EQ(DtypeSize("U64"), 8u);
  EXPECT_EQ(DtypeSize("F4"), 0u);  // sub-byte
  EXPECT_EQ(DtypeSize("F6_E3M2"), 0u);
  EXPECT_EQ(DtypeSize("fp8"), 0u);  // no file stores a CustomDtype
  EXPECT_EQ(Info(Dtype::kInt4).estimate_bytes, 0.5);
  EXPECT_EQ(Info(Dtype::kInt2).estimate_bytes, 0.25);
}

// `--dtype` looks spellings up across all rows; each must name exactly one.
TEST(DtypeTable, EverySpellingNamesOneRow) {
  std::map<std::string, std::string_view> owner;
  auto claim = [&](std::string word, const DtypeInfo& row) {
    auto [it, inserted] = owner.emplace(word, row.name);
    EXPECT_TRUE(inserted || it->second == row.name)
        << "`" << word << "` names both " << it->second << " and " << row.name;
  };
  for (const DtypeInfo& row : AllDtypes()) {
    claim(std::string(row.name), row);
    if (!row.safetensors.empty()) claim(Lower(row.safetensors), row);
    EXPECT_EQ(Lower(row.aliases), row.aliases);
    size_t start = 0;
    while (start < row.aliases.size()) {
      size_t space = row.aliases.find(' ', start);
      if (space == std::string_view::npos) space = row.aliases.size();
      claim(std::string(row.aliases.substr(start, space - start)), row);
      start = space + 1;
    }
  }
  EXPECT_EQ(owner.at("bf16"), "bfloat16");
  EXPECT_EQ(owner.at("half"), "float16");
  EXPECT_EQ(owner.at("long"), "int64");
}

}  // namespace
}  // namespace accel::rt::checkpoint
