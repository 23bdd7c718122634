#include "compiler/docs/docs.h"

#include <set>

#include <gtest/gtest.h>

#include "compiler/diagnostics/explanations.h"
#include "compiler/docs/describe.h"
#include "compiler/pipeline/stdlib.h"
#include "compiler/parse/parse.h"
#include "llvm/Support/JSON.h"

namespace accel::docs {
namespace {
namespace json = llvm::json;

// The real stdlib: the reference must cover everything users can write.
class DocsTest : public ::testing::Test {
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
  static const sema::Schema& schema() { return stdlib_->schema(); }

  static std::string AllMarkdown() {
    std::string all;
    for (const auto& [path, page] : MarkdownReference(schema())) all += page;
    return all;
  }

  static json::Value Parse(const std::string& text) {
    llvm::Expected<json::Value> value = json::parse(text);
    if (!value) {
      ADD_FAILURE() << llvm::toString(value.takeError());
      return nullptr;
    }
    return std::move(*value);
  }

  static pipeline::Stdlib* stdlib_;
};
pipeline::Stdlib* DocsTest::stdlib_ = nullptr;

TEST_F(DocsTest, MarkdownHasAPagePerRecordAndTheIndexPages) {
  std::map<std::string, std::string> pages = MarkdownReference(schema());
  for (const char* page : {"index.md", "enums.md", "rules.md", "diagnostics.md"}) {
    EXPECT_EQ(pages.count(page), 1u) << page;
  }
  for (const auto& [name, record] : schema().records) {
    auto it = pages.find("types/" + name + ".md");
    ASSERT_NE(it, pages.end()) << name;
    EXPECT_NE(it->second.find("# " + name + "\n"), std::string::npos) << name;
    for (const sema::FieldSchema& field : record.fields) {
      EXPECT_NE(it->second.find("`" + field.name + "`"), std::string::npos) << name << "." << field.name;
    }
    // The index links every page.
    EXPECT_NE(pages["index.md"].find("(types/" + name + ".md)"), std::string::npos) << name;
  }
}

TEST_F(DocsTest, EveryRecordEnumRuleAndDiagnosticAppearsInMarkdownAndHtml) {
  std::string markdown = AllMarkdown();
  std::string html = HtmlReference(schema());
  for (const auto& [name, record] : schema().records) {
    EXPECT_NE(markdown.find(name), std::string::npos) << name;
    EXPECT_NE(html.find("id=\"type-" + name + "\""), std::string::npos) << name;
    for (const sema::FieldSchema& field : record.fields) {
      EXPECT_NE(html.find("id=\"field-" + name + "-" + field.name + "\""), std::string::npos) << field.name;
    }
    for (const sema::RuleSchema& rule : record.rules) {
      EXPECT_NE(markdown.find("`" + rule.code + "`"), std::string::npos) << rule.code;
      EXPECT_NE(html.find("id=\"rule-" + rule.code + "\""), std::string::npos) << rule.code;
    }
  }
  for (const auto& [name, e] : schema().enums) {
    EXPECT_NE(markdown.find("## " + name + "\n"), std::string::npos) << name;
    EXPECT_NE(html.find("id=\"enum-" + name + "\""), std::string::npos) << name;
  }
  for (const diag::KindInfo& kind : diag::AllKinds()) {
    EXPECT_NE(markdown.find("## " + std::string(kind.code) + "\n"), std::string::npos) << kind.code;
    EXPECT_NE(html.find("id=\"diag-" + std::string(kind.code) + "\""), std::string::npos) << kind.code;
  }
}

TEST_F(DocsTest, RulesPageListsEveryDeclarationWithItsRecord) {
  std::string rules = MarkdownReference(schema())["rules.md"];
  size_t declarations = 0;
  for (const auto& [name, record] : schema().records) {
    for (const sema::RuleSchema& rule : record.rules) {
      ++declarations;
      EXPECT_NE(rules.find("| `" + rule.code + "` | " + std::string(diag::SeverityName(rule.severity)) +
                           " | [`" + name + "`](types/" + name + ".md#rules)"),
                std::string::npos)
          << rule.code << " in " << name;
    }
  }
  EXPECT_EQ(AllRules(schema()).size(), declarations);
}

TEST_F(DocsTest, DiagnosticsPageCarriesTheExplainCodeText) {
  std::string page = MarkdownReference(schema())["diagnostics.md"];
  // A2016's explanation ends with the fix; the page must show both lines.
  const std::string& explanation = diag::Explanations().at("A2016");
  std::string fix = explanation.substr(explanation.find("Fix:"));
  EXPECT_NE(page.find(fix), std::string::npos);
  EXPECT_NE(page.find("`UnknownField` error: ``unknown field `{}` in `{}`{}``"), std::string::npos);
  // fmt's escaped braces read as single ones.
  EXPECT_NE(page.find("`job NAME { ... }`"), std::string::npos);
}

// diagnostics.md and `accelc explain-code` promise an explanation for every code.
TEST(Explanations, EveryKindsDefCodeHasOneAndNoOtherCodeDoes) {
  std::set<std::string> codes;
  for (const diag::KindInfo& kind : diag::AllKinds()) {
    codes.insert(std::string(kind.code));
    EXPECT_EQ(diag::Explanations().count(kind.code), 1u) << kind.code << " has no explanation";
  }
  for (const auto& [code, text] : diag::Explanations()) {
    EXPECT_EQ(codes.count(code), 1u) << code << " is explained but not in kinds.def";
    // Notes (A0xxx) point at context; everything else says how to fix it.
    if (code.rfind("A0", 0) != 0) {
      EXPECT_NE(text.find("Fix:"), std::string::npos) << code;
    }
  }
}

TEST_F(DocsTest, MarkdownTableCellsEscapePipes) {
  // `FSDPShardingStrategy | int?` in a table would otherwise split the row.
  std::string page = MarkdownReference(schema())["types/FullyShardedDataParallelPlugin.md"];
  ASSERT_FALSE(page.empty());
  EXPECT_NE(page.find("`(FSDPShardingStrategy \\| int)?`"), std::string::npos);
}

TEST_F(DocsTest, OutputIsByteIdenticalAcrossCalls) {
  EXPECT_EQ(MarkdownReference(schema()), MarkdownReference(schema()));
  EXPECT_EQ(HtmlReference(schema()), HtmlReference(schema()));
  EXPECT_EQ(JsonSchema(schema()), JsonSchema(schema()));
  EXPECT_EQ(DeepSpeedJsonSchema(schema()), DeepSpeedJsonSchema(schema()));
  EXPECT_EQ(ReferenceFiles(schema()), ReferenceFiles(schema()));
}

TEST_F(DocsTest, ReferenceFilesHoldEveryOutput) {
  std::map<std::string, std::string> files = ReferenceFiles(schema());
  for (const auto& [path, page] : MarkdownReference(schema())) EXPECT_EQ(files[path], page) << path;
  EXPECT_EQ(files["reference.html"], HtmlReference(schema()));
  EXPECT_EQ(files["accelerate-config.schema.json"], JsonSchema(schema()));
  EXPECT_EQ(files["deepspeed-config.schema.json"], DeepSpeedJsonSchema(schema()));
}

TEST_F(DocsTest, HtmlIsSelfContained) {
  std::string html = HtmlReference(schema());
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_NE(html.find("<script>"), std::string::npos);
  EXPECT_NE(html.find("<input id=\"q\""), std::string::npos);
}

TEST_F(DocsTest, JsonSchemaIsDraft202012WithEveryClusterConfigKey) {
  json::Value root = Parse(JsonSchema(schema()));
  const json::Object* object = root.getAsObject();
  ASSERT_NE(object, nullptr);
  EXPECT_EQ(object->getString("$schema"), llvm::StringRef("https://json-schema.org/draft/2020-12/schema"));
  const json::Object* defs = object->getObject("$defs");
  ASSERT_NE(defs, nullptr);
  const json::Object* cluster = defs->getObject("ClusterConfig");
  ASSERT_NE(cluster, nullptr);
  EXPECT_EQ(cluster->getBoolean("additionalProperties"), llvm::Optional<bool>(false));
  const json::Object* properties = cluster->getObject("properties");
  ASSERT_NE(properties, nullptr);
  const sema::RecordSchema& record = schema().records.find("ClusterConfig")->second;
  for (const sema::FieldSchema& field : record.fields) {
    EXPECT_NE(properties->get(FileKey(field)), nullptr) << FileKey(field);
  }
  // Sections are named by their config-file keys: FSDP's `cpu_offload` is `fsdp_offload_params`.
  const json::Object* fsdp = defs->getObject("FullyShardedDataParallelPlugin");
  ASSERT_NE(fsdp, nullptr);
  EXPECT_NE(fsdp->getObject("properties")->get("fsdp_offload_params"), nullptr);
  EXPECT_EQ(fsdp->getObject("properties")->get("cpu_offload"), nullptr);
}

TEST_F(DocsTest, JsonSchemaReachesEveryRecordFromItsRootsOnly) {
  json::Value root = Parse(JsonSchema(schema()));
  const json::Object* defs = root.getAsObject()->getObject("$defs");
  ASSERT_NE(defs, nullptr);
  // Every `$ref` resolves.
  std::function<void(const json::Value&)> check_refs = [&](const json::Value& v) {
    if (const json::Object* o = v.getAsObject()) {
      if (llvm::Optional<llvm::StringRef> ref = o->getString("$ref")) {
        ASSERT_TRUE(ref->startswith("#/$defs/")) << ref->str();
        EXPECT_NE(defs->get(ref->drop_front(8)), nullptr) << ref->str();
      }
      for (const auto& [key, inner] : *o) check_refs(inner);
    } else if (const json::Array* a = v.getAsArray()) {
      for (const json::Value& inner : *a) check_refs(inner);
    }
  };
  check_refs(root);
  EXPECT_NE(defs->get("SageMakerConfig"), nullptr);
  EXPECT_NE(defs->get("DeepSpeedPlugin"), nullptr);
  EXPECT_NE(defs->get("PrecisionType"), nullptr);
  // The job-spec records are not part of the config file.
  EXPECT_EQ(defs->get("Job"), nullptr);
}

TEST_F(DocsTest, JsonSchemaEnumsUseSerializedValuesAndDefaultsAreLiterals) {
  json::Value root = Parse(JsonSchema(schema()));
  const json::Object* defs = root.getAsObject()->getObject("$defs");
  const json::Object* precision = defs->getObject("PrecisionType");
  ASSERT_NE(precision, nullptr);
  std::vector<std::string> values;
  for (const json::Value& v : *precision->getArray("enum")) {
    if (v.getAsString()) values.push_back(v.getAsString()->str());
  }
  EXPECT_NE(std::find(values.begin(), values.end(), "bf16"), values.end());
  EXPECT_EQ(std::find(values.begin(), values.end(), "BF16"), values.end());
  const json::Object* cluster = defs->getObject("ClusterConfig")->getObject("properties");
  EXPECT_EQ(cluster->getObject("num_machines")->getInteger("default"), llvm::Optional<int64_t>(1));
  EXPECT_EQ(cluster->getObject("num_machines")->getInteger("minimum"), llvm::Optional<int64_t>(1));
  EXPECT_EQ(cluster->getObject("compute_environment")->getString("default"),
            llvm::StringRef("LOCAL_MACHINE"));
  // A required field of the file.
  const json::Array* required = defs->getObject("ClusterConfig")->getArray("required");
  ASSERT_NE(required, nullptr);
  EXPECT_EQ((*required)[0].getAsString(), llvm::StringRef("distributed_type"));
}

TEST_F(DocsTest, DeepSpeedJsonSchemaHasItsOwnRoot) {
  json::Value root = Parse(DeepSpeedJsonSchema(schema()));
  const json::Object* object = root.getAsObject();
  ASSERT_NE(object, nullptr);
  EXPECT_EQ(object->getString("$ref"), llvm::StringRef("#/$defs/DeepSpeedConfig"));
  EXPECT_NE(object->getObject("$defs")->get("DeepSpeedZeroConfig"), nullptr);
}

TEST_F(DocsTest, RenderTypeWritesWhatDescribeWrites) {
  for (const auto& [name, record] : schema().records) {
    for (const sema::FieldSchema& field : record.fields) {
      std::string rendered = RenderType(
          field.type, [](const std::string& n) { return n; },
          [](std::string_view t) { return std::string(t); });
      EXPECT_EQ(rendered, field.type.Describe()) << name << "." << field.name;
    }
  }
}

// A schema written for the test: rendering must not depend on the stdlib's shapes.
TEST(Docs, WorksOnASmallSchema) {
  source::SourceFile source("<test>/s.accel",
                            "/// Modes.\nenum Mode { fast = \"FAST\", NO }\n"
                            "/// Root.\nconfig ClusterConfig {\n"
                            "  /// The mode.\n  mode: Mode = fast\n"
                            "  ratio: float = 0.8  where 0.0 <= ratio <= 1.0\n"
                            "  port: int?  where port == -1 or port >= 1  alias old_port\n"
                            "  rule R-1 warning \"`ratio` | odd\": ratio < 0.9\n}\n");
  diag::DiagnosticEngine diagnostics;
  ast::File file = parse::Parse(source, diagnostics);
  sema::Schema schema = sema::BuildSchema({&file}, diagnostics);
  ASSERT_FALSE(diagnostics.has_errors());
  std::map<std::string, std::string> pages = MarkdownReference(schema);
  EXPECT_NE(pages["types/ClusterConfig.md"].find("| `R-1` | warning | `ratio` \\| odd |"), std::string::npos)
      << pages["types/ClusterConfig.md"];

  llvm::Expected<json::Value> parsed = json::parse(JsonSchema(schema));
  ASSERT_TRUE(static_cast<bool>(parsed)) << llvm::toString(parsed.takeError());
  std::string text = JsonSchema(schema);
  // Shortest float form, not llvm::json's 17 digits.
  EXPECT_NE(text.find("\"default\": 0.8,"), std::string::npos) << text;
  const json::Object* defs = parsed->getAsObject()->getObject("$defs");
  const json::Object* mode = defs->getObject("Mode");
  ASSERT_NE(mode, nullptr);
  // `NO` unquoted is YAML 1.1's false, which the checker takes for the member (A2016).
  const json::Array* values = mode->getArray("enum");
  ASSERT_NE(values, nullptr);
  ASSERT_EQ(values->size(), 3u);
  EXPECT_EQ((*values)[0].getAsString(), llvm::StringRef("FAST"));
  EXPECT_EQ((*values)[2].getAsBoolean(), llvm::Optional<bool>(false));
  const json::Object* properties = defs->getObject("ClusterConfig")->getObject("properties");
  EXPECT_EQ(properties->getObject("mode")->getString("default"), llvm::StringRef("FAST"));
  // A closed `config` is a loader's dataclass, which refuses an old name like any unknown key.
  EXPECT_EQ(properties->getObject("old_port"), nullptr);
  EXPECT_NE(properties->getObject("port"), nullptr);
  // Without a SageMakerConfig the root is ClusterConfig itself.
  EXPECT_EQ(parsed->getAsObject()->getString("$ref"), llvm::StringRef("#/$defs/ClusterConfig"));
  EXPECT_EQ(DeepSpeedJsonSchema(schema), "");
}

}  // namespace
}  // namespace accel::docs
