// One test per reader rule of catalog §8.4 (ST-001 … ST-015) and per writer refusal of §8.3,
// each on a hand-built file image, plus hostile inputs: every one must be a
// clear error naming the file and the rule, never a crash or an out-of-bounds read (the
// checkpoint tests also run under ASan/UBSan, see docs/checkpoints.md).
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "runtime/checkpoint/safetensors.h"

namespace accel::rt::checkpoint {
namespace {

// An 8-byte little-endian length, the header text, then the data section.
std::string Image(const std::string& header, const std::string& data = "") {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

std::string ErrorOf(const std::string& image) {
  llvm::Expected<SafetensorsFile> file = SafetensorsFile::Parse(image, "f.safetensors");
  if (file) return "";
  return llvm::toString(file.takeError());
}

// Expects a rejection that names the file and carries `rule`.
#define EXPECT_REJECTED(image, rule)                                    \
  do {                                                                  \
    std::string error = ErrorOf(image);                                 \
    EXPECT_NE(error.find("f.safetensors"), std::string::npos) << error; \
    EXPECT_NE(error.find(rule), std::string::npos) << error;            \
  } while (0)

std::string U8(const std::string& name, int begin, int end, const std::string& shape = "1") {
  return "\"" + name + R"(":{"dtype":"U8","shape":[)" + shape + R"(],"data_offsets":[)" +
         std::to_string(begin) + "," + std::to_string(end) + "]}";
}

TEST(SafetensorsRules, St001RejectsAFileShorterThanEightBytes) {
  EXPECT_REJECTED("", "ST-001");
  EXPECT_REJECTED(std::string("\x02\0\0\0\0\0\0", 7), "ST-001");
}

TEST(SafetensorsRules, St002RejectsAHeaderLengthOfTwoToThe63) {
  std::string image(8, '\0');
  image[7] = static_cast<char>(0x80);  // 2^63: 8 + N would overflow a signed size
  image += "{}";
  EXPECT_REJECTED(image, "ST-002");
  EXPECT_REJECTED(std::string(8, '\xff'), "ST-002");
}

TEST(SafetensorsRules, St002RejectsAHeaderOverOneHundredMegabytes) {
  std::string image(8, '\0');
  uint64_t n = 100'000'001;
  std::memcpy(image.data(), &n, 8);
  EXPECT_REJECTED(image, "ST-002");
}

TEST(SafetensorsRules, St003RejectsAHeaderLongerThanTheFile) {
  EXPECT_REJECTED(Image("{}").substr(0, 9), "ST-003");
  std::string image = Image("{" + U8("a", 0, 1) + "}", "x");
  image[0] = static_cast<char>(image[0] + 2);  // claims two bytes of the data section
  EXPECT_REJECTED(image, "ST-003");
}

TEST(SafetensorsRules, St004RejectsAHeaderThatIsNotUtf8) {
  EXPECT_REJECTED(Image("{\"\xff\":"
                        R"({"dtype":"U8","shape":[1],"data_offsets":[0,1]}})",
                        "x"),
                  "ST-004");
  // An overlong encoding of `/` and a UTF-16 surrogate encoded directly in UTF-8.
  EXPECT_REJECTED(Image("{\"__metadata__\":{\"k\":\"\xc0\xaf\"}}"), "ST-004");
  EXPECT_REJECTED(Image("{\"__metadata__\":{\"k\":\"\xed\xa0\x80\"}}"), "ST-004");
}

TEST(SafetensorsRules, St004RejectsALoneSurrogateEscape) {
  EXPECT_REJECTED(Image(R"({"__metadata__":{"k":"\ud800"}})"), "ST-004");
  EXPECT_REJECTED(Image(R"({"__metadata__":{"k":"\udc00x"}})"), "ST-004");
  // A proper pair is one code point (U+1F600) and valid.
  EXPECT_EQ(ErrorOf(Image(R"({"__metadata__":{"k":"\ud83d\ude00"}})")), "");
}

TEST(SafetensorsRules, St005RejectsAHeaderThatIsNotAnObject) {
  EXPECT_REJECTED(Image("[1]"), "ST-005");
  EXPECT_REJECTED(Image("{\"a\":1}"), "ST-005");
  EXPECT_REJECTED(Image("{"), "ST-005");
  EXPECT_REJECTED(Image("{} {}"), "ST-005");
}

TEST(SafetensorsRules, St005RejectsAnUnknownDtype) {
  EXPECT_REJECTED(Image(R"({"a":{"dtype":"Q8","shape":[1],"data_offsets":[0,1]}})", "x"), "ST-005");
  EXPECT_REJECTED(Image(R"({"a":{"dtype":"f32","shape":[1],"data_offsets":[0,4]}})", "abcd"), "ST-005");
  EXPECT_REJECTED(Image(R"({"a":{"dtype":7,"shape":[1],"data_offsets":[0,1]}})", "x"), "ST-005");
}

TEST(SafetensorsRules, St005RejectsNumbersThatAreNotNonNegativeIntegers) {
  // The reference reader deserialises into usize: 2.0, 2e0 and -1 are all errors.
  EXPECT_REJECTED(Image(R"({"a":{"dtype":"U8","shape":[2.0],"data_offsets":[0,2]}})", "xy"), "ST-005");
  EXPECT_REJECTED(Image(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2e0]}})", "xy"), "ST-005");
  EXPECT_REJECTED(Image(R"({"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}})", "x"), "ST-005");
  EXPECT_REJECTED(Image(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,18446744073709551616]}})", "x"),
                  "ST-005");
}

