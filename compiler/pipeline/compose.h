#ifndef ACCEL_COMPILER_PIPELINE_COMPOSE_H_
#define ACCEL_COMPILER_PIPELINE_COMPOSE_H_

#include <memory>
#include <string>
#include <vector>

#include "compiler/ast/ast.h"
#include "compiler/diagnostics/diagnostic.h"
#include "compiler/sema/check.h"

namespace accel::pipeline {

// The files a spec pulls in and what they compose to. Owns the imported sources and trees the
// Composition points into, so it must outlive the check that uses it.
struct ComposedSpec {
  std::vector<std::unique_ptr<source::SourceFile>> sources;
  std::vector<std::unique_ptr<ast::File>> files;
  ast::Block overrides;  // the `--set` statements, one layer above the spec
  sema::Composition composition;
};

// Resolves the composition of `spec` (a parsed job spec):
// - `import "path" [as name]` loads the file relative to the importing file, recursively;
//   its lets become visible as `x` (or `name.x`) in the importing file, and its jobs can be
//   extended from there. A missing file is A2019, a cycle A2020.
// - `job child extends base` layers `base` (a job of a file the spec's file imports, itself
//   possibly extending another) under the child: fields the child sets replace the base's,
//   blocks refine them. An unknown base is A2021, a cycle A2022.
// - `overrides` (`--set path=value`, in order) form the last layer, parsed as statements of a
//   file named `--set`; two overrides of one field are A2004.
// Problems go to `diagnostics`; the composition holds what could be resolved.
void Compose(const ast::File& spec, const std::vector<std::string>& overrides, ComposedSpec& out,
             diag::DiagnosticEngine& diagnostics);

}  // namespace accel::pipeline

#endif  // ACCEL_COMPILER_PIPELINE_COMPOSE_H_
