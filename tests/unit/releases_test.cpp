// The table of releases (compiler/sema/releases.def, generated from the releases' own sources)
// and the schemas that model the newest of them: they must agree, key for key.
#include "compiler/sema/releases.h"

#include <cstdlib>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "compiler/pipeline/for_option.h"
#include "compiler/pipeline/stdlib.h"

namespace accel::sema {
namespace {

class ReleasesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    diag::DiagnosticEngine diagnostics;
    stdlib_ = pipeline::Stdlib::Load(diagnostics).release();
    ASSERT_FALSE(diagnostics.has_errors());
  }
  static void TearDownTestSuite() {
    delete stdlib_;
    stdlib_ = nullptr;
  }
  static const Schema& schema() { return stdlib_->schema(); }
  static const RecordSchema& Record(const std::string& name) { return schema().records.at(name); }

  // The record a field holds, through `?` and unions; null for a scalar field.
  static const RecordSchema* RecordOf(const Type& type) {
    if (type.kind == Type::Kind::Record) return &Record(type.name);
    for (const Type& arg : type.args) {
      if (type.kind != Type::Kind::Map && type.kind != Type::Kind::List) {
        if (const RecordSchema* r = RecordOf(arg)) return r;
      }
    }
    return nullptr;
  }

  // The schema record a DeepSpeed section path reaches from `DeepSpeedConfig`, or null.
  static const RecordSchema* SectionRecord(std::string_view path) {
    const RecordSchema* record = &Record("DeepSpeedConfig");
    while (!path.empty() && record != nullptr) {
      size_t dot = path.find('.');
      const FieldSchema* field = record->FindFileKey(path.substr(0, dot));
      record = field == nullptr ? nullptr : RecordOf(field->type);
      path = dot == std::string_view::npos ? "" : path.substr(dot + 1);
    }
    return record;
  }

  static bool Knows(const RecordSchema& record, std::string_view key) {
    if (record.FindFileKey(key) != nullptr || record.FindSynonym(key) != nullptr) return true;
    for (const FieldSchema& field : record.fields) {
      for (const std::string& alias : field.aliases) {
        if (alias == key) return true;
      }
    }
    return false;
  }

  // A schema default as the JSON the table writes, for a literal default; "" otherwise.
  static std::string DefaultJson(const FieldSchema& field) {
    const ast::Expr* d = field.default_value;
    if (d == nullptr) return "";
    if (d->kind == ast::ExprKind::Bool) return d->bool_value ? "true" : "false";
    if (d->kind == ast::ExprKind::Int) return std::to_string(d->int_value);
    if (d->kind == ast::ExprKind::Float) return std::to_string(d->float_value);
    return "";
  }

  static bool SameNumberOrWord(const std::string& a, std::string_view b) {
    char* a_end = nullptr;
    char* b_end = nullptr;
    std::string bs(b);
    double x = std::strtod(a.c_str(), &a_end);
    double y = std::strtod(bs.c_str(), &b_end);
    if (*a_end == '\0' && *b_end == '\0' && !a.empty() && !bs.empty()) return x == y;
    return a == bs;
  }

  static pipeline::Stdlib* stdlib_;
};

// Where the schemas and the newest release differ on purpose, by section (or the Accelerate
// config's "accelerate:"), with the reason.
struct KnownDifference {
  std::string_view section;
  std::string_view key;
  std::string_view reason;
};
constexpr KnownDifference kKnownDifferences[] = {
    // Keys the model refuses, declared so that a rule says why instead of "unknown field".
    {"bf16", "loss_scale", "refused; DSJ-009 explains that bf16 takes no loss scaling"},
    {"bf16", "initial_scale_power", "refused; DSJ-009"},
    {"bf16", "loss_scale_window", "refused; DSJ-009"},
    {"bf16", "hysteresis", "refused; DSJ-009"},
    {"bf16", "consecutive_hysteresis", "refused; DSJ-009"},
    {"bf16", "min_loss_scale", "refused; DSJ-009"},
    {"fp16", "opt_level", "refused; DSJ-008 explains that Apex AMP is gone"},
    // Python objects the engine passes in code; a JSON file cannot hold one.
    {"tensor_parallel", "injection_policy_tuple", "a tuple of classes, set in code"},
    {"tensor_parallel.tp", "mpu", "a Python object, set in code"},
    {"tensor_parallel.tp", "tp_group", "a process group, set in code"},
    // Old names Accelerate's loader converts before it builds ClusterConfig
    // (commands/config/config_args.py BaseConfig.from_yaml_file).
    {"accelerate:", "fp16", "read as `mixed_precision: fp16`"},
    {"accelerate:", "dynamo_backend", "read as `dynamo_config: {dynamo_backend: ...}`"},
};

bool KnownDifferent(std::string_view section, std::string_view key) {
  for (const KnownDifference& d : kKnownDifferences) {
    if (d.section == section && d.key == key) return true;
  }
  return false;
}
pipeline::Stdlib* ReleasesTest::stdlib_ = nullptr;

