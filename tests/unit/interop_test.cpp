#include "compiler/interop/interop.h"

#include <cmath>
#include <deque>
#include <limits>
#include <memory>

#include <gtest/gtest.h>

#include "compiler/config/reader.h"
#include "compiler/diagnostics/render.h"
#include "compiler/pipeline/stdlib.h"
#include "compiler/interop/yaml_scalar.h"
#include "compiler/parse/parse.h"
#include "compiler/sema/check.h"

namespace accel {
namespace {

using interop::YamlFloat;
using interop::YamlString;

// Checks config files and specs held in memory as accelc check does, keeping every source
// and tree alive for the values that point into them.
class Interop : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    diag::DiagnosticEngine diagnostics;
    stdlib_ = pipeline::Stdlib::Load(diagnostics).release();
  }
  static const sema::Schema& schema() { return stdlib_->schema(); }

  // The root value of `text` checked as a config file named `name` (its suffix picks YAML or
  // JSON); fails the test on any error.
  const sema::Value& Config(const std::string& text, const std::string& name = "default_config.yaml") {
    const source::SourceFile& source =
        *sources_.emplace_back(std::make_unique<source::SourceFile>(name, text));
    diag::DiagnosticEngine diagnostics;
    config::ConfigFile config = config::ReadConfigFile(source, diagnostics);
    files_.push_back(std::move(config.file));
    sema::CheckOptions options;
    options.root = config.root_record;
    options.file_keys = true;
    return Checked(files_.back(), diagnostics, options);
  }

  // The `Job` value of the spec `text`; fails the test on any error, or on any warning when
  // `warnings_allowed` is false.
  const sema::Value& Spec(const std::string& text, bool warnings_allowed = true) {
    const source::SourceFile& source =
        *sources_.emplace_back(std::make_unique<source::SourceFile>("t.accel", text));
    diag::DiagnosticEngine diagnostics;
    files_.push_back(parse::Parse(source, diagnostics));
    const sema::Value& root = Checked(files_.back(), diagnostics, {});
    if (!warnings_allowed) {
      EXPECT_EQ(diagnostics.warning_count(), 0) << diag::RenderText(diagnostics.diagnostics());
    }
    return root;
  }

  // Imports `yaml` and checks the spec it gives; returns the spec's text.
  std::string Import(const std::string& yaml) {
    llvm::Expected<std::string> text = interop::ImportToAccel(Config(yaml), schema(), "imported");
    if (!text) {
      ADD_FAILURE() << llvm::toString(text.takeError());
      return "";
    }
    return *text;
  }

 private:
  const sema::Value& Checked(const ast::File& file, diag::DiagnosticEngine& diagnostics,
                             const sema::CheckOptions& options) {
    sema::MapEnvironment environment;
    std::optional<sema::Spec> spec;
    if (!diagnostics.has_errors()) spec = sema::Check(file, schema(), environment, diagnostics, options);
    EXPECT_TRUE(spec.has_value()) << diag::RenderText(diagnostics.diagnostics());
    specs_.push_back(spec ? std::move(*spec) : sema::Spec{});
    return specs_.back().root;
  }

  static pipeline::Stdlib* stdlib_;
  std::deque<std::unique_ptr<source::SourceFile>> sources_;
  std::deque<ast::File> files_;
  std::deque<sema::Spec> specs_;
};

pipeline::Stdlib* Interop::stdlib_ = nullptr;

// ---- YAML scalars ----------------------------------------------------------------------------

TEST(YamlString, QuotesWordsYaml11ReadsAsBoolOrNull) {
  EXPECT_EQ(YamlString("no"), "'no'");
  EXPECT_EQ(YamlString("NO"), "'NO'");
  EXPECT_EQ(YamlString("yes"), "'yes'");
  EXPECT_EQ(YamlString("Off"), "'Off'");
  EXPECT_EQ(YamlString("null"), "'null'");
  EXPECT_EQ(YamlString("~"), "'~'");
  EXPECT_EQ(YamlString(""), "''");
}

TEST(YamlString, QuotesTextThatReadsAsANumberOrDate) {
  EXPECT_EQ(YamlString("1234"), "'1234'");
  // PyYAML reads `1e5` as a string (no dot), YAML 1.2 readers as a float: quoted for both.
  EXPECT_EQ(YamlString("1e5"), "'1e5'");
  EXPECT_EQ(YamlString("1.5"), "'1.5'");
  EXPECT_EQ(YamlString("0x1F"), "'0x1F'");
  EXPECT_EQ(YamlString("0o17"), "'0o17'");
  EXPECT_EQ(YamlString("1:30"), "'1:30'");
  EXPECT_EQ(YamlString(".inf"), "'.inf'");
  EXPECT_EQ(YamlString("2001-12-14"), "'2001-12-14'");
  EXPECT_EQ(YamlString("<<"), "'<<'");
}

