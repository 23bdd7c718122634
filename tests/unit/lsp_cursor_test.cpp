// What the cursor is on, from the text: the features' shared first step.
#include "compiler/lsp/cursor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>

#include "compiler/pipeline/stdlib.h"

namespace accel::lsp {
namespace {

const pipeline::Stdlib& TheStdlib() {
  static diag::DiagnosticEngine diagnostics;
  static std::unique_ptr<pipeline::Stdlib> stdlib = pipeline::Stdlib::Load(diagnostics);
  return *stdlib;
}

// The cursor where `|` is in `marked` (the marker removed).
Cursor At(std::string marked, bool yaml = false, const std::string& root = "ClusterConfig") {
  size_t offset = marked.find('|');
  marked.erase(offset, 1);
  const sema::Schema& schema = TheStdlib().schema();
  return yaml ? LocateInYaml(marked, static_cast<uint32_t>(offset), schema, root)
              : LocateInSpec(marked, static_cast<uint32_t>(offset), schema);
}

bool Contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

TEST(Cursor, FindsTheFieldOfTheEnclosingBlock) {
  Cursor cursor = At("job j {\n  accelerator {\n    mixed_pre|cision = bf16\n    seed = 1\n  }\n}\n");
  ASSERT_EQ(cursor.kind, Cursor::Kind::kFieldName);
  ASSERT_NE(cursor.record, nullptr);
  EXPECT_EQ(cursor.record->name, "Accelerator");
  ASSERT_NE(cursor.field, nullptr);
  EXPECT_EQ(cursor.field->name, "mixed_precision");
  EXPECT_EQ(cursor.word, "mixed_precision");
  // Every statement of the block, after the cursor too.
  EXPECT_TRUE(Contains(cursor.set_fields, "seed"));
  EXPECT_TRUE(Contains(cursor.set_fields, "mixed_precision"));
}

TEST(Cursor, FollowsRecordLiteralsDottedPathsAndSkipsCommentsAndStrings) {
  Cursor literal = At("job j {\n  train {\n    optimizer = AdamW { l|r = 0.1 }\n  }\n}\n");
  ASSERT_EQ(literal.kind, Cursor::Kind::kFieldName);
  EXPECT_EQ(literal.record->name, "AdamW");
  Cursor dotted = At("job j {\n  accelerator.init_process_group.time|out = 60s\n}\n");
  ASSERT_EQ(dotted.kind, Cursor::Kind::kFieldName);
  EXPECT_EQ(dotted.record->name, "InitProcessGroupKwargs");
  ASSERT_NE(dotted.field, nullptr);
  EXPECT_EQ(dotted.field->name, "timeout");
  // A `{` in a comment or a string opens nothing.
  Cursor commented = At("job j { // {\n  output { dir = \"{\" }\n  se|\n}\n");
  ASSERT_EQ(commented.kind, Cursor::Kind::kFieldName);
  EXPECT_EQ(commented.record->name, "Job");
}

TEST(Cursor, TellsValuesAndTypeNamesFromFieldNames) {
  Cursor value = At("job j { accelerator { mixed_precision = b|f16 } }");
  ASSERT_EQ(value.kind, Cursor::Kind::kValue);
  ASSERT_NE(value.field, nullptr);
  EXPECT_EQ(value.field->name, "mixed_precision");
  Cursor empty_value = At("job j { accelerator { mixed_precision = | } }");
  EXPECT_EQ(empty_value.kind, Cursor::Kind::kValue);
  EXPECT_EQ(empty_value.word, "");
  Cursor type = At("job j { model = M|LP { inputs = 1 } }");
  ASSERT_EQ(type.kind, Cursor::Kind::kTypeName);
  EXPECT_EQ(type.word, "MLP");
  EXPECT_EQ(type.field->name, "model");
}

TEST(Cursor, RecognisesCodesImportsAndBases) {
  Cursor code = At("job j {\n  // accelc-ignore[DS|-019]: fine\n}\n");
  ASSERT_EQ(code.kind, Cursor::Kind::kCode);
  EXPECT_EQ(code.word, "DS-019");
  EXPECT_EQ(At("// see A2|003\n").word, "A2003");
  // A word of the same shape that is no code is not one.
  EXPECT_NE(At("// see ZZ|-999\n").kind, Cursor::Kind::kCode);
  Cursor import = At("import \"Inputs/ba|se.accel\"\njob j extends b { }\n");
  ASSERT_EQ(import.kind, Cursor::Kind::kImport);
  EXPECT_EQ(import.target, "Inputs/base.accel");
  Cursor base = At("import \"base.accel\"\njob j extends wi|de { }\n");
  ASSERT_EQ(base.kind, Cursor::Kind::kExtends);
  EXPECT_EQ(base.target, "wide");
}

TEST(Cursor, NestsYamlKeysByIndentation) {
  std::string config =
      "distributed_type: DEEPSPEED\n"
      "deepspeed_config:\n"
      "  zero_st|age: 2\n"
      "  offload_optimizer_device: none\n"
      "num_processes: 2\n";
  Cursor key = At(config, true);
  ASSERT_EQ(key.kind, Cursor::Kind::kFieldName);
  EXPECT_EQ(key.record->name, "DeepSpeedPlugin");
  ASSERT_NE(key.field, nullptr);
  EXPECT_EQ(key.field->name, "zero_stage");
  EXPECT_TRUE(Contains(key.set_fields, "offload_optimizer_device"));
  EXPECT_FALSE(Contains(key.set_fields, "num_processes"));
  // A new line under the section, being typed.
  Cursor typing = At("deepspeed_config:\n  zero_stage: 2\n  |\n", true);
  ASSERT_EQ(typing.kind, Cursor::Kind::kFieldName);
  EXPECT_EQ(typing.record->name, "DeepSpeedPlugin");
  EXPECT_TRUE(Contains(typing.set_fields, "zero_stage"));
  Cursor top = At("distributed_type: MULTI_GPU\nmixed_precision: b|f16\n", true);
  ASSERT_EQ(top.kind, Cursor::Kind::kValue);
  EXPECT_EQ(top.record->name, "ClusterConfig");
  EXPECT_EQ(top.field->name, "mixed_precision");
}

}  // namespace
}  // namespace accel::lsp