TEST_F(ReleasesTest, NewestReleasesAreThePinnedOnesTheSchemasModel) {
  EXPECT_EQ(NewestRelease(Tool::kDeepSpeed).version, "0.19.8");
  EXPECT_EQ(std::string("DeepSpeed ") + std::string(NewestRelease(Tool::kDeepSpeed).version),
            pipeline::kModelledDeepSpeed);
  EXPECT_EQ(NewestRelease(Tool::kAccelerate).version, "1.15.0");
  // At least the last three minor releases of each tool.
  EXPECT_NE(FindRelease(Tool::kDeepSpeed, "0.17"), nullptr);
  EXPECT_NE(FindRelease(Tool::kAccelerate, "1.13"), nullptr);
}

TEST_F(ReleasesTest, FindsExactReleasesAndTheNewestPatchOfAMinor) {
  ASSERT_NE(FindRelease(Tool::kDeepSpeed, "0.19.2"), nullptr);
  EXPECT_EQ(FindRelease(Tool::kDeepSpeed, "0.19.2")->version, "0.19.2");
  ASSERT_NE(FindRelease(Tool::kDeepSpeed, "0.19"), nullptr);
  EXPECT_EQ(FindRelease(Tool::kDeepSpeed, "0.19")->version, "0.19.8");
  EXPECT_EQ(FindRelease(Tool::kDeepSpeed, "0.1"), nullptr);  // not a prefix match
  EXPECT_EQ(FindRelease(Tool::kDeepSpeed, "0.16.5"), nullptr);
  EXPECT_EQ(FindRelease(Tool::kDeepSpeed, "0"), nullptr);
}

TEST_F(ReleasesTest, KeysFollowTheReleaseThatReadsThem) {
  const Release& old = *FindRelease(Tool::kDeepSpeed, "0.17.6");
  const Release& newest = NewestRelease(Tool::kDeepSpeed);
  // A key added in 0.18: its closed section refuses it before.
  EXPECT_EQ(LookUpKey(old, "zero_optimization", "leaf_module").fate, KeyFate::kRefused);
  EXPECT_EQ(LookUpKey(newest, "zero_optimization", "leaf_module").fate, KeyFate::kRead);
  // A removed feature: read before its refusal, refused after.
  EXPECT_EQ(LookUpKey(old, "", "nebula").fate, KeyFate::kRead);
  EXPECT_EQ(LookUpKey(newest, "", "nebula").fate, KeyFate::kRefused);
  // DeepSpeed reads its top level with `.get`: a key no release asks for is ignored.
  EXPECT_EQ(LookUpKey(newest, "", "no_such_key").fate, KeyFate::kIgnored);
  // A section read with `.get` says nothing about its keys.
  EXPECT_EQ(LookUpKey(newest, "optimizer", "type").fate, KeyFate::kNotCovered);
  EXPECT_EQ(ReleasesReading(Tool::kDeepSpeed, "zero_optimization", "leaf_module"),
            "DeepSpeed 0.18.9 to 0.19.8");
  EXPECT_EQ(ReleasesReading(Tool::kDeepSpeed, "", "nebula"), "DeepSpeed up to 0.19.6");
}

TEST_F(ReleasesTest, DefaultsAndBoundsChangeWhereTheReleasesChangedThem) {
  EXPECT_EQ(LookUpKey(*FindRelease(Tool::kDeepSpeed, "0.19.2"), "", "gradient_clipping").default_json, "0.0");
  EXPECT_EQ(LookUpKey(*FindRelease(Tool::kDeepSpeed, "0.19.3"), "", "gradient_clipping").default_json, "1.0");
  auto ds = [](std::string_view version) { return *FindRelease(Tool::kDeepSpeed, version); };
  EXPECT_EQ(LookUpKey(ds("0.19.5"), "zero_optimization", "reduce_bucket_size").bounds, ">=0");
  EXPECT_EQ(LookUpKey(ds("0.19.6"), "zero_optimization", "reduce_bucket_size").bounds, ">0");
  EXPECT_EQ(RunsCheck(ds("0.19.2"), "fp16", "_validate_dynamic_loss_scale_params"), false);
  EXPECT_EQ(RunsCheck(ds("0.19.3"), "fp16", "_validate_dynamic_loss_scale_params"), true);
  EXPECT_EQ(RunsCheck(NewestRelease(Tool::kDeepSpeed), "optimizer", "anything"), std::nullopt);
}

TEST_F(ReleasesTest, BoundsReadAsTheReleaseWritesThem) {
  EXPECT_TRUE(WithinBounds(0, ">=0"));
  EXPECT_FALSE(WithinBounds(0, ">0"));
  EXPECT_TRUE(WithinBounds(0.5, ">0.0 <1.0"));
  EXPECT_FALSE(WithinBounds(1.0, ">0.0 <1.0"));
  EXPECT_TRUE(WithinBounds(1.0, ">=0.0 <=1.0"));
  EXPECT_TRUE(WithinBounds(-5, ""));
  EXPECT_EQ(BoundsText("r", ">0 <=1"), "r > 0 and r <= 1");
}