TEST(YamlString, QuotesYamlSyntax) {
  EXPECT_EQ(YamlString("a: b"), "'a: b'");
  EXPECT_EQ(YamlString("key:"), "'key:'");
  EXPECT_EQ(YamlString("x #y"), "'x #y'");
  EXPECT_EQ(YamlString("- item"), "'- item'");
  EXPECT_EQ(YamlString("[1]"), "'[1]'");
  EXPECT_EQ(YamlString("*anchor"), "'*anchor'");
  EXPECT_EQ(YamlString("---"), "'---'");
  EXPECT_EQ(YamlString(" padded "), "' padded '");
  EXPECT_EQ(YamlString("'quoted'"), "'''quoted'''");
}

TEST(YamlString, LeavesOrdinaryTextPlain) {
  EXPECT_EQ(YamlString("FSDP"), "FSDP");
  EXPECT_EQ(YamlString("127.0.0.1"), "127.0.0.1");
  EXPECT_EQ(YamlString("0,1"), "0,1");
  EXPECT_EQ(YamlString("../templates/zero_stage1_config.json"), "../templates/zero_stage1_config.json");
  EXPECT_EQ(YamlString("(false, false, false)"), "(false, false, false)");
  EXPECT_EQ(YamlString("x#y"), "x#y");
  EXPECT_EQ(YamlString("it's"), "it's");
  EXPECT_EQ(YamlString("a:b"), "a:b");
}

TEST(YamlString, EscapesControlAndNonAsciiCharactersInDoubleQuotes) {
  EXPECT_EQ(YamlString("tab\there"), "\"tab\\there\"");
  EXPECT_EQ(YamlString("two\nlines"), "\"two\\nlines\"");
  EXPECT_EQ(YamlString("caf\xC3\xA9"), "\"caf\\xE9\"");
  EXPECT_EQ(YamlString("\xE6\x97\xA5\xE6\x9C\xAC"), "\"\\u65E5\\u672C\"");
  EXPECT_EQ(YamlString("\xF0\x9F\x98\x80"), "\"\\U0001F600\"");
  EXPECT_EQ(YamlString("say \"hi\" \\ caf\xC3\xA9"), "\"say \\\"hi\\\" \\\\ caf\\xE9\"");
}

TEST(YamlFloat, AlwaysHasADotAndASignedExponent) {
  EXPECT_EQ(YamlFloat(0.5), "0.5");
  EXPECT_EQ(YamlFloat(100.0), "100.0");
  EXPECT_EQ(YamlFloat(-2.5), "-2.5");
  EXPECT_EQ(YamlFloat(0.1), "0.1");
  EXPECT_EQ(YamlFloat(1e-8), "1.0e-08");
  EXPECT_EQ(YamlFloat(1e16), "1.0e+16");
  EXPECT_EQ(YamlFloat(std::numeric_limits<double>::infinity()), ".inf");
  EXPECT_EQ(YamlFloat(-std::numeric_limits<double>::infinity()), "-.inf");
  EXPECT_EQ(YamlFloat(std::nan("")), ".nan");
}

// ---- ExportAccelerateYaml ------------------------------------------------------------------

TEST_F(Interop, ExportsSortedKeysNestedSectionsAndEnumValues) {
  const sema::Value& config = Config(
      "num_processes: 2\n"
      "distributed_type: DEEPSPEED\n"
      "mixed_precision: fp16\n"
      "deepspeed_config:\n"
      "  zero_stage: 2\n"
      "  offload_optimizer_device: cpu\n"
      "  deepspeed_multinode_launcher: standard\n");
  // Enums by serialized value (`fp16`, `cpu`, `standard`), not member name (`FP16`, `CPU`).
  EXPECT_EQ(interop::ExportAccelerateYaml(config, schema()),
            "deepspeed_config:\n"
            "  deepspeed_multinode_launcher: standard\n"
            "  offload_optimizer_device: cpu\n"
            "  zero_stage: 2\n"
            "distributed_type: DEEPSPEED\n"
            "mixed_precision: fp16\n"
            "num_processes: 2\n");
}

