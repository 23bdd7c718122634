#include "compiler/sema/check.h"
#include "compiler/sema/deepspeed_batch.h"

#include <gtest/gtest.h>

#include <set>

#include "compiler/pipeline/stdlib.h"
#include "compiler/parse/parse.h"
#include "compiler/sema/evaluate.h"
#include "compiler/sema/trainer_arguments.h"

namespace accel::sema {
namespace {

// A schema written for the test: the checker must work from declarations alone.
constexpr const char* kSchema = R"(
enum Mode { fast = "FAST", slow }
kwargs Knobs {
  size: int = 25  where size > 0
  mode: Mode = fast  from env TEST_MODE
  flag: bool = false  from env TEST_FLAG
  ratio: float = 0.5  where 0.0 <= ratio <= 1.0
  limit: duration = 10s
  label: string?
  old_knob: int = 0  deprecated "it never did anything"
  broken: int?  where broken > "text"
  rule KN1 error "slow mode needs a size above 100": mode == slow implies size > 100
}
record A { x: int = 1 }
record B { y: int = 2 }
config Job {
  knobs: Knobs = Knobs {}
  needed: int
  choice: A | B = A {}
  sizes: list<int> = []
}
)";

class CheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    schema_source_ = std::make_unique<source::SourceFile>("<test>/schema.accel", kSchema);
    schema_ast_ = parse::Parse(*schema_source_, schema_diagnostics_);
    schema_ = BuildSchema({&schema_ast_}, schema_diagnostics_);
    ASSERT_FALSE(schema_diagnostics_.has_errors());
  }

  std::optional<Spec> CheckText(const std::string& text, std::map<std::string, std::string> env = {}) {
    source_ = std::make_unique<source::SourceFile>("spec.accel", text);
    diagnostics_ = diag::DiagnosticEngine();
    file_ = parse::Parse(*source_, diagnostics_);
    EXPECT_FALSE(diagnostics_.has_errors()) << "syntax error in test input";
    MapEnvironment environment(std::move(env));
    return Check(file_, schema_, environment, diagnostics_);
  }

  std::vector<std::string> Codes() const {
    std::vector<std::string> codes;
    for (const diag::Diagnostic& d : diagnostics_.diagnostics()) codes.push_back(d.code);
    return codes;
  }

  std::string At(size_t i) const {
    const diag::Diagnostic& d = diagnostics_.diagnostics().at(i);
    return std::string(source_->Slice(d.span));
  }

  std::unique_ptr<source::SourceFile> schema_source_;
  diag::DiagnosticEngine schema_diagnostics_;
  ast::File schema_ast_;
  Schema schema_;
  std::unique_ptr<source::SourceFile> source_;
  diag::DiagnosticEngine diagnostics_;
  ast::File file_;
};

TEST_F(CheckTest, FillsDefaultsAndRecordsProvenance) {
  std::optional<Spec> spec = CheckText("job j { needed = 3 }");
  ASSERT_TRUE(spec.has_value());
  const Value* knobs = spec->root.Field("knobs");
  ASSERT_NE(knobs, nullptr);
  EXPECT_EQ(knobs->Field("size")->int_value, 25);
  EXPECT_EQ(knobs->Field("size")->provenance.kind, Provenance::Kind::SchemaDefault);
  EXPECT_EQ(knobs->Field("mode")->enum_value, "FAST");
  EXPECT_EQ(knobs->Field("limit")->int_value, 10000);
  EXPECT_EQ(knobs->Field("label")->kind, Value::Kind::None);
  const Value* needed = spec->root.Field("needed");
  EXPECT_EQ(needed->provenance.kind, Provenance::Kind::Spec);
  EXPECT_EQ(needed->provenance.Describe(), "spec.accel:1:18");
  EXPECT_EQ(spec->root.Field("choice")->type_name, "A");
}

TEST_F(CheckTest, EnvironmentFillsUnsetFieldsButNeverOverridesTheSpec) {
  std::optional<Spec> spec = CheckText("job j { needed = 1 }", {{"TEST_MODE", "slow"}, {"TEST_FLAG", "YES"}});
  // slow mode with the default size breaks rule KN1: the env value took effect.
  EXPECT_FALSE(spec.has_value());
  ASSERT_EQ(Codes(), std::vector<std::string>{"KN1"});

  spec =
      CheckText("job j { needed = 1; knobs { mode = fast } }", {{"TEST_MODE", "slow"}, {"TEST_FLAG", "on"}});
  ASSERT_TRUE(spec.has_value());
  const Value* knobs = spec->root.Field("knobs");
  EXPECT_EQ(knobs->Field("mode")->text, "fast");
  EXPECT_TRUE(knobs->Field("flag")->bool_value);
  EXPECT_EQ(knobs->Field("flag")->provenance.Describe(), "env TEST_FLAG");
}

