#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "compiler/ast/ast.h"
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
  ConfigFile config = ReadConfigFile(source, diagnostics, parser);
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
  EXPECT_EQ(ReadAll(source, YamlParser::kSimpleFirst), ReadAll(source, YamlParser::kYamlCpp)) << name;
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

}  // namespace
}  // namespace accel::config