TEST_F(Interop, ExportQuotesStringsYamlWouldMisread) {
  const sema::Value& config = Config(
      "distributed_type: 'NO'\n"
      "main_process_ip: '1234'\n"
      "gpu_ids: '1e5'\n"
      "tpu_name: 'null'\n"
      "tpu_zone: 'a: b # c'\n"
      "command_file: \"caf\\xE9\"\n"
      "commands: ['yes', 'plain text', '']\n");
  EXPECT_EQ(interop::ExportAccelerateYaml(config, schema()),
            "command_file: \"caf\\xE9\"\n"
            "commands:\n"
            "- 'yes'\n"
            "- plain text\n"
            "- ''\n"
            "distributed_type: 'NO'\n"
            "gpu_ids: '1e5'\n"
            "main_process_ip: '1234'\n"
            "tpu_name: 'null'\n"
            "tpu_zone: 'a: b # c'\n");
}

TEST_F(Interop, ExportDropsNoneAndEmptySectionsButKeepsEmptyLists) {
  const sema::Value& config = Config(
      "distributed_type: FSDP\n"
      "deepspeed_config: {}\n"
      "main_process_ip: null\n"
      "fsdp_config:\n"
      "  fsdp_ignored_modules: null\n"
      "tpu_env: []\n");
  // Defaults (`use_cpu`, `num_machines`, ...) are not written either: the file did not set them.
  EXPECT_EQ(interop::ExportAccelerateYaml(config, schema()),
            "distributed_type: FSDP\n"
            "tpu_env: []\n");
}

// Hand-built values for what no schema field holds yet: collections inside lists.
sema::Value Scalar(sema::Value::Kind kind, int64_t number = 0, std::string text = "") {
  sema::Value value;
  value.kind = kind;
  value.int_value = number;
  value.text = std::move(text);
  return value;
}
sema::Value Collection(sema::Value::Kind kind, std::vector<sema::Value> items,
                       std::vector<std::string> keys = {}) {
  sema::Value value = Scalar(kind);
  value.items = std::move(items);
  value.keys = std::move(keys);
  return value;
}

TEST_F(Interop, ExportLaysOutNestedCollectionsAsPyYamlDoes) {
  using Kind = sema::Value::Kind;
  sema::Value config = Config("distributed_type: 'NO'\ntpu_env: []\n");
  sema::Value mapping =
      Collection(Kind::Map,
                 {Scalar(Kind::Int, 1),
                  Collection(Kind::List, {Scalar(Kind::String, 0, "x"), Scalar(Kind::String, 0, "y")}),
                  Collection(Kind::Map, {Scalar(Kind::String, 0, "e")}, {"d"})},
                 {"b", "a", "c"});
  sema::Value nested = Collection(
      Kind::List,
      {Scalar(Kind::Int, 1), Collection(Kind::List, {Scalar(Kind::Int, 2), Scalar(Kind::Int, 3)})});
  for (size_t i = 0; i < config.keys.size(); ++i) {
    if (config.keys[i] == "tpu_env") {
      config.items[i].items = {mapping, nested, Collection(Kind::Map, {}), Collection(Kind::List, {}),
                               Scalar(Kind::None)};
    }
  }
  // Exactly what yaml.safe_dump writes for the same dict.
  EXPECT_EQ(interop::ExportAccelerateYaml(config, schema()),
            "distributed_type: 'NO'\n"
            "tpu_env:\n"
            "- a:\n"
            "  - x\n"
            "  - y\n"
            "  b: 1\n"
            "  c:\n"
            "    d: e\n"
            "- - 1\n"
            "  - - 2\n"
            "    - 3\n"
            "- {}\n"
            "- []\n"
            "- null\n");
}

TEST_F(Interop, ExportsASpecsComputeByConfigFileKeys) {
  const sema::Value& job = Spec(
      "job j {\n"
      "  compute { distributed_type = MULTI_CPU; num_processes = 2; fsdp_config { cpu_offload = true } }\n"
      "  model = MLP { inputs = 4 }\n  data = SyntheticRegression { features = 4 }\n  train { steps = 1 }\n"
      "}\n");
  EXPECT_EQ(interop::ExportAccelerateYaml(*job.Field("compute"), schema()),
            "distributed_type: MULTI_CPU\n"
            "fsdp_config:\n"
            "  fsdp_offload_params: true\n"
            "num_processes: 2\n");
}

