#ifndef ACCEL_COMPILER_PIPELINE_STDLIB_H_
#define ACCEL_COMPILER_PIPELINE_STDLIB_H_

#include <memory>
#include <vector>

#include "compiler/ast/ast.h"
#include "compiler/diagnostics/diagnostic.h"
#include "compiler/sema/schema.h"

namespace accel::pipeline {

// The sources the stdlib's schemas were modelled from, field by field: what `accelc --version`
// and the docs name, so a user knows which Accelerate and DeepSpeed a finding speaks for.
inline constexpr const char* kModelledAccelerate = "Accelerate 1.15.0.dev0 (main at 16cb6eb80dd9)";
inline constexpr const char* kModelledDeepSpeed = "DeepSpeed 0.19.8";

// The embedded stdlib, parsed and resolved into a Schema. Owns the source text and the ASTs
// the Schema points into. Not copyable: the Schema holds pointers into it.
class Stdlib {
 public:
  // Parses every embedded schema file. Problems in the stdlib itself are reported to
  // `diagnostics` like any other file's (and are compiler bugs; a test keeps them out).
  static std::unique_ptr<Stdlib> Load(diag::DiagnosticEngine& diagnostics);

  const sema::Schema& schema() const { return schema_; }
  const std::vector<ast::File>& files() const { return files_; }

  Stdlib(const Stdlib&) = delete;
  Stdlib& operator=(const Stdlib&) = delete;

 private:
  Stdlib() = default;
  std::vector<std::unique_ptr<source::SourceFile>> sources_;
  std::vector<ast::File> files_;
  sema::Schema schema_;
};

}  // namespace accel::pipeline

#endif  // ACCEL_COMPILER_PIPELINE_STDLIB_H_
