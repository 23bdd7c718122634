// The stdlib ships as AST images (ast::Serialize); these tests hold the images to the parser.
#include <gtest/gtest.h>

#include "compiler/ast/serialize.h"
#include "compiler/diagnostics/diagnostic.h"
#include "compiler/parse/parse.h"
#include "stdlib/embedded_stdlib.h"

namespace accel {
namespace {

// Every embedded image decodes to exactly the tree the parser builds from the embedded text.
TEST(SerializeTest, EmbeddedImagesMatchTheParser) {
  ASSERT_FALSE(stdlib::Files().empty());
  for (const stdlib::EmbeddedFile& embedded : stdlib::Files()) {
    source::SourceFile source(std::string(embedded.name), std::string(embedded.text));
    diag::DiagnosticEngine diagnostics;
    ast::File parsed = parse::Parse(source, diagnostics);
    ASSERT_FALSE(diagnostics.has_errors()) << embedded.name;
    std::optional<ast::File> decoded = ast::Deserialize(embedded.image, &source);
    ASSERT_TRUE(decoded.has_value()) << embedded.name;
    EXPECT_EQ(ast::Dump(*decoded), ast::Dump(parsed)) << embedded.name;
  }
}

// Jobs, lets, imports and nested blocks survive the round trip too.
TEST(SerializeTest, RoundTripsASpec) {
  source::SourceFile source("spec.accel", R"(import "base.accel" as base
let lr = 1e-3
job j extends base {
  compute { distributed_type = MULTI_CPU; num_processes = 2 }
  train { steps = 10; optimizer = AdamW { lr = lr } }
  accelerator.ddp.bucket_cap_mb = 50
  model = MLP { inputs = 4; hidden = [8, -3] }
  tags = { "a-b": 1s, c: 10GB, d: none, e: not true }
}
)");
  diag::DiagnosticEngine diagnostics;
  ast::File parsed = parse::Parse(source, diagnostics);
  ASSERT_FALSE(diagnostics.has_errors());
  std::string image = ast::Serialize(parsed);
  std::optional<ast::File> decoded = ast::Deserialize(image, &source);
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(ast::Dump(*decoded), ast::Dump(parsed));
}

// A truncated or corrupted image is refused (the stdlib then falls back to parsing), never
// misread or read out of bounds.
TEST(SerializeTest, RefusesDamagedImages) {
  const std::string_view image = stdlib::Files().front().image;
  source::SourceFile source("x", "");
  for (size_t length = 0; length < image.size(); length += 1 + length / 8) {
    EXPECT_FALSE(ast::Deserialize(image.substr(0, length), &source).has_value()) << length;
  }
  std::string bad_version(image);
  bad_version[8] = '\x7f';
  EXPECT_FALSE(ast::Deserialize(bad_version, &source).has_value());
  std::string trailing = std::string(image) + "x";
  EXPECT_FALSE(ast::Deserialize(trailing, &source).has_value());
}

}  // namespace
}  // namespace accel
