#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "compiler/ast/ast.h"
#include "compiler/config/json_tree.h"
#include "compiler/config/reader.h"
#include "compiler/config/simple_yaml.h"
#include "compiler/diagnostics/render.h"

namespace accel::config {
namespace {

void Describe(const ast::Block& block, std::string& out);

// Every field of `expr` the checker reads, every span whole (ast::Dump shows where spans begin).
void Describe(const ast::Expr& expr, std::string& out) {
  out += fmt::format("({} {}-{} `{}` {} {} {}", static_cast<int>(expr.kind), expr.span.begin, expr.span.end,
                     expr.text, expr.int_value, expr.float_value, expr.bool_value);
  for (const ast::ExprPtr& operand : expr.operands) Describe(*operand, out);
  if (expr.block) Describe(*expr.block, out);
  out += ")";
}

void Describe(const ast::Block& block, std::string& out) {
  out += fmt::format("{{{}-{}", block.span.begin, block.span.end);
  for (const ast::Statement& statement : block.statements) {
    out += fmt::format(" {}-{}", statement.span.begin, statement.span.end);
    for (const ast::Name& name : statement.path)
      out += fmt::format(" {}@{}-{}", name.text, name.span.begin, name.span.end);
    if (statement.value) Describe(*statement.value, out);
  }
  out += "}";
}

// Everything the checker and the user see of a read: the tree with every span, the root
// record, and the diagnostics as printed.
std::string ReadAll(const source::SourceFile& source, YamlParser parser) {
  diag::DiagnosticEngine diagnostics;
  ConfigFile config = ReadConfigFile(source, diagnostics, {}, parser);
  std::string tree;
  for (const ast::JobDecl& job : config.file.jobs) {
    tree += fmt::format("job {}@{}-{} {}-{} ", job.name.text, job.name.span.begin, job.name.span.end,
                        job.span.begin, job.span.end);
    Describe(job.body, tree);
  }
  return fmt::format("kind {} root {}\n{}\n{}{}", static_cast<int>(config.kind), config.root_record, tree,
                     ast::Dump(config.file), diag::RenderText(diagnostics.diagnostics()));
}

// Whether the simple reader takes `text`, and if it does, that the read equals yaml-cpp's.
bool TakenAlike(const std::string& name, const std::string& text) {
  source::SourceFile source(name, text);
  bool taken = ParseSimpleYaml(text).has_value();
  EXPECT_EQ(ReadAll(source, YamlParser::kOwnReaders), ReadAll(source, YamlParser::kYamlCpp)) << name;
  return taken;
}

// Every YAML config the tests hold and the published corpus: the files `accelc check` meets.
TEST(SimpleYaml, ReadsEveryConfigOfTheTestsAsYamlCppDoes) {
  namespace fs = std::filesystem;
  const fs::path root = ACCEL_SOURCE_DIR;
  int files = 0;
  int taken = 0;
  for (const fs::path& dir : {root / "tests", root / ".." / "shared" / "reference" / "accelerate-configs"}) {
    if (!fs::exists(dir)) continue;
    for (const fs::directory_entry& entry : fs::recursive_directory_iterator(dir)) {
      std::string extension = entry.path().extension().string();
      if (!entry.is_regular_file() || (extension != ".yaml" && extension != ".yml")) continue;
      std::ifstream in(entry.path(), std::ios::binary);
      std::stringstream text;
      text << in.rdbuf();
      ++files;
      taken += TakenAlike(entry.path().string(), text.str());
    }
  }
  // The simple reader must carry most of them, or it saves nothing.
  EXPECT_GT(files, 100);
  EXPECT_GT(taken, files / 2) << taken << " of " << files;
}

// Each case is one thing the simple reader takes; it must give yaml-cpp's answer.
TEST(SimpleYaml, TakesTheBlockStyleAndAnswersAsYamlCpp) {
  const char* const cases[] = {
      "distributed_type: MULTI_GPU\nnum_processes: 2\n",
      "# yaml-language-server: $schema=x\ncompute_environment: LOCAL_MACHINE\n\n  # indented "
      "comment\nuse_cpu: "
      "false\n",
      "downcast_bf16: 'no'\nmixed_precision: \"bf16\"  # quoted, then a comment\n",
      "fsdp_config: {}\ndeepspeed_config: {}\nmegatron_lm_config: []   \ngpu_ids: all\n",
      "main_training_function: main\nrdzv_backend: static\nmain_process_ip: 127.0.0.1:29500\nnote: a#b\n",
      "fsdp_config:\n  fsdp_sharding_strategy: FULL_SHARD\n  fsdp_offload_params: true\n  nested:\n    "
      "deeper: "
      "1\nnum_machines: 1\n",
      "a: ~\nb: null\nc: Null\nd: NULL\ne: 'null'\nf: nulls\n",
      "i: 0x1F\nj: 0o17\nk: 017\nl: 1_000\nm: -3\nn: +4\no: 1.5e+3\np: .inf\nq: -.Inf\nr: .nan\ns: 1e5\nt: "
      "60s\n",
      "u: yes\nv: Off\nw: y\nx: TRUE\nz: 'true'\n",
      "compute_environment: AMAZON_SAGEMAKER\nnum_machines: 2\n",
      "job: quick\ntrain:\n  steps: 10\n",
      "gpu_ids: 0,1,2\ndynamo_backend: NO   \n",
      "empty_single: ''\nempty_double: \"\"\nspaces: '  x  '\n",
  };
  for (const char* text : cases) EXPECT_TRUE(TakenAlike("case.yaml", text)) << text;
}

// Anything else goes to yaml-cpp: its reading, its errors. Declining costs only speed.
TEST(SimpleYaml, DeclinesWhatItDoesNotModel) {
  const char* const cases[] = {
      "",
      "# only a comment\n",
      "a:\n",                   // null by emptiness
      "a:\nb: 1\n",             // the same, inside
      "list:\n  - 1\n  - 2\n",  // sequences
      "list:\n- 1\n",           // an indentless one
      "a: [1, 2]\n",            // flow collections with items
      "a: {b: 1}\n",
      "a: 1\na: 2\n",            // a repeated key
      "a:\tb\n",                 // a tab
      "a: 1\r\n",                // CRLF
      "a: 'it''s'\n",            // an escaped quote
      "a: \"x\\ny\"\n",          // an escape
      "---\na: 1\n",             // a document marker
      "%YAML 1.1\n---\na: 1\n",  // a directive
      "a: b\n  c\n",             // a plain scalar over two lines
      "a: b: c\n",               // a mapping where a value goes
      "a: &x 1\nb: *x\n",        // an anchor and an alias
      "a: !!str 1\n",            // a tag
      "a: |\n  text\n",          // a block scalar
      "'a': 1\n",                // a quoted key
      "null: 1\n",               // a null key
      "a: 'unterminated\n",      // an error, left to yaml-cpp's message
      "a: 1\n b: 2\n",           // bad indentation
      "caf\xc3\xa9: 1\n",        // UTF-8
      "a: x # c\n  b: 1\n",      // a value, then a deeper line
      " a: 1\n",                 // an indented first key
  };
  for (const char* text : cases) EXPECT_FALSE(TakenAlike("case.yaml", text)) << text;
}

// Every JSON file the tests hold and the published corpus: our reader must read each as
// yaml-cpp did, every span and diagnostic the same.
TEST(JsonReader, ReadsEveryJsonFileOfTheTestsAsYamlCppDoes) {
  namespace fs = std::filesystem;
  const fs::path root = ACCEL_SOURCE_DIR;
  int files = 0;
  for (const fs::path& dir :
       {root / "tests", root / "specs", root / ".." / "shared" / "reference" / "accelerate-configs"}) {
    if (!fs::exists(dir)) continue;
    for (const fs::directory_entry& entry : fs::recursive_directory_iterator(dir)) {
      if (!entry.is_regular_file() || entry.path().extension() != ".json") continue;
      std::ifstream in(entry.path(), std::ios::binary);
      std::stringstream text;
      text << in.rdbuf();
      source::SourceFile source(entry.path().string(), text.str());
      EXPECT_EQ(ReadAll(source, YamlParser::kOwnReaders), ReadAll(source, YamlParser::kYamlCpp))
          << entry.path();
      ++files;
    }
  }
  EXPECT_GT(files, 80);
}

// Each case is valid JSON that json.load reads; both readers must give the same tree, spans
// and diagnostics.
TEST(JsonReader, AnswersAsYamlCppOnEveryConstruct) {
  const char* const cases[] = {
      "{}",
      "{\"train_batch_size\": 8}\n",
      "{\"a\": {}, \"b\": [], \"c\": [[], {}], \"d\": [1, [2, [3]], {\"e\": null}]}",
      "{\"i\": 0, \"j\": -0, \"k\": 12, \"l\": -3, \"m\": 1.5, \"n\": 1.5e+3, \"o\": 1E5, \"p\": 5e8, \"q\": "
      "2.0,"
      " \"r\": -1e-3}",
      "{\"big\": 123456789012345678901234567890, \"huge\": 1e999}",
      "{\"t\": true, \"f\": false, \"n\": null, \"s\": \"true\", \"z\": \"0\"}",
      // Not a surrogate pair: yaml-cpp refuses those (JsonTree.ResolvesEscapesIntoDecodedTextOnly).
      "{\"esc\": \"a\\\"b\\\\c\\/d\\n\\t\\u00e9\", \"after\": 1}",
      "{\"caf\xc3\xa9\": \"\xe2\x82\xac\", \"next\": \"x\"}",
      "{\"text\": \"a # b: c, d\", \"colon\": \"x: y\"}",
      "{\r\n  \"crlf\": 1,\r\n  \"tab\":\t2\r\n}\r\n",
      "\n\n   {\"late\":\n\n    1\n  }\n\n",
      "{\"dup\": 1, \"dup\": 2}",
      "{\"zero_optimization\": {\"stage\": 3, \"stage\": 2}}",
      "{\"distributed_type\": \"MULTI_GPU\", \"num_processes\": null, \"fsdp_config\": {\"a\": null}}",
      "{\"compute_environment\": \"AMAZON_SAGEMAKER\", \"num_machines\": 2}",
      "{\"job\": \"quick\", \"train\": {\"steps\": 10}}",
      "{\"empty\": \"\", \"spaces\": \"  x  \"}",
      "[1, 2]",
      "\"just a string\"",
      "3",
      "null",
      "",
      "  \n ",
      "{\"lr\": NaN, \"up\": Infinity, \"down\": -Infinity}",
  };
  for (const char* text : cases) {
    source::SourceFile source("case.json", text);
    EXPECT_EQ(ReadAll(source, YamlParser::kOwnReaders), ReadAll(source, YamlParser::kYamlCpp)) << text;
  }
}

// Python's json.load reads NaN and the infinities as floats; so does the reader.
TEST(JsonReader, ReadsPythonsNonFiniteNumbersAsFloats) {
  source::SourceFile source("case.json", "{\"a\": NaN, \"b\": Infinity, \"c\": -Infinity, \"d\": \"NaN\"}");
  diag::DiagnosticEngine diagnostics;
  ConfigFile config = ReadConfigFile(source, diagnostics);
  ASSERT_EQ(config.file.jobs.size(), 1u);
  const std::vector<ast::Statement>& statements = config.file.jobs[0].body.statements;
  ASSERT_EQ(statements.size(), 4u);
  EXPECT_EQ(statements[0].value->kind, ast::ExprKind::Float);
  EXPECT_TRUE(std::isnan(statements[0].value->float_value));
  EXPECT_EQ(statements[1].value->kind, ast::ExprKind::Float);
  EXPECT_GT(statements[1].value->float_value, 0);
  EXPECT_TRUE(std::isinf(statements[1].value->float_value));
  EXPECT_LT(statements[2].value->float_value, 0);
  EXPECT_TRUE(std::isinf(statements[2].value->float_value));
  EXPECT_EQ(statements[3].value->kind, ast::ExprKind::String);
  EXPECT_TRUE(diagnostics.diagnostics().empty());
}

std::vector<JsonValue::Kind> Kinds(const JsonDocument& document) {
  std::vector<JsonValue::Kind> kinds;
  for (const JsonValue& value : document.values) kinds.push_back(value.kind);
  return kinds;
}

// Past the budget the rest is checked for syntax but not kept: one value more than the budget
// is, so that the reader can say there are more.
TEST(JsonTree, KeepsOneValuePastTheBudgetAndChecksTheRest) {
  using K = JsonValue::Kind;
  JsonDocument document = ParseJson("{\"a\": [1, 2], \"b\": 3, \"c\": {\"d\": 4}}", {256, 2});
  ASSERT_FALSE(document.error);
  // The root, `a` and its list, 1, 2 (the third value, one past the budget of 2); nothing of
  // `b` or `c`, keys included.
  EXPECT_EQ(Kinds(document), (std::vector<K>{K::kObject, K::kString, K::kArray, K::kLiteral, K::kLiteral}));
  EXPECT_EQ(document.values[0].next, 5u);
  EXPECT_EQ(document.values[2].next, 5u);

  JsonDocument all = ParseJson("{\"a\": [1, 2], \"b\": 3, \"c\": {\"d\": 4}}", {256, 6});
  EXPECT_EQ(all.values.size(), 11u);
  // A syntax error after the budget is still found.
  JsonDocument broken = ParseJson("[1, 2, 3, 4, 5, }", {256, 2});
  ASSERT_TRUE(broken.error);
  EXPECT_EQ(broken.error->offset, 16u);
  EXPECT_TRUE(broken.values.empty());
}

TEST(JsonTree, RefusesTheFirstValueDeeperThanTheLimit) {
  // Depth 2 allowed: the root's values are at depth 1, theirs at 2.
  EXPECT_FALSE(ParseJson("{\"a\": {\"b\": 1}}", {2, 100}).error);
  EXPECT_FALSE(ParseJson("[[1]]", {2, 100}).error);
  JsonDocument deep = ParseJson("[[[1]]]", {2, 100});
  ASSERT_TRUE(deep.error);
  EXPECT_EQ(deep.error->kind, JsonError::Kind::kTooDeep);
  EXPECT_EQ(deep.error->offset, 3u);  // the `1`, at depth 3
  // Far deeper than the stack could recurse: still the same error, at the first value too deep.
  std::string hostile = std::string(1'000'000, '[') + std::string(1'000'000, ']');
  JsonDocument very_deep = ParseJson(hostile, {256, 100'000});
  ASSERT_TRUE(very_deep.error);
  EXPECT_EQ(very_deep.error->kind, JsonError::Kind::kTooDeep);
  EXPECT_EQ(very_deep.error->offset, 257u);
}

TEST(JsonTree, ResolvesEscapesIntoDecodedTextOnly) {
  std::string text = "[\"plain\", \"a\\u00e9\\n\", \"\\ud800x\", \"\\ud83d\\ude00\", \"\\ud800\\u0041\"]";
  JsonDocument document = ParseJson(text);
  ASSERT_FALSE(document.error) << document.error->message;
  std::vector<std::string> scalars;
  JsonNode(document, text, 0).ForEachItem([&](const JsonNode& item) { scalars.emplace_back(item.Scalar()); });
  EXPECT_EQ(scalars, (std::vector<std::string>{"plain", "a\xc3\xa9\n", "\xef\xbf\xbdx", "\xf0\x9f\x98\x80",
                                               "\xef\xbf\xbd"
                                               "A"}));
  EXPECT_FALSE(document.values[1].decoded);
  EXPECT_TRUE(document.values[2].decoded);
  // Only escaped strings are copied.
  EXPECT_EQ(document.decoded,
            "a\xc3\xa9\n\xef\xbf\xbdx\xf0\x9f\x98\x80\xef\xbf\xbd"
            "A");
}

}  // namespace
}  // namespace accel::config
