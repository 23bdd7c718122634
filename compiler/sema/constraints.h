#ifndef ACCEL_COMPILER_SEMA_CONSTRAINTS_H_
#define ACCEL_COMPILER_SEMA_CONSTRAINTS_H_

#include <set>
#include <string>

#include "compiler/diagnostics/diagnostic.h"
#include "compiler/sema/check.h"
#include "compiler/sema/release_judge.h"
#include "compiler/sema/rule_findings.h"
#include "compiler/sema/schema.h"
#include "compiler/sema/unknown_fields.h"
#include "compiler/sema/value.h"

// A record's `where` constraints and rules, judged once its fields have values: which of them
// run (not those that would only echo an error already reported), and how a pinned release
// that bounds or validates a key otherwise than the newest changes the finding. Kept apart from
// reading the values, which decides nothing about them.
namespace accel::sema {

// What judging a record's constraints needs to know of the file being checked.
struct ConstraintContext {
  const CheckOptions& options;
  const ReleaseJudge& release;
  const FileNaming& names;
  // Where problems in values the job did not write (a schema default's) are reported.
  JobSite job;
  // Paths (as the file names them) of fields whose key was misspelt: their value is unknown,
  // so what reads them is not judged.
  const std::set<std::string>& unknown_values;
};

// Judges the constraints of `record`'s fields and its rules on `value` (a record at `prefix`,
// written in `file` at `span`) and reports what they find to `diagnostics`. Constraints and
// rules that read a field of `failed` (fields already in error) are skipped.
void CheckConstraints(const ConstraintContext& context, const RecordSchema& record, const Value& value,
                      std::set<std::string> failed, const source::SourceFile* file, source::Span span,
                      const std::string& prefix, diag::DiagnosticEngine& diagnostics);

}  // namespace accel::sema

#endif  // ACCEL_COMPILER_SEMA_CONSTRAINTS_H_