// The schemas model the newest DeepSpeed: each section it reads through a model is a schema
// record that refuses an unknown key exactly when the model does, has every key the model reads
// and no other, and the same literal defaults.
TEST_F(ReleasesTest, DeepSpeedSchemasAgreeWithTheNewestReleaseKeyForKey) {
  const Release& newest = NewestRelease(Tool::kDeepSpeed);
  ASSERT_FALSE(SectionsOf(newest).empty());
  for (const ModelledSection& section : SectionsOf(newest)) {
    SCOPED_TRACE(std::string(section.section));
    const RecordSchema* record = SectionRecord(section.section);
    ASSERT_NE(record, nullptr) << "no schema record for the section";
    EXPECT_EQ(!record->open, section.closed) << record->name;
    std::set<std::string> read;
    for (const KeyRead& key : KeysOf(newest, section.section)) {
      read.insert(std::string(key.key));
      // Asked for only to refuse the file (a removed feature): key_versions.def has its row.
      if (LookUpKey(newest, section.section, key.key).fate == KeyFate::kRefused) continue;
      EXPECT_TRUE(Knows(*record, key.key) || KnownDifferent(section.section, key.key))
          << record->name << " lacks `" << key.key << "`";
      const FieldSchema* field = record->FindFileKey(key.key);
      if (field == nullptr) field = record->FindSynonym(key.key);
      std::string modelled = field == nullptr ? "" : DefaultJson(*field);
      if (!modelled.empty() && !key.default_json.empty() && key.default_json != "null") {
        EXPECT_TRUE(SameNumberOrWord(modelled, key.default_json))
            << record->name << "." << key.key << ": the schema's default " << modelled << ", the release's "
            << key.default_json;
      }
    }
    // An open section's keys are those a minimal file was asked for: not every key it reads.
    if (!section.closed) continue;
    for (const FieldSchema& field : record->fields) {
      std::string key = field.file_key ? *field.file_key : field.name;
      EXPECT_TRUE(read.count(key) || KnownDifferent(section.section, key))
          << record->name << " has `" << key << "`, which " << section.section << " does not read";
    }
  }
}

TEST_F(ReleasesTest, DeepSpeedTopLevelDefaultsAgreeWithTheNewestRelease) {
  const RecordSchema& top = Record("DeepSpeedConfig");
  for (const KeyRead& key : KeysOf(NewestRelease(Tool::kDeepSpeed), "")) {
    const FieldSchema* field = top.FindFileKey(key.key);
    if (field == nullptr || DefaultJson(*field).empty() || key.default_json.empty() ||
        key.default_json == "null") {
      continue;
    }
    EXPECT_TRUE(SameNumberOrWord(DefaultJson(*field), key.default_json))
        << key.key << ": the schema's default " << DefaultJson(*field) << ", the release's "
        << key.default_json;
  }
}

// Accelerate's loader refuses a key that is not a field of ClusterConfig: the config record's
// keys are exactly those.
TEST_F(ReleasesTest, AccelerateConfigKeysAreTheNewestReleasesClusterConfig) {
  const RecordSchema& config = Record("ClusterConfig");
  std::set<std::string> read;
  for (const KeyRead& key : KeysOf(NewestRelease(Tool::kAccelerate), "")) {
    read.insert(std::string(key.key));
    EXPECT_TRUE(config.FindFileKey(key.key) != nullptr) << "ClusterConfig lacks `" << key.key << "`";
  }
  for (const FieldSchema& field : config.fields) {
    std::string key = field.file_key ? *field.file_key : field.name;
    EXPECT_TRUE(read.count(key) || KnownDifferent("accelerate:", key))
        << "ClusterConfig has `" << key << "`, which Accelerate's loader refuses";
  }
}

TEST(ForOptionTest, ReadsTheToolAndPinsEachRelease) {
  pipeline::CompileOptions options;
  EXPECT_EQ(pipeline::ParseForOption("accelerate@1.13,deepspeed@0.19.2", options), "");
  EXPECT_EQ(options.tool, "accelerate");
  ASSERT_NE(options.releases.accelerate, nullptr);
  EXPECT_EQ(options.releases.accelerate->version, "1.13.0");
  ASSERT_NE(options.releases.deepspeed, nullptr);
  EXPECT_EQ(options.releases.deepspeed->version, "0.19.2");

  pipeline::CompileOptions plain;
  EXPECT_EQ(pipeline::ParseForOption("deepspeed", plain), "");
  EXPECT_EQ(plain.tool, "deepspeed");
  EXPECT_EQ(plain.releases.deepspeed, nullptr);

  pipeline::CompileOptions bad;
  EXPECT_NE(pipeline::ParseForOption("deepspeed@0.12.0", bad).find("covered: 0.17.6"), std::string::npos);
  EXPECT_NE(pipeline::ParseForOption("pytorch", bad).find("unknown tool `pytorch`"), std::string::npos);
  EXPECT_NE(pipeline::ParseForOption("trainer@5.0", bad).find("trainer,deepspeed@VERSION"), std::string::npos);
}

}  // namespace
}  // namespace accel::sema