TEST_F(CheckTest, InvalidEnvironmentValueIsReported) {
  EXPECT_FALSE(CheckText("job j { needed = 1 }", {{"TEST_FLAG", "maybe"}}).has_value());
  ASSERT_EQ(Codes(), std::vector<std::string>{"A3003"});
  EXPECT_NE(diagnostics_.diagnostics()[0].message.find("TEST_FLAG"), std::string::npos);
}

TEST_F(CheckTest, ReportsEveryIndependentMistakeInOnePass) {
  EXPECT_FALSE(CheckText(R"(job j {
  knobs { sise = 3; ratio = 1.5; mode = medium; limit = 5 }
  choice = C { }
  sizes = [1, "two"]
})")
                   .has_value());
  // sise: unknown field; ratio: constraint; mode: enum; limit: type; C: unknown type;
  // "two": list item type; needed: missing.
  std::vector<std::string> codes = Codes();
  std::multiset<std::string> got(codes.begin(), codes.end());
  std::multiset<std::string> want = {"A2003", "A3002", "A2007", "A3001", "A2001", "A3001", "A3004"};
  EXPECT_EQ(got, want);
}

TEST_F(CheckTest, UnknownFieldSuggestsTheClosestNameWithAFixIt) {
  EXPECT_FALSE(CheckText("job j { needed = 1; knobs.sizee = 3 }").has_value());
  ASSERT_EQ(Codes(), std::vector<std::string>{"A2003"});
  const diag::Diagnostic& d = diagnostics_.diagnostics()[0];
  EXPECT_NE(d.message.find("did you mean `size`?"), std::string::npos) << d.message;
  ASSERT_TRUE(d.fixit.has_value());
  EXPECT_EQ(d.fixit->replacement, "size");
  EXPECT_EQ(At(0), "sizee");
}

TEST_F(CheckTest, ConstraintViolationPointsAtTheValue) {
  EXPECT_FALSE(CheckText("job j { needed = 1; knobs { size = -4 } }").has_value());
  ASSERT_EQ(Codes(), std::vector<std::string>{"A3002"});
  EXPECT_EQ(At(0), "-4");
  EXPECT_EQ(diagnostics_.diagnostics()[0].message, "`knobs.size` = -4 violates `size > 0`");
}

TEST_F(CheckTest, ChainedComparisonChecksBothBounds) {
  EXPECT_TRUE(CheckText("job j { needed = 1; knobs { ratio = 1.0 } }").has_value());
  EXPECT_FALSE(CheckText("job j { needed = 1; knobs { ratio = -0.1 } }").has_value());
}

TEST_F(CheckTest, DottedPathsAndBlocksMergeButAssignmentsConflict) {
  EXPECT_TRUE(CheckText("job j { needed = 1; knobs.size = 5; knobs { ratio = 0.1 } }").has_value());
  EXPECT_FALSE(CheckText("job j { needed = 1; needed = 2 }").has_value());
  ASSERT_EQ(Codes(), std::vector<std::string>{"A2004"});
  ASSERT_EQ(diagnostics_.diagnostics()[0].notes.size(), 1u);
  EXPECT_EQ(source_->Locate(diagnostics_.diagnostics()[0].span.begin).column, 21u);
}

TEST_F(CheckTest, UnionTakesTheNamedAlternative) {
  std::optional<Spec> spec = CheckText("job j { needed = 1; choice = B { y = 7 } }");
  ASSERT_TRUE(spec.has_value());
  EXPECT_EQ(spec->root.Field("choice")->type_name, "B");
  EXPECT_EQ(spec->root.Field("choice")->Field("y")->int_value, 7);
}

TEST_F(CheckTest, SettingADeprecatedFieldWarnsButStillChecks) {
  std::optional<Spec> spec = CheckText("job j { needed = 1; knobs { old_knob = 3 } }");
  ASSERT_TRUE(spec.has_value());
  ASSERT_EQ(Codes(), std::vector<std::string>{"A2011"});
  EXPECT_EQ(diagnostics_.diagnostics()[0].severity, diag::Severity::Warning);
  EXPECT_NE(diagnostics_.diagnostics()[0].message.find("it never did anything"), std::string::npos);
}

TEST_F(CheckTest, IllTypedSchemaExpressionIsReportedAgainstTheSchema) {
  EXPECT_FALSE(CheckText("job j { needed = 1; knobs { broken = 1 } }").has_value());
  ASSERT_EQ(Codes(), std::vector<std::string>{"A2013"});
  EXPECT_EQ(diagnostics_.diagnostics()[0].file, schema_source_.get());
}