TEST_F(Interop, ExportWritesRequiredFieldsEvenFromDefaults) {
  const sema::Value& job = Spec(
      "job j { model = MLP { inputs = 4 }; data = SyntheticRegression { features = 4 }; train { steps = 1 } "
      "}\n");
  EXPECT_EQ(interop::ExportAccelerateYaml(*job.Field("compute"), schema()), "distributed_type: 'NO'\n");
}

// ---- ExportDeepSpeedJson -------------------------------------------------------------------

TEST_F(Interop, JsonKeepsWhatTheFileSetSortedWithShortFloats) {
  const sema::Value& config = Config(
      R"({"zero_optimization": {"stage": 2, "reduce_bucket_size": "auto"}, "bf16": {},
          "gradient_clipping": 0.1, "steps_per_print": null, "train_batch_size": "auto",
          "train_micro_batch_size_per_gpu": "auto",
          "optimizer": {"type": "AdamW", "params": {"lr": 3e-5, "betas": [0.9, 0.999]}}})",
      "ds.json");
  EXPECT_EQ(interop::ExportDeepSpeedJson(config, schema()),
            "{\n"
            "  \"bf16\": {},\n"
            "  \"gradient_clipping\": 0.1,\n"
            "  \"optimizer\": {\n"
            "    \"params\": {\n"
            "      \"betas\": [\n"
            "        0.9,\n"
            "        0.999\n"
            "      ],\n"
            "      \"lr\": 3e-05\n"
            "    },\n"
            "    \"type\": \"AdamW\"\n"
            "  },\n"
            "  \"steps_per_print\": null,\n"
            "  \"train_batch_size\": \"auto\",\n"
            "  \"train_micro_batch_size_per_gpu\": \"auto\",\n"
            "  \"zero_optimization\": {\n"
            "    \"reduce_bucket_size\": \"auto\",\n"
            "    \"stage\": 2\n"
            "  }\n"
            "}\n");
}

// ---- ImportToAccel -------------------------------------------------------------------------

TEST_F(Interop, ImportWritesFieldNamesEnumMembersAndBlocks) {
  std::string text = Import(
      "distributed_type: FSDP\n"
      "mixed_precision: bf16\n"
      "num_processes: 2\n"
      "fsdp_config:\n"
      "  fsdp_offload_params: false\n"
      "  fsdp_state_dict_type: SHARDED_STATE_DICT\n");
  EXPECT_NE(text.find("// Imported by `accelc import` from `default_config.yaml`.\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("job imported {\n"
                      "  compute {\n"
                      "    distributed_type = FSDP\n"
                      "    mixed_precision = BF16\n"
                      "    num_processes = 2\n"
                      "    fsdp_config {\n"
                      "      cpu_offload = false\n"
                      "      state_dict_type = SHARDED_STATE_DICT\n"
                      "    }\n"
                      "  }\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  model = MLP { inputs = 16 }\n"
                      "  data = SyntheticRegression { features = 16 }\n"
                      "  train { steps = 100 }\n"
                      "}\n"),
            std::string::npos)
      << text;
  Spec(text);
}

TEST_F(Interop, ImportEscapesStringsAndReadsBackTheSameValues) {
  std::string text = Import(
      "distributed_type: 'NO'\n"
      "tpu_name: \"say \\\"hi\\\" \\\\ there\"\n"
      "tpu_zone: \"tab\\there\\nnext\"\n"
      "main_training_function: \"caf\\xE9 \\u65E5\"\n"
      "dynamo_config:\n"
      "  dynamo_backend: INDUCTOR\n"
      "  options: {\"my-key\": 1, none: 2, plain: x, ratio: 1.0}\n");
  EXPECT_NE(text.find(R"(tpu_name = "say \"hi\" \\ there")"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(tpu_zone = "tab\there\nnext")"), std::string::npos) << text;
  EXPECT_NE(text.find("main_training_function = \"caf\xC3\xA9 \xE6\x97\xA5\""), std::string::npos) << text;
  // Map keys that are not names, or are reserved words, are quoted; a float stays a float.
  EXPECT_NE(text.find(R"(options = { "my-key": 1, "none": 2, plain: "x", ratio: 1.0 })"), std::string::npos)
      << text;
  const sema::Value& compute = *Spec(text).Field("compute");
  EXPECT_EQ(compute.Field("tpu_name")->text, "say \"hi\" \\ there");
  EXPECT_EQ(compute.Field("tpu_zone")->text, "tab\there\nnext");
  EXPECT_EQ(compute.Field("main_training_function")->text, "caf\xC3\xA9 \xE6\x97\xA5");
  const sema::Value& options = *compute.Field("dynamo_config")->Field("options");
  ASSERT_EQ(options.items.size(), 4u);
  EXPECT_EQ(options.keys[1], "none");
  EXPECT_EQ(options.items[3].kind, sema::Value::Kind::Float);
}

