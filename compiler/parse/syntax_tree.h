#ifndef ACCEL_COMPILER_PARSE_SYNTAX_TREE_H_
#define ACCEL_COMPILER_PARSE_SYNTAX_TREE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "compiler/source/source_file.h"

// The concrete syntax of one file: every token, comments included, and the grammar's tree over
// the code tokens. The AST drops what a formatter must keep (comments, `;`, trailing commas,
// how a number or string was spelt); this keeps all of it, without exposing ANTLR.
namespace accel::parse {

enum class TokenKind : uint8_t {
  kCode,          // anything the parser sees
  kLineComment,   // `// ...` up to the end of the line
  kBlockComment,  // `/* ... */`, possibly over several lines
  kDocComment,    // `/// ...`
};

struct SyntaxToken {
  TokenKind kind = TokenKind::kCode;
  source::Span span;
};

// One node per grammar rule that matters for layout; the rules that only choose between
// alternatives (`decl`, `member`, `ident`, `literal`, a primary that is a path or a literal) are
// folded into their parent.
enum class SyntaxKind : uint8_t {
  kFile,
  kImport,
  kLet,
  kEnum,
  kEnumMember,
  kRecord,  // `kwargs`, `plugin`, `config`, `record` and `extend` declarations
  kField,
  kModifier,  // `from env`, `where`, `alias`, `also`, `deprecated`, `key`
  kType,      // `a | b`
  kTypeAtom,  // `list<int>?`
  kRule,
  kRuleCode,  // `CFG-010`
  kJob,
  kBlock,      // `{ statement* }`
  kStatement,  // `path = expr` or `path { ... }`
  kPath,       // `a.b.c`
  kUnary,
  kBinary,
  kIsSet,
  kRecordLiteral,
  kCall,
  kList,
  kMap,
  kMapEntry,
  kParen,
  kOverrides,
};

struct SyntaxNode;

// A child of a node: a code token (an index into SyntaxTree::tokens) or a nested node.
struct SyntaxChild {
  uint32_t token = 0;
  std::unique_ptr<SyntaxNode> node;  // If set, the child is this node and `token` is unused.
};

struct SyntaxNode {
  SyntaxKind kind = SyntaxKind::kFile;
  // Indexes into SyntaxTree::tokens of the node's first and last code token; first > last for
  // a node without tokens.
  uint32_t first_token = 1;
  uint32_t last_token = 0;
  std::vector<SyntaxChild> children;  // in source order
};

struct SyntaxTree {
  std::vector<SyntaxToken> tokens;  // every token in source order, comments included, no end of file
  std::unique_ptr<SyntaxNode> root;
};

}  // namespace accel::parse

#endif  // ACCEL_COMPILER_PARSE_SYNTAX_TREE_H_
