#ifndef ACCEL_COMPILER_SEMA_RULE_FINDINGS_H_
#define ACCEL_COMPILER_SEMA_RULE_FINDINGS_H_

#include <string>
#include <vector>

#include "compiler/ast/ast.h"
#include "compiler/diagnostics/diagnostic.h"
#include "compiler/sema/schema.h"
#include "compiler/sema/unknown_fields.h"
#include "compiler/sema/value.h"

// How a broken schema rule becomes findings: which parts of it are reported, and where each
// points (the key the user most likely has to change, with notes at the others it reads).
namespace accel::sema {

// Every field path `expr` reads, in order of appearance, without repeats.
void ReferencedPaths(const ast::Expr& expr, std::vector<std::vector<std::string>>& paths);

// Where problems in values the checked job did not write are reported: its file and name.
struct JobSite {
  const source::SourceFile* file;
  source::Span span;
};

// The parts of a broken rule to report, one finding each: for `A implies C1 and ... and Cn`
// with several Ci false, each of them, when each reads a key `file` sets; otherwise the whole
// rule (null), reported once.
std::vector<const ast::Expr*> BrokenConclusions(const ast::Expr& condition, const Value& value,
                                                const source::SourceFile* file);

// The finding for `rule`, broken in `value` (a record at `prefix`, written in `file` at `span`),
// for its part `broken` (null: the whole rule).
diag::Diagnostic RuleViolation(const FileNaming& naming, const JobSite& job, const RuleSchema& rule,
                               const Value& value, const source::SourceFile* file, source::Span span,
                               const std::string& prefix, const ast::Expr* broken);

}  // namespace accel::sema

#endif  // ACCEL_COMPILER_SEMA_RULE_FINDINGS_H_
