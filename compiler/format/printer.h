#ifndef ACCEL_COMPILER_FORMAT_PRINTER_H_
#define ACCEL_COMPILER_FORMAT_PRINTER_H_

#include <cstddef>
#include <string>

#include "compiler/parse/syntax_tree.h"
#include "compiler/source/source_file.h"

// Lays out one parsed file in the canonical layout (docs/fmt.md). Internal to compiler/format.
namespace accel::format {

// Returns `syntax` (the concrete syntax of `source`) printed in the canonical layout, every
// comment kept. Lists, maps and enums go on one line when they fit in `line_limit` columns.
std::string PrintCanonical(const source::SourceFile& source, const parse::SyntaxTree& syntax,
                           size_t line_limit);

}  // namespace accel::format

#endif  // ACCEL_COMPILER_FORMAT_PRINTER_H_
