#ifndef ACCEL_COMPILER_PARSE_SYNTAX_TREE_BUILDER_H_
#define ACCEL_COMPILER_PARSE_SYNTAX_TREE_BUILDER_H_

#include <functional>

#include "BufferedTokenStream.h"
#include "compiler/parse/syntax_tree.h"
#include "tree/ParseTree.h"

// Turns ANTLR's tokens and parse tree into a SyntaxTree. Internal to compiler/parse.
namespace accel::parse {

// Converts `tree` (a parse of the whole token stream `tokens`, without errors) into a
// SyntaxTree. `to_byte` maps ANTLR's code-point indexes to byte offsets.
SyntaxTree BuildSyntaxTree(antlr4::BufferedTokenStream& tokens, antlr4::tree::ParseTree* tree,
                           const std::function<uint32_t(size_t)>& to_byte);

}  // namespace accel::parse

#endif  // ACCEL_COMPILER_PARSE_SYNTAX_TREE_BUILDER_H_