TEST(SafetensorsRules, St005RejectsMalformedTensorEntries) {
  EXPECT_REJECTED(Image(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1,1]}})", "x"), "ST-005");
  EXPECT_REJECTED(Image(R"({"a":{"dtype":"U8","data_offsets":[0,1]}})", "x"), "ST-005");
  EXPECT_REJECTED(Image(R"({"a":{"dtype":"U8","shape":"1","data_offsets":[0,1]}})", "x"), "ST-005");
}

TEST(SafetensorsRules, St005RejectsMetadataValuesThatAreNotStrings) {
  EXPECT_REJECTED(Image(R"({"__metadata__":{"n":1}})"), "ST-005");
  EXPECT_REJECTED(Image(R"({"__metadata__":{"n":null}})"), "ST-005");
  EXPECT_REJECTED(Image(R"({"__metadata__":{"n":{"format":"pt"}}})"), "ST-005");
  EXPECT_REJECTED(Image(R"({"__metadata__":"pt"})"), "ST-005");
}

TEST(SafetensorsRules, St006RejectsHolesAndOverlaps) {
  EXPECT_REJECTED(Image("{" + U8("a", 0, 1) + "," + U8("b", 2, 3) + "}", "xyz"), "ST-006");  // hole
  EXPECT_REJECTED(Image("{" + U8("a", 0, 2, "2") + "," + U8("b", 1, 3, "2") + "}", "xyz"),
                  "ST-006");                                          // overlap
  EXPECT_REJECTED(Image("{" + U8("a", 1, 2) + "}", "xy"), "ST-006");  // does not start at 0
  // Two tensors on the same bytes: aliasing is an overlap too.
  EXPECT_REJECTED(Image("{" + U8("a", 0, 1) + "," + U8("b", 0, 1) + "}", "x"), "ST-006");
}

TEST(SafetensorsRules, St007RejectsAShapeWhoseSizeOverflows) {
  EXPECT_REJECTED(Image(R"({"a":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0]}})"),
                  "ST-007");
  // The element count fits, the bit count (× 64) does not.
  EXPECT_REJECTED(Image(R"({"a":{"dtype":"F64","shape":[2305843009213693952],"data_offsets":[0,0]}})"),
                  "ST-007");
}

TEST(SafetensorsRules, St008RejectsSubByteTensorsThatEndMidByte) {
  EXPECT_REJECTED(Image(R"({"a":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}})", "xy"), "ST-008");
  EXPECT_EQ(ErrorOf(Image(R"({"a":{"dtype":"F4","shape":[4],"data_offsets":[0,2]}})", "xy")), "");
}

TEST(SafetensorsRules, St009RejectsAByteCountThatDoesNotMatchTheShape) {
  EXPECT_REJECTED(Image(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", "abcd"), "ST-009");
  EXPECT_REJECTED(Image(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[2,1]}})", "xy"), "ST-009");
}

TEST(SafetensorsRules, St010RejectsTrailingAndMissingBytes) {
  EXPECT_REJECTED(Image("{" + U8("a", 0, 1) + "}", "xy"), "ST-010");      // a polyglot tail
  EXPECT_REJECTED(Image("{" + U8("a", 0, 2, "2") + "}", "x"), "ST-010");  // truncated data
  EXPECT_REJECTED(Image("{}", "x"), "ST-010");
}

TEST(SafetensorsRules, St011RejectsDuplicateKeys) {
  // Both entries describe the same bytes, so no hole gives the duplicate away.
  EXPECT_REJECTED(Image("{" + U8("a", 0, 1) + "," + U8("a", 0, 1) + "}", "x"), "ST-011");
  EXPECT_REJECTED(Image(R"({"__metadata__":{"f":"pt"},"__metadata__":{"f":"pt"}})"), "ST-011");
  EXPECT_REJECTED(Image(R"({"__metadata__":{"f":"pt","f":"pt"}})"), "ST-011");
  EXPECT_REJECTED(Image(R"({"a":{"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]}})", "x"),
                  "ST-011");
}

TEST(SafetensorsRules, St011RejectsATensorNamedMetadata) {
  EXPECT_REJECTED(Image(R"({"__metadata__":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", "x"),
                  "ST-011");
}

TEST(SafetensorsRules, St012AcceptsWhitespaceAroundTheHeaderObject) {
  EXPECT_EQ(ErrorOf(Image("  \n{" + U8("a", 0, 1) + "}\t  ", "x")), "");
}

