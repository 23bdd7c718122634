#ifndef ACCEL_COMPILER_AST_SERIALIZE_H_
#define ACCEL_COMPILER_AST_SERIALIZE_H_

#include <optional>
#include <string>
#include <string_view>

#include "compiler/ast/ast.h"

namespace accel::ast {

// A compact binary image of a parsed File, so the stdlib is parsed once at build time and
// every accelc run only decodes it: ANTLR needs ~30 ms for the stdlib, decoding ~0.1 ms.
// The image holds no pointers; the SourceFile is supplied again on decoding.
std::string Serialize(const File& file);

// Rebuilds the File that Serialize wrote, pointing at `source`. Empty when `image` is not a
// well-formed image of this version (the caller then parses the text instead).
std::optional<File> Deserialize(std::string_view image, const source::SourceFile* source);

}  // namespace accel::ast

#endif  // ACCEL_COMPILER_AST_SERIALIZE_H_