TEST_F(CheckTest, LetConstantsExpandWhereTheyAreUsed) {
  std::optional<Spec> spec = CheckText("let n = 12\nlet sizes = [n, 3]\njob j { needed = n; sizes = sizes }");
  ASSERT_TRUE(spec.has_value());
  EXPECT_EQ(spec->root.Field("needed")->int_value, 12);
  EXPECT_EQ(spec->root.Field("sizes")->items.size(), 2u);
  EXPECT_EQ(spec->root.Field("needed")->provenance.Describe(), "spec.accel:3:18");
}

TEST_F(CheckTest, MisspeltRequiredFieldIsNotAlsoReportedMissing) {
  EXPECT_FALSE(CheckText("job j { neded = 1 }").has_value());
  EXPECT_EQ(Codes(), std::vector<std::string>{"A2003"});
}

TEST_F(CheckTest, AFileWithoutAJobIsAnError) {
  EXPECT_FALSE(CheckText("record R { }").has_value());
  EXPECT_EQ(Codes(), std::vector<std::string>{"A2005"});
}

// Evaluates `expression` with `a` = 2 and `b` unset in scope.
std::optional<bool> EvaluateText(const std::string& expression) {
  source::SourceFile source("e.accel", "record R { x: int = 0 where " + expression + " }");
  diag::DiagnosticEngine diagnostics;
  ast::File file = parse::Parse(source, diagnostics);
  if (diagnostics.has_errors()) return std::nullopt;
  Value scope;
  scope.kind = Value::Kind::Record;
  Value a;
  a.kind = Value::Kind::Int;
  a.int_value = 2;
  scope.keys = {"a", "b"};
  scope.items = {a, Value{}};
  std::string error;
  std::optional<Value> result = Evaluate(*file.records[0].fields[0].constraint, scope, &error);
  if (!result || result->kind != Value::Kind::Bool) return std::nullopt;
  return result->bool_value;
}

TEST(Evaluate, OperatorsFollowTheLanguageReference) {
  EXPECT_EQ(EvaluateText("a in [1, 2, 3]"), true);
  EXPECT_EQ(EvaluateText("a in [5]"), false);
  EXPECT_EQ(EvaluateText("a is set"), true);
  EXPECT_EQ(EvaluateText("b is set"), false);
  EXPECT_EQ(EvaluateText("b is not set"), true);
  EXPECT_EQ(EvaluateText("1 <= a <= 2"), true);
  EXPECT_EQ(EvaluateText("0 <= a < 2"), false);
  EXPECT_EQ(EvaluateText("b is set implies b > 0"), true);  // short-circuit: never compares none
  EXPECT_EQ(EvaluateText("a * 3 % 4 == 2"), true);
  EXPECT_EQ(EvaluateText("not (a == 2) or a / 2 == 1"), true);
  EXPECT_EQ(EvaluateText("a > \"x\""), std::nullopt);  // ill-typed
}

TEST(Stdlib, EmbeddedSchemasCheckCleanly) {
  diag::DiagnosticEngine diagnostics;
  std::unique_ptr<pipeline::Stdlib> stdlib = pipeline::Stdlib::Load(diagnostics);
  for (const diag::Diagnostic& d : diagnostics.diagnostics()) ADD_FAILURE() << d.message;
  EXPECT_TRUE(stdlib->schema().records.count("Job"));
  EXPECT_TRUE(stdlib->schema().records.count("DistributedDataParallelKwargs"));
  EXPECT_EQ(stdlib->schema().records.at("ClusterConfig").FindAlias("master_port")->name, "main_process_port");
  // Every field and rule of the stdlib is documented or self-explanatory is not checkable;
  // every record, though, must carry a doc comment for the generated reference.
  for (const auto& [name, record] : stdlib->schema().records) EXPECT_FALSE(record.doc.empty()) << name;
}

// Every field of the stdlib carries an English doc comment: the generated reference and
// editor completion show it, and a field nobody can explain should not be in the schema.
TEST(Stdlib, EveryFieldIsDocumented) {
  diag::DiagnosticEngine diagnostics;
  std::unique_ptr<pipeline::Stdlib> stdlib = pipeline::Stdlib::Load(diagnostics);
  int fields = 0;
  for (const auto& [name, record] : stdlib->schema().records) {
    for (const FieldSchema& field : record.fields) {
      ++fields;
      EXPECT_FALSE(field.doc.empty()) << name << "." << field.name << " (" << field.file->name() << ":"
                                      << field.file->Locate(field.span.begin).line << ")";
    }
  }
  EXPECT_GT(fields, 400);
}