TEST(SafetensorsRules, St013AcceptsEmptyTensorsScalarsAndAnEmptyBody) {
  EXPECT_EQ(ErrorOf(Image("{}")), "");
  EXPECT_EQ(ErrorOf(Image(R"({"s":{"dtype":"F32","shape":[],"data_offsets":[0,4]},)"
                          R"("e":{"dtype":"F32","shape":[3,0],"data_offsets":[4,4]}})",
                          std::string("\0\0\xc0\x7f", 4))),  // NaN: values are not checked
            "");
}

TEST(SafetensorsRules, St014AcceptsAnUnpaddedHeaderAndHandsOutTheExactBytes) {
  // Header length 55: the F32 data starts at file offset 63, not a multiple of 4.
  std::string header = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  ASSERT_NE((8 + header.size()) % 4, 0u);
  llvm::Expected<SafetensorsFile> file = SafetensorsFile::Parse(Image(header, "wxyz"), "f.safetensors");
  ASSERT_TRUE(static_cast<bool>(file)) << llvm::toString(file.takeError());
  EXPECT_EQ(file->Bytes("a"), "wxyz");
}

TEST(SafetensorsRules, St015IgnoresUnknownTensorMembers) {
  EXPECT_EQ(
      ErrorOf(Image(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":[1.5,{"y":null}]}})", "x")),
      "");
}

TEST(SafetensorsHostile, EveryTruncationOfAValidFileIsAnError) {
  std::string valid = Image("{\"__metadata__\":{\"format\":\"pt\"}," + U8("a", 0, 3, "3") + "," +
                                R"("b":{"dtype":"F32","shape":[2],"data_offsets":[3,11]}})",
                            "abcdefghijk");
  ASSERT_EQ(ErrorOf(valid), "");
  for (size_t size = 0; size < valid.size(); ++size) {
    EXPECT_NE(ErrorOf(valid.substr(0, size)), "") << "prefix of " << size << " bytes";
  }
}

TEST(SafetensorsHostile, OffsetsPastTheEndOfTheFileAreAnError) {
  EXPECT_REJECTED(Image(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[1000000000,1000000001]}})", "x"),
                  "ST-006");
  EXPECT_REJECTED(
      Image(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[18446744073709551614,18446744073709551615]}})",
            "x"),
      "ST-006");
}

TEST(SafetensorsHostile, DeeplyNestedUnknownMembersAreAnErrorNotAStackOverflow) {
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_REJECTED(Image(R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":)" + deep + "}}", "x"),
                  "ST-005");
}

// Writer refusals: what the writer accepts, the reader must accept too.
std::string EncodeError(const std::vector<TensorRef>& tensors,
                        const std::map<std::string, std::string>& metadata) {
  llvm::Expected<std::string> header = EncodeHeader(tensors, metadata, nullptr);
  if (header) return "";
  return llvm::toString(header.takeError());
}

TEST(SafetensorsWriter, RejectsAShapeWhoseBitCountOverflows) {
  // 2^61 F64 elements are 2^67 bits: wrapping to 0 would "match" an empty buffer.
  EXPECT_NE(EncodeError({{"a", "F64", {int64_t{1} << 61}, {}}}, {}), "");
  EXPECT_NE(EncodeError({{"a", "U8", {int64_t{1} << 32, int64_t{1} << 32}, {}}}, {}), "");
  EXPECT_NE(EncodeError({{"a", "U8", {-1}, {}}}, {}), "");
}

TEST(SafetensorsWriter, RejectsNamesAndMetadataThatAreNotUtf8) {
  EXPECT_NE(EncodeError({{"a\xff", "U8", {1}, "x"}}, {}), "");
  EXPECT_NE(EncodeError({}, {{"k", "\xc0\xaf"}}), "");
  EXPECT_NE(EncodeError({}, {{"\xed\xa0\x80", "v"}}), "");
}

TEST(SafetensorsWriter, RejectsAHeaderOverOneHundredMegabytes) {
  EXPECT_NE(EncodeError({}, {{"big", std::string(100'000'000, 'x')}}), "");
}

TEST(SafetensorsWriter, WritesControlAndNonAsciiCharactersTheReaderReadsBack) {
  std::string name = "caf\xc3\xa9\x01\"\\/\x7f";
  std::vector<TensorRef> tensors = {{name, "U8", {1}, "x"}};
  llvm::Expected<std::string> header = EncodeHeader(tensors, {{"k\n", "\xf0\x9f\x98\x80"}}, nullptr);
  ASSERT_TRUE(static_cast<bool>(header)) << llvm::toString(header.takeError());
  llvm::Expected<SafetensorsFile> file = SafetensorsFile::Parse(*header + "x", "f.safetensors");
  ASSERT_TRUE(static_cast<bool>(file)) << llvm::toString(file.takeError());
  EXPECT_EQ(file->Bytes(name), "x");
  EXPECT_EQ(file->metadata().at("k\n"), "\xf0\x9f\x98\x80");
}

}  // namespace
}  // namespace accel::rt::checkpoint
