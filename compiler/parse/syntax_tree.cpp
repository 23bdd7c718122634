#include <optional>

#include "AccelLexer.h"
#include "AccelParser.h"
#include "antlr4-runtime.h"
#include "compiler/parse/syntax_tree_builder.h"

namespace accel::parse {
namespace {

using accel::grammar::AccelLexer;
using accel::grammar::AccelParser;

// The node kind of `context`, or nothing for the rules folded into their parent.
std::optional<SyntaxKind> KindOf(antlr4::ParserRuleContext* context) {
  switch (context->getRuleIndex()) {
    case AccelParser::RuleFile:
      return SyntaxKind::kFile;
    case AccelParser::RuleOverrides:
      return SyntaxKind::kOverrides;
    case AccelParser::RuleImportDecl:
      return SyntaxKind::kImport;
    case AccelParser::RuleLetDecl:
      return SyntaxKind::kLet;
    case AccelParser::RuleEnumDecl:
      return SyntaxKind::kEnum;
    case AccelParser::RuleEnumMember:
      return SyntaxKind::kEnumMember;
    case AccelParser::RuleRecordDecl:
      return SyntaxKind::kRecord;
    case AccelParser::RuleFieldDecl:
      return SyntaxKind::kField;
    case AccelParser::RuleFieldModifier:
      return SyntaxKind::kModifier;
    case AccelParser::RuleType:
      return SyntaxKind::kType;
    case AccelParser::RuleTypeAtom:
      return SyntaxKind::kTypeAtom;
    case AccelParser::RuleRuleDecl:
      return SyntaxKind::kRule;
    case AccelParser::RuleRuleCode:
      return SyntaxKind::kRuleCode;
    case AccelParser::RuleJobDecl:
      return SyntaxKind::kJob;
    case AccelParser::RuleBlock:
      return SyntaxKind::kBlock;
    case AccelParser::RuleStatement:
      return SyntaxKind::kStatement;
    case AccelParser::RulePath:
      return SyntaxKind::kPath;
    case AccelParser::RuleMapEntry:
      return SyntaxKind::kMapEntry;
    // The labelled alternatives of `expr` and `primary` are subclasses; dynamic_cast only
    // there, as it costs a string compare per try with the static ANTLR runtime.
    case AccelParser::RuleExpr:
      if (dynamic_cast<AccelParser::UnaryExprContext*>(context)) return SyntaxKind::kUnary;
      if (dynamic_cast<AccelParser::BinaryExprContext*>(context)) return SyntaxKind::kBinary;
      if (dynamic_cast<AccelParser::IsSetExprContext*>(context)) return SyntaxKind::kIsSet;
      break;
    case AccelParser::RulePrimary:
      if (dynamic_cast<AccelParser::RecordPrimaryContext*>(context)) return SyntaxKind::kRecordLiteral;
      if (dynamic_cast<AccelParser::CallPrimaryContext*>(context)) return SyntaxKind::kCall;
      if (dynamic_cast<AccelParser::ListPrimaryContext*>(context)) return SyntaxKind::kList;
      if (dynamic_cast<AccelParser::MapPrimaryContext*>(context)) return SyntaxKind::kMap;
      if (dynamic_cast<AccelParser::ParenPrimaryContext*>(context)) return SyntaxKind::kParen;
      break;
    default:
      break;
  }
  // decl, member, ident, literal, and the primaries that are a path or a literal.
  return std::nullopt;
}

class Converter {
 public:
  explicit Converter(std::vector<int64_t> index_of) : index_of_(std::move(index_of)) {}

  // Appends the children of `tree` to `node`; a folded rule adds its own children instead.
  void AddChildren(antlr4::tree::ParseTree* tree, SyntaxNode& node) {
    for (antlr4::tree::ParseTree* child : tree->children) {
      if (auto* terminal = dynamic_cast<antlr4::tree::TerminalNode*>(child)) {
        int64_t index = index_of_[terminal->getSymbol()->getTokenIndex()];
        if (index < 0) continue;  // end of file
        node.children.push_back({static_cast<uint32_t>(index), nullptr});
        Cover(node, static_cast<uint32_t>(index), static_cast<uint32_t>(index));
        continue;
      }
      auto* context = dynamic_cast<antlr4::ParserRuleContext*>(child);
      if (context == nullptr) continue;
      std::optional<SyntaxKind> kind = KindOf(context);
      if (!kind) {
        AddChildren(context, node);
        continue;
      }
      auto nested = std::make_unique<SyntaxNode>();
      nested->kind = *kind;
      AddChildren(context, *nested);
      if (nested->first_token <= nested->last_token) Cover(node, nested->first_token, nested->last_token);
      node.children.push_back({0, std::move(nested)});
    }
  }

 private:
  static void Cover(SyntaxNode& node, uint32_t first, uint32_t last) {
    if (node.first_token > node.last_token) {
      node.first_token = first;
      node.last_token = last;
      return;
    }
    node.first_token = std::min(node.first_token, first);
    node.last_token = std::max(node.last_token, last);
  }

  std::vector<int64_t> index_of_;  // ANTLR token index -> SyntaxTree token index, -1 if none
};

}  // namespace

SyntaxTree BuildSyntaxTree(antlr4::BufferedTokenStream& tokens, antlr4::tree::ParseTree* tree,
                           const std::function<uint32_t(size_t)>& to_byte) {
  SyntaxTree result;
  const std::vector<antlr4::Token*>& all = tokens.getTokens();
  std::vector<int64_t> index_of(all.size(), -1);
  for (antlr4::Token* token : all) {
    if (token->getType() == antlr4::Token::EOF) continue;
    SyntaxToken out;
    out.span = {to_byte(token->getStartIndex()), to_byte(token->getStopIndex() + 1)};
    switch (token->getType()) {
      case AccelLexer::LINE_COMMENT:
        out.kind = TokenKind::kLineComment;
        break;
      case AccelLexer::BLOCK_COMMENT:
        out.kind = TokenKind::kBlockComment;
        break;
      case AccelLexer::DOC_COMMENT:
        out.kind = TokenKind::kDocComment;
        break;
      default:
        out.kind = TokenKind::kCode;
        break;
    }
    index_of[token->getTokenIndex()] = static_cast<int64_t>(result.tokens.size());
    result.tokens.push_back(out);
  }
  result.root = std::make_unique<SyntaxNode>();
  auto* context = dynamic_cast<antlr4::ParserRuleContext*>(tree);
  if (context != nullptr) {
    result.root->kind = KindOf(context).value_or(SyntaxKind::kFile);
    Converter(std::move(index_of)).AddChildren(tree, *result.root);
  }
  return result;
}

}  // namespace accel::parse
