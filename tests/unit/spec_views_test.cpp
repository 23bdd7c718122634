// The generated typed views (stdlib/spec_views.h) against the schema they were generated from
// and the checked values they read.
#include "stdlib/spec_views.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "compiler/pipeline/compile.h"

namespace accel::pipeline {
namespace {

class SpecViewsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    diag::DiagnosticEngine diagnostics;
    stdlib_ = Stdlib::Load(diagnostics);
    ASSERT_FALSE(diagnostics.has_errors());
  }
  std::unique_ptr<Stdlib> stdlib_;
};

// An enum class's order is its EnumTable's, which must be the schema's: EnumOf casts an index.
template <typename E>
void ExpectTableFollowsTheSchema(const sema::Schema& schema) {
  using Table = sema::views::EnumTable<E>;
  auto found = schema.enums.find(Table::kName);
  ASSERT_NE(found, schema.enums.end()) << Table::kName;
  ASSERT_EQ(found->second.members.size(), Table::kNames.size()) << Table::kName;
  for (size_t i = 0; i < Table::kNames.size(); ++i) {
    EXPECT_EQ(found->second.members[i].name, Table::kNames[i]) << Table::kName;
    EXPECT_EQ(found->second.members[i].value, Table::kValues[i]) << Table::kName;
  }
}

TEST_F(SpecViewsTest, EnumTablesFollowTheSchemaMemberForMember) {
  ExpectTableFollowsTheSchema<spec::DistributedType>(stdlib_->schema());
  ExpectTableFollowsTheSchema<spec::PrecisionType>(stdlib_->schema());
  ExpectTableFollowsTheSchema<spec::FSDPShardingStrategy>(stdlib_->schema());
  ExpectTableFollowsTheSchema<spec::Auto>(stdlib_->schema());
  ExpectTableFollowsTheSchema<spec::LoggerType>(stdlib_->schema());
  // A keyword member keeps its stdlib name in the table.
  EXPECT_EQ(sema::views::MemberName(spec::Auto::auto_), "auto");
}

TEST_F(SpecViewsTest, ACheckedSpecReadsThroughItsViews) {
  sema::MapEnvironment environment(std::map<std::string, std::string>{{"ACCELERATE_MIXED_PRECISION", "bf16"}});
  Compilation c = CompileText("t.accel", R"(job tiny {
  compute { distributed_type = FSDP; num_processes = 2; fsdp_config { fsdp_version = 2 } }
  model = Transformer { inputs = 4; d_model = 16 }
  data = CsvDataset { path = "d.csv"; target_columns = ["y"] }
  train { steps = 5; optimizer = AdamW { lr = 1 } }
})",
                              *stdlib_, environment);
  ASSERT_TRUE(c.spec.has_value());
  spec::Job job(c.spec->root);
  spec::ClusterConfig compute = job.compute();
  EXPECT_EQ(compute.distributed_type(), spec::DistributedType::FSDP);
  EXPECT_EQ(compute.num_processes(), 2);
  ASSERT_TRUE(compute.fsdp_config().has_value());
  EXPECT_EQ(compute.fsdp_config()->fsdp_version(), 2);
  EXPECT_FALSE(compute.deepspeed_config().has_value());
  // From the environment, with its provenance on the Value.
  EXPECT_EQ(job.accelerator().mixed_precision(), spec::PrecisionType::BF16);
  EXPECT_EQ(job.accelerator().mixed_precision_value().provenance.kind, sema::Provenance::Kind::Environment);
  auto model = job.model();
  ASSERT_TRUE(std::holds_alternative<spec::Transformer>(model));
  EXPECT_EQ(std::get<spec::Transformer>(model).d_model(), 16);
  auto optimizer = job.train().optimizer();
  ASSERT_TRUE(std::holds_alternative<spec::AdamW>(optimizer));
  EXPECT_DOUBLE_EQ(std::get<spec::AdamW>(optimizer).lr(), 1.0);
  EXPECT_EQ(job.train().steps(), 5);
  EXPECT_FALSE(job.train().epochs().has_value());
  EXPECT_TRUE(std::holds_alternative<spec::CsvDataset>(job.data()));
}

TEST_F(SpecViewsTest, HoldsTellsAnEnumAlternativeFromAnother) {
  sema::Value automatic;
  automatic.kind = sema::Value::Kind::Enum;
  automatic.type_name = "Auto";
  automatic.text = "auto";
  automatic.enum_value = "auto";
  EXPECT_TRUE(sema::views::Holds<spec::Auto>(automatic));
  EXPECT_FALSE(sema::views::Holds<spec::OffloadDevice>(automatic));
  EXPECT_EQ(sema::views::EnumOf<spec::Auto>(automatic), spec::Auto::auto_);
}

}  // namespace
}  // namespace accel::pipeline