// The fields a path from `record` reaches: through a union, every alternative that has the next
// name (at least one must); an optional is its inner type.
std::vector<const FieldSchema*> FieldsAtPath(const Schema& schema, const std::string& record,
                                             std::string_view path) {
  std::vector<std::string> types = {record};
  std::vector<const FieldSchema*> found;
  while (!path.empty()) {
    size_t dot = path.find('.');
    std::string name(path.substr(0, dot));
    path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
    found.clear();
    for (const std::string& type : types) {
      auto at = schema.records.find(type);
      if (at == schema.records.end()) continue;
      if (const FieldSchema* field = at->second.Find(name)) found.push_back(field);
    }
    types.clear();
    for (const FieldSchema* field : found) {
      const Type* type = &field->type;
      if (type->kind == Type::Kind::Optional) type = &type->args[0];
      if (type->kind == Type::Kind::Record) types.push_back(type->name);
      if (type->kind == Type::Kind::Union) {
        for (const Type& alternative : type->args) types.push_back(alternative.name);
      }
    }
    if (found.empty()) return found;
  }
  return found;
}

// Every row of trainer_arguments.def names a field the stdlib has, and no Trainer name is
// listed twice: a renamed field cannot leave a did-you-mean pointing nowhere.
TEST(Stdlib, EveryTrainerArgumentNamesAJobField) {
  diag::DiagnosticEngine diagnostics;
  std::unique_ptr<pipeline::Stdlib> stdlib = pipeline::Stdlib::Load(diagnostics);
  std::set<std::string_view> names;
  for (const TrainerArgument& argument : kTrainerArguments) {
    EXPECT_TRUE(names.insert(argument.name).second) << argument.name;
    EXPECT_FALSE(FieldsAtPath(stdlib->schema(), "Job", argument.path).empty())
        << argument.name << " -> " << argument.path;
  }
  EXPECT_TRUE(FieldsAtPath(stdlib->schema(), "Job", "train.nothing").empty());
  EXPECT_EQ(FieldsAtPath(stdlib->schema(), "Job", "train.optimizer.lr").size(), 3u);  // SGD, Adam, AdamW
}

// The values of A3006's two files, built by hand: the rule needs no file system.
Value IntAt(int64_t v, const source::SourceFile* file, uint32_t offset) {
  Value value;
  value.kind = Value::Kind::Int;
  value.int_value = v;
  value.provenance = {Provenance::Kind::Spec, file, {offset, offset + 2}, ""};
  return value;
}

Value RecordOf(std::string type, std::vector<std::pair<std::string, Value>> fields) {
  Value record;
  record.kind = Value::Kind::Record;
  record.type_name = std::move(type);
  for (auto& [key, value] : fields) {
    record.keys.push_back(key);
    record.items.push_back(std::move(value));
  }
  return record;
}

TEST(DeepSpeedBatch, ReportsSizesThatDoNotMultiplyOutOverTheDataParallelProcesses) {
  source::SourceFile json("ds.json", R"({"train_batch_size": 64})");
  source::SourceFile yaml("cfg.yaml", "num_processes: 4\n");
  Value auto_size;
  auto_size.kind = Value::Kind::String;
  auto_size.text = "auto";
  auto make = [&](Value total, int64_t sp) {
    std::vector<std::pair<std::string, Value>> fields = {
        {"train_batch_size", std::move(total)},
        {"train_micro_batch_size_per_gpu", IntAt(4, &json, 0)},
        {"gradient_accumulation_steps", IntAt(2, &json, 0)}};
    if (sp > 0) fields.push_back({"sequence_parallel_size", IntAt(sp, &json, 0)});
    return Spec{"ds.json", &json, {}, RecordOf("DeepSpeedConfig", std::move(fields))};
  };
  Value launch = RecordOf("ClusterConfig", {{"num_processes", IntAt(4, &yaml, 15)}});

  diag::DiagnosticEngine mismatch;
  CheckDeepSpeedBatch(launch, make(IntAt(64, &json, 22), 0), mismatch);
  ASSERT_EQ(mismatch.diagnostics().size(), 1u);
  const diag::Diagnostic& d = mismatch.diagnostics()[0];
  EXPECT_EQ(d.code, "A3006");
  EXPECT_EQ(d.file, &json);
  EXPECT_NE(d.message.find("64 in `ds.json`"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("x 4 data-parallel processes (= 32)"), std::string::npos) << d.message;
  ASSERT_EQ(d.notes.size(), 1u);
  EXPECT_EQ(d.notes[0].file, &yaml);

  // 4 x 2 x (4 / 2 sequence-parallel ranks) = 16; `auto` and other root records are skipped.
  diag::DiagnosticEngine clean;
  CheckDeepSpeedBatch(launch, make(IntAt(16, &json, 22), 2), clean);
  CheckDeepSpeedBatch(launch, make(auto_size, 0), clean);
  Spec other = make(IntAt(64, &json, 22), 0);
  other.root.type_name = "ClusterConfig";
  CheckDeepSpeedBatch(launch, other, clean);
  EXPECT_TRUE(clean.diagnostics().empty());
}

}  // namespace
}  // namespace accel::sema
