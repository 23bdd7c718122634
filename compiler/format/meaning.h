#ifndef ACCEL_COMPILER_FORMAT_MEANING_H_
#define ACCEL_COMPILER_FORMAT_MEANING_H_

#include <optional>
#include <string>

#include "compiler/ast/ast.h"
#include "compiler/parse/syntax_tree.h"
#include "compiler/source/source_file.h"

// Whether two texts of one file say the same thing. Internal to compiler/format.
namespace accel::format {

// What a file and its parse look like with every position and layout choice left out: the
// syntax tree's dump without line:column, then each token and comment in order, without the
// separators the layout may add or drop (`;`, `,`) and without trailing blanks in comments.
// Two texts with the same key parse to the same tree and carry the same comments in the same
// places; `accelc-ignore` comments and doc comments (which attach to the next declaration)
// therefore keep their meaning too.
std::string MeaningKey(const source::SourceFile& source, const parse::SyntaxTree& syntax,
                       const ast::File& file);

}  // namespace accel::format

#endif  // ACCEL_COMPILER_FORMAT_MEANING_H_
