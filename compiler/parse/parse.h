#ifndef ACCEL_COMPILER_PARSE_PARSE_H_
#define ACCEL_COMPILER_PARSE_PARSE_H_

#include "compiler/ast/ast.h"
#include "compiler/diagnostics/diagnostic.h"
#include "compiler/parse/syntax_tree.h"
#include "compiler/source/source_file.h"

namespace accel::parse {

// Parses `source` into a syntax tree. Every syntax error is reported to `diagnostics` (the
// parser recovers and keeps going); the returned File holds what could be parsed and is only
// complete when no error was added. Never throws. `source` must outlive the returned File.
// If `syntax` is set and the file parsed without errors, it receives the file's concrete syntax
// (every token, comments included); otherwise it is left as it was.
ast::File Parse(const source::SourceFile& source, diag::DiagnosticEngine& diagnostics,
                SyntaxTree* syntax = nullptr);

// Parses statements alone (`train.steps = 5`, one per line), as `accelc --set` gives them,
// into one block, with the same error handling as Parse.
ast::Block ParseOverrides(const source::SourceFile& source, diag::DiagnosticEngine& diagnostics);

}  // namespace accel::parse

#endif  // ACCEL_COMPILER_PARSE_PARSE_H_