// A config's `${HOME}` is text; in a spec it would be the variable's value, in the plan. The
// import writes `$${`, which reads back as the same text, `$${` included.
TEST_F(Interop, ImportKeepsDollarBraceAsText) {
  std::string text = Import(
      "distributed_type: 'NO'\n"
      "tpu_name: \"${HOME}/x and $${y}\"\n");
  EXPECT_NE(text.find(R"(tpu_name = "$${HOME}/x and $$${y}")"), std::string::npos) << text;
  EXPECT_EQ(Spec(text).Field("compute")->Field("tpu_name")->text, "${HOME}/x and $${y}");
}

TEST_F(Interop, ImportLeavesOutNullsAndSectionsThatSetNothing) {
  std::string text = Import(
      "distributed_type: 'NO'\ndeepspeed_config: {}\nfsdp_config: {fsdp_ignored_modules: null}\n"
      "main_process_ip: null\n");
  EXPECT_NE(text.find("  compute {\n    distributed_type = NO\n  }\n"), std::string::npos) << text;
  Spec(text);
}

TEST_F(Interop, ImportUpgradesLegacyKeysAsAccelerateDoes) {
  std::string text =
      Import("distributed_type: MULTI_GPU\nnum_processes: 2\nfp16: true\ndynamo_backend: INDUCTOR\n");
  EXPECT_NE(text.find("    mixed_precision = FP16\n"), std::string::npos) << text;
  EXPECT_NE(text.find("    dynamo_config {\n      backend = INDUCTOR\n    }\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("fp16 ="), std::string::npos) << text;
  EXPECT_NE(text.find("// Legacy keys upgraded as Accelerate upgrades them when it loads the file:\n"
                      "//   `fp16` -> `mixed_precision` (CFG-004, CFG-005)\n"
                      "//   `dynamo_backend` -> `dynamo_config.backend` (CFG-006)\n"),
            std::string::npos)
      << text;
  // The upgraded spec uses no deprecated field.
  Spec(text, /*warnings_allowed=*/false);
}

TEST_F(Interop, ImportSizesTheDataToTheProcessCount) {
  std::string text = Import("distributed_type: MULTI_GPU\nnum_processes: 64\n");
  EXPECT_NE(text.find("data = SyntheticRegression { features = 16; samples = 2048 }"), std::string::npos)
      << text;
  Spec(text);
}

TEST_F(Interop, ImportRefusesWhatASpecCannotSpell) {
  llvm::Expected<std::string> carriage_return =
      interop::ImportToAccel(Config("distributed_type: 'NO'\ntpu_name: \"a\\rb\"\n"), schema(), "j");
  ASSERT_FALSE(carriage_return);
  EXPECT_EQ(llvm::toString(carriage_return.takeError()),
            "`compute.tpu_name`: a string holding the control character U+000D has no `.accel` spelling");

  llvm::Expected<std::string> sagemaker = interop::ImportToAccel(
      Config("compute_environment: AMAZON_SAGEMAKER\ndistributed_type: 'NO'\nec2_instance_type: t\n"
             "iam_role_name: r\n"),
      schema(), "j");
  ASSERT_FALSE(sagemaker);
  EXPECT_NE(llvm::toString(sagemaker.takeError()).find("this is a `SageMakerConfig`"), std::string::npos);

  llvm::Expected<std::string> bad_name =
      interop::ImportToAccel(Config("distributed_type: 'NO'\n"), schema(), "none");
  ASSERT_FALSE(bad_name);
  EXPECT_EQ(llvm::toString(bad_name.takeError()), "`none` cannot name a job");
}

TEST(JobNameFor, MakesANameFromAFileName) {
  EXPECT_EQ(interop::JobNameFor("/x/default_config.yaml"), "default_config");
  EXPECT_EQ(interop::JobNameFor("sp-alst.accelerate-config.yml"), "sp_alst_accelerate_config");
  EXPECT_EQ(interop::JobNameFor("0_11_0.yaml"), "_0_11_0");
  EXPECT_EQ(interop::JobNameFor("none.yaml"), "none_job");
  EXPECT_EQ(interop::JobNameFor(".yaml"), "imported");
}

}  // namespace
}  // namespace accel
