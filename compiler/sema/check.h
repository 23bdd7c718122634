#ifndef ACCEL_COMPILER_SEMA_CHECK_H_
#define ACCEL_COMPILER_SEMA_CHECK_H_

#include <optional>
#include <string>

#include "compiler/ast/ast.h"
#include "compiler/diagnostics/diagnostic.h"
#include "compiler/sema/environment.h"
#include "compiler/sema/schema.h"
#include "compiler/sema/value.h"

namespace accel::sema {

// A checked job: its body resolved against the schema record `Job`.
struct Spec {
  std::string job_name;
  const source::SourceFile* file = nullptr;
  source::Span span;
  Value root;  // a Record of type `Job`, every field resolved
};

struct CheckOptions {
  // The schema record the job's body is checked against: `Job` for a spec, `ClusterConfig`
  // (or `DeepSpeedConfig`, ...) for a config file read by config::ReadConfigFile.
  std::string root = "Job";
  // Fields are named by their config-file keys (`key "..."`), as in Accelerate's files, and
  // strings such as 'no' are accepted for booleans as Accelerate's loader does.
  bool file_keys = false;
};

// Checks the single job of `file` against `schema`: field names, types, enum members,
// constraints (`where`) and rules, with defaults from the schema and from `environment`.
// Reports every problem it finds to `diagnostics` and returns no Spec if any was an error.
// `file` and `schema` must outlive the returned Spec (it points at their source files).
std::optional<Spec> Check(const ast::File& file, const Schema& schema, const Environment& environment,
                          diag::DiagnosticEngine& diagnostics, const CheckOptions& options = {});

}  // namespace accel::sema

#endif  // ACCEL_COMPILER_SEMA_CHECK_H_
