#include "compiler/parse/parse.h"

#include <cmath>
#include <exception>

#include <fmt/format.h>

#include "AccelLexer.h"
#include "AccelParser.h"
#include "antlr4-runtime.h"
#include "compiler/parse/guards.h"
#include "compiler/parse/literals.h"
#include "compiler/parse/syntax_errors.h"
#include "compiler/parse/syntax_tree_builder.h"

namespace accel::parse {
namespace {

using accel::grammar::AccelLexer;
using accel::grammar::AccelParser;

// The lexer channel of `///` doc comments (grammar/Accel.g4).
constexpr size_t kDocChannel = 2;

// ANTLR indexes characters by code point; spans are byte offsets. This table maps one to the
// other (entry i = byte offset of code point i; one extra entry for the end).
// A UTF-8 byte-order mark, which ANTLR never sees (Utf32Input leaves it out).
constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

size_t ByteOrderMarkLength(std::string_view text) {
  return text.substr(0, kByteOrderMark.size()) == kByteOrderMark ? kByteOrderMark.size() : 0;
}

std::vector<uint32_t> CodePointOffsets(const std::string& text) {
  std::vector<uint32_t> offsets;
  offsets.reserve(text.size() + 1);
  for (size_t i = ByteOrderMarkLength(text); i < text.size(); ++i) {
    // Continuation bytes (10xxxxxx) do not start a code point.
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) offsets.push_back(static_cast<uint32_t>(i));
  }
  offsets.push_back(static_cast<uint32_t>(text.size()));
  return offsets;
}

// ANTLR's input over text already checked to be UTF-8 (FirstInvalidUtf8), decoded once into a
// buffer of exactly one char32_t per code point. ANTLR's own decoding (codecvt) grows its buffer
// by doubling and copies it: its peak was 21 bytes per input byte, 168 MB for an 8 MB spec.
// A leading byte-order mark is left out, as ANTLR's own loader leaves it out.
class Utf32Input : public antlr4::ANTLRInputStream {
 public:
  explicit Utf32Input(std::string_view utf8) {
    utf8.remove_prefix(ByteOrderMarkLength(utf8));
    size_t points = 0;
    for (char c : utf8) points += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    _data.clear();
    _data.reserve(points);
    for (size_t i = 0; i < utf8.size();) {
      const auto lead = static_cast<unsigned char>(utf8[i]);
      const size_t length = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
      // The lead byte's payload bits: 7, 5, 4 or 3.
      char32_t point = lead & (length == 1 ? 0x7F : length == 2 ? 0x1F : length == 3 ? 0x0F : 0x07);
      for (size_t k = 1; k < length; ++k)
        point = (point << 6) | (static_cast<unsigned char>(utf8[i + k]) & 0x3F);
      _data.push_back(point);
      i += length;
    }
    p = 0;
  }
};

// Walks the ANTLR parse tree and builds the AST. Tolerates the holes that error recovery
// leaves (null children): it is also run on files with syntax errors.
class TreeBuilder {
 public:
  TreeBuilder(const source::SourceFile& source, diag::DiagnosticEngine& diagnostics,
              std::function<uint32_t(size_t)> to_byte, antlr4::BufferedTokenStream& tokens)
      : source_(source), diagnostics_(diagnostics), to_byte_(std::move(to_byte)), tokens_(tokens) {}

  // The statements of `accelc --set` arguments, as one block.
  ast::Block Overrides(AccelParser::OverridesContext* context) {
    if (context == nullptr) return {};
    return Statements(context->statement(), SpanOf(context), HasOwnError(context));
  }

  ast::File Build(AccelParser::FileContext* tree) {
    ast::File file;
    file.source = &source_;
    for (AccelParser::ImportDeclContext* i : tree->importDecl()) {
      ast::ImportDecl import{SpanOf(i), i->source ? StringValue(i->source) : "", std::nullopt};
      if (i->alias) import.alias = NameOf(i->alias);
      file.imports.push_back(std::move(import));
    }
    for (AccelParser::DeclContext* decl : tree->decl()) {
      if (auto* l = decl->letDecl()) {
        // A value that error recovery repaired is dropped: uses of the let then report nothing
        // more, instead of checking a value the user did not write.
        ast::LetDecl let{SpanOf(l), Doc(l), NameOf(l->name), std::nullopt,
                         HasError(l->expr()) ? nullptr : Expression(l->expr())};
        if (l->type()) let.type = Type(l->type());
        file.lets.push_back(std::move(let));
      }
      if (auto* e = decl->enumDecl()) file.enums.push_back(Enum(e));
      if (auto* r = decl->recordDecl()) file.records.push_back(Record(r));
      if (auto* r = decl->ruleDecl()) file.rules.push_back(Rule(r));
      if (auto* j = decl->jobDecl()) file.jobs.push_back(Job(j));
    }
    return file;
  }

 private:
  uint32_t Byte(size_t code_point) const { return to_byte_(code_point); }
  ast::Span SpanOf(antlr4::Token* token) const {
    if (token == nullptr || token->getType() == antlr4::Token::EOF) return {};
    return {Byte(token->getStartIndex()), Byte(token->getStopIndex() + 1)};
  }
  ast::Span SpanOf(antlr4::ParserRuleContext* context) const {
    if (context == nullptr || context->getStart() == nullptr) return {};
    ast::Span begin = SpanOf(context->getStart());
    antlr4::Token* stop = context->getStop();
    // An empty rule (stop before start) covers nothing.
    if (stop == nullptr || stop->getTokenIndex() < context->getStart()->getTokenIndex()) {
      return {begin.begin, begin.begin};
    }
    return {begin.begin, SpanOf(stop).end};
  }

  ast::Name NameOf(AccelParser::IdentContext* ident) const {
    if (ident == nullptr) return {};
    return {ident->getText(), SpanOf(ident)};
  }
  ast::Name NameOf(antlr4::Token* token) const {
    if (token == nullptr) return {};
    return {token->getText(), SpanOf(token)};
  }

  // The `///` lines directly before `context` (on the doc channel), joined by newlines.
  std::string Doc(antlr4::ParserRuleContext* context) const {
    if (context == nullptr || context->getStart() == nullptr) return "";
    std::string out;
    for (antlr4::Token* line :
         tokens_.getHiddenTokensToLeft(context->getStart()->getTokenIndex(), kDocChannel)) {
      std::string text = line->getText().substr(3);  // drop `///`
      if (!text.empty() && text.front() == ' ') text.erase(0, 1);
      // Trailing blanks are invisible, and `accelc fmt` removes them: they are not part of the doc.
      text.erase(text.find_last_not_of(" \t") + 1);
      if (!out.empty()) out += '\n';
      out += text;
    }
    return out;
  }

  ast::EnumDecl Enum(AccelParser::EnumDeclContext* context) {
    ast::EnumDecl decl{SpanOf(context), Doc(context), NameOf(context->name), {}};
    for (AccelParser::EnumMemberContext* m : context->enumMember()) {
      ast::EnumMember member{SpanOf(m), Doc(m), NameOf(m->name), ""};
      member.value = m->value ? StringValue(m->value) : member.name.text;
      decl.members.push_back(std::move(member));
    }
    return decl;
  }

  ast::RecordDecl Record(AccelParser::RecordDeclContext* context) {
    ast::RecordDecl decl;
    decl.span = SpanOf(context);
    decl.doc = Doc(context);
    decl.kind = context->kind ? context->kind->getText() : "record";
    decl.open = context->open != nullptr;
    decl.name = NameOf(context->name);
    for (AccelParser::MemberContext* member : context->member()) {
      if (auto* f = member->fieldDecl()) decl.fields.push_back(Field(f));
      if (auto* r = member->ruleDecl()) decl.rules.push_back(Rule(r));
    }
    return decl;
  }

  ast::FieldDecl Field(AccelParser::FieldDeclContext* context) {
    ast::FieldDecl field;
    field.span = SpanOf(context);
    field.doc = Doc(context);
    field.name = NameOf(context->name);
    field.type = Type(context->type());
    if (context->defaultValue) field.default_value = Expression(context->defaultValue);
    for (AccelParser::FieldModifierContext* modifier : context->fieldModifier()) {
      if (auto* env = dynamic_cast<AccelParser::EnvDefaultContext*>(modifier)) {
        for (antlr4::tree::TerminalNode* id : env->ID()) field.env_vars.push_back(NameOf(id->getSymbol()));
      } else if (auto* where = dynamic_cast<AccelParser::ConstraintContext*>(modifier)) {
        field.constraint = Expression(where->expr());
      } else if (auto* alias = dynamic_cast<AccelParser::AliasModifierContext*>(modifier)) {
        for (AccelParser::IdentContext* name : alias->ident()) field.aliases.push_back(NameOf(name));
      } else if (auto* also = dynamic_cast<AccelParser::AlsoModifierContext*>(modifier)) {
        for (AccelParser::IdentContext* name : also->ident()) field.synonyms.push_back(NameOf(name));
      } else if (auto* deprecated = dynamic_cast<AccelParser::DeprecatedModifierContext*>(modifier)) {
        field.deprecated = deprecated->message ? StringValue(deprecated->message) : "";
      } else if (auto* key = dynamic_cast<AccelParser::KeyModifierContext*>(modifier)) {
        if (key->fileKey) field.file_key = StringValue(key->fileKey);
      }
    }
    return field;
  }

  ast::TypeRef Type(AccelParser::TypeContext* context) {
    ast::TypeRef type;
    if (context == nullptr) return type;
    type.span = SpanOf(context);
    for (AccelParser::TypeAtomContext* a : context->typeAtom()) {
      ast::TypeAtom atom{SpanOf(a), NameOf(a->name), {}, a->optional != nullptr};
      for (AccelParser::TypeContext* argument : a->type()) atom.arguments.push_back(Type(argument));
      type.alternatives.push_back(std::move(atom));
    }
    return type;
  }

  ast::RuleDecl Rule(AccelParser::RuleDeclContext* context) {
    ast::RuleDecl rule;
    rule.span = SpanOf(context);
    rule.doc = Doc(context);
    rule.code = RuleCode(context->code);
    rule.severity = NameOf(context->severity);
    for (AccelParser::IdentContext* target : context->targets) rule.targets.push_back(NameOf(target));
    if (context->message) rule.message = StringValue(context->message);
    rule.condition = Expression(context->expr());
    return rule;
  }

  // `CFG-010` arrives as three tokens; the id is their text, which must not contain spaces.
  ast::Name RuleCode(AccelParser::RuleCodeContext* context) {
    if (context == nullptr) return {};
    ast::Name code{context->getText(), SpanOf(context)};
    if (code.span.end - code.span.begin != code.text.size()) {
      diagnostics_.Emit(diag::Kind::SyntaxError, &source_, code.span,
                        fmt::format("rule id `{}` must not contain spaces; write it as `{}`",
                                    source_.Slice(code.span), code.text));
    }
    return code;
  }

  ast::JobDecl Job(AccelParser::JobDeclContext* context) {
    ast::JobDecl job;
    job.span = SpanOf(context);
    job.doc = Doc(context);
    job.name = NameOf(context->name);
    if (context->base) job.base = NameOf(context->base);
    if (auto* body = context->block()) job.body = Body(body);
    return job;
  }

  // True when error recovery touched `tree`: a rule that failed, or tokens it skipped or
  // made up (error nodes).
  // Iterative: a long `1+1+...` chain is one parse-tree level per operator, deeper than any
  // stack would allow to recurse over.
  static bool HasError(antlr4::tree::ParseTree* tree) {
    std::vector<antlr4::tree::ParseTree*> pending;
    if (tree != nullptr) pending.push_back(tree);
    while (!pending.empty()) {
      antlr4::tree::ParseTree* node = pending.back();
      pending.pop_back();
      if (dynamic_cast<antlr4::tree::ErrorNode*>(node) != nullptr) return true;
      if (auto* rule = dynamic_cast<antlr4::ParserRuleContext*>(node); rule && rule->exception) return true;
      pending.insert(pending.end(), node->children.begin(), node->children.end());
    }
    return false;
  }

  // Like HasError, but only for `context` itself and its direct tokens, not its sub-rules.
  static bool HasOwnError(antlr4::ParserRuleContext* context) {
    if (context->exception) return true;
    for (antlr4::tree::ParseTree* child : context->children) {
      if (dynamic_cast<antlr4::tree::ErrorNode*>(child) != nullptr) return true;
    }
    return false;
  }

  ast::Block Body(AccelParser::BlockContext* context) {
    return Statements(context->statement(), SpanOf(context), HasOwnError(context));
  }

  ast::Block Statements(const std::vector<AccelParser::StatementContext*>& statements, source::Span span,
                        bool recovered) {
    ast::Block block{span, {}, recovered};
    for (AccelParser::StatementContext* s : statements) {
      ast::Statement statement;
      statement.span = SpanOf(s);
      // A statement that error recovery broke is dropped (the syntax error was reported), and
      // the block is marked, so that later phases skip what it leaves out instead of piling
      // errors on it. Nested blocks and record literals keep their intact statements.
      if (auto* b = dynamic_cast<AccelParser::BlockStatementContext*>(s)) {
        if (HasOwnError(b) || HasError(b->path()) || b->block() == nullptr) {
          block.recovered = true;
          continue;
        }
        statement.path = Path(b->path());
        statement.block = std::make_unique<ast::Block>(Body(b->block()));
      } else if (auto* a = dynamic_cast<AccelParser::AssignStatementContext*>(s)) {
        auto* primary = a->expr() ? dynamic_cast<AccelParser::PrimaryExprContext*>(a->expr()) : nullptr;
        bool record = primary && dynamic_cast<AccelParser::RecordPrimaryContext*>(primary->primary());
        if (HasOwnError(a) || HasError(a->path()) || (record ? HasOwnError(primary) : HasError(a->expr()))) {
          block.recovered = true;
          continue;
        }
        statement.path = Path(a->path());
        statement.value = Expression(a->expr());
      } else {
        block.recovered = true;
        continue;
      }
      if (statement.block || statement.value) {
        block.statements.push_back(std::move(statement));
      } else {
        block.recovered = true;
      }
    }
    return block;
  }

  std::vector<ast::Name> Path(AccelParser::PathContext* context) {
    std::vector<ast::Name> path;
    if (context == nullptr) return path;
    for (AccelParser::IdentContext* ident : context->ident()) path.push_back(NameOf(ident));
    return path;
  }

  ast::ExprPtr Make(ast::ExprKind kind, ast::Span span) {
    auto expr = std::make_unique<ast::Expr>();
    expr->kind = kind;
    expr->span = span;
    return expr;
  }

  // Bounds the depth of the syntax tree, so that no later recursive walk (checking, printing,
  // destruction) can exhaust the stack on a hostile input like `1+1+...+1` a million terms long.
  class DepthGuard {
   public:
    explicit DepthGuard(int& depth) : depth_(depth) { ++depth_; }
    ~DepthGuard() { --depth_; }

   private:
    int& depth_;
  };

  ast::ExprPtr Expression(AccelParser::ExprContext* context) {
    if (context == nullptr) return nullptr;
    DepthGuard guard(depth_);
    ast::Span span = SpanOf(context);
    if (depth_ > kMaxNesting) {
      if (!reported_depth_) {
        reported_depth_ = true;
        // Brackets were bounded before parsing: what is this deep is a chain of operators.
        diagnostics_.Emit(diag::Kind::NestingTooDeep, &source_, {span.begin, span.begin + 1},
                          "an expression whose operators chain (`1 + 1 + ...`, each one a level) goes",
                          kMaxNesting, "split it and name its parts with `let`");
      }
      return nullptr;
    }
    if (auto* is_set = dynamic_cast<AccelParser::IsSetExprContext*>(context)) {
      ast::ExprPtr operand = Expression(is_set->expr());
      if (!operand) return nullptr;
      ast::ExprPtr expr = Make(ast::ExprKind::IsSet, span);
      expr->bool_value = is_set->negated != nullptr;
      expr->operands.push_back(std::move(operand));
      return expr;
    }
    if (auto* unary = dynamic_cast<AccelParser::UnaryExprContext*>(context)) {
      ast::ExprPtr operand = Expression(unary->expr());
      if (!operand) return nullptr;
      // Fold `-` into numeric literals so `-1` is a literal, as users read it.
      if (unary->op->getText() == "-" && operand->kind == ast::ExprKind::Int) {
        operand->int_value = -operand->int_value;
        operand->span = span;
        return operand;
      }
      if (unary->op->getText() == "-" && operand->kind == ast::ExprKind::Float) {
        operand->float_value = -operand->float_value;
        operand->span = span;
        return operand;
      }
      ast::ExprPtr expr = Make(ast::ExprKind::Unary, span);
      expr->text = unary->op->getText();
      expr->operands.push_back(std::move(operand));
      return expr;
    }
    if (auto* binary = dynamic_cast<AccelParser::BinaryExprContext*>(context)) {
      ast::ExprPtr lhs = Expression(binary->expr(0));
      ast::ExprPtr rhs = Expression(binary->expr(1));
      if (!lhs || !rhs) return nullptr;
      ast::ExprPtr expr = Make(ast::ExprKind::Binary, span);
      expr->text = binary->op->getText();
      expr->operands.push_back(std::move(lhs));
      expr->operands.push_back(std::move(rhs));
      return expr;
    }
    if (auto* primary = dynamic_cast<AccelParser::PrimaryExprContext*>(context)) {
      return Primary(primary->primary());
    }
    return nullptr;
  }

  ast::ExprPtr Primary(AccelParser::PrimaryContext* context) {
    if (context == nullptr) return nullptr;
    ast::Span span = SpanOf(context);
    if (auto* literal = dynamic_cast<AccelParser::LiteralPrimaryContext*>(context)) {
      return Literal(literal->literal());
    }
    if (auto* record = dynamic_cast<AccelParser::RecordPrimaryContext*>(context)) {
      ast::ExprPtr expr = Make(ast::ExprKind::Record, span);
      expr->text = NameOf(record->typeName).text;
      expr->path.push_back(NameOf(record->typeName));
      if (record->block()) expr->block = std::make_unique<ast::Block>(Body(record->block()));
      return expr;
    }
    if (auto* call = dynamic_cast<AccelParser::CallPrimaryContext*>(context)) {
      ast::ExprPtr expr = Make(ast::ExprKind::Call, span);
      expr->text = NameOf(call->callee).text;
      expr->path.push_back(NameOf(call->callee));
      for (AccelParser::ExprContext* argument : call->expr()) {
        if (ast::ExprPtr value = Expression(argument)) expr->operands.push_back(std::move(value));
      }
      return expr;
    }
    if (auto* path = dynamic_cast<AccelParser::PathPrimaryContext*>(context)) {
      ast::ExprPtr expr = Make(ast::ExprKind::Path, span);
      expr->path = Path(path->path());
      return expr;
    }
    if (auto* list = dynamic_cast<AccelParser::ListPrimaryContext*>(context)) {
      ast::ExprPtr expr = Make(ast::ExprKind::List, span);
      for (AccelParser::ExprContext* item : list->expr()) {
        if (ast::ExprPtr value = Expression(item)) expr->operands.push_back(std::move(value));
      }
      return expr;
    }
    if (auto* map = dynamic_cast<AccelParser::MapPrimaryContext*>(context)) {
      ast::ExprPtr expr = Make(ast::ExprKind::Map, span);
      for (AccelParser::MapEntryContext* entry : map->mapEntry()) {
        ast::ExprPtr value = Expression(entry->expr());
        if (!value) continue;
        ast::Name key =
            entry->key ? ast::Name{StringValue(entry->key), SpanOf(entry->key)} : NameOf(entry->name);
        expr->path.push_back(std::move(key));
        expr->operands.push_back(std::move(value));
      }
      return expr;
    }
    if (auto* paren = dynamic_cast<AccelParser::ParenPrimaryContext*>(context)) {
      return Expression(paren->expr());
    }
    return nullptr;
  }

  ast::ExprPtr Literal(AccelParser::LiteralContext* context) {
    if (context == nullptr || context->getStart() == nullptr) return nullptr;
    antlr4::Token* token = context->getStart();
    ast::Span span = SpanOf(token);
    std::string text = token->getText();
    switch (token->getType()) {
      case AccelLexer::INT: {
        ast::ExprPtr expr = Make(ast::ExprKind::Int, span);
        std::optional<int64_t> value = ParseIntLiteral(text);
        if (!value) {
          // No value rather than a wrong one: the statement is dropped, not checked as 0.
          diagnostics_.Emit(diag::Kind::IntegerTooLarge, &source_, span, text);
          return nullptr;
        }
        expr->int_value = *value;
        return expr;
      }
      case AccelLexer::FLOAT: {
        ast::ExprPtr expr = Make(ast::ExprKind::Float, span);
        expr->float_value = ParseFloatLiteral(text);
        if (!std::isfinite(expr->float_value)) {
          diagnostics_.Emit(diag::Kind::FloatOutOfRange, &source_, span, text);
          return nullptr;
        }
        return expr;
      }
      case AccelLexer::DURATION:
      case AccelLexer::BYTES: {
        bool duration = token->getType() == AccelLexer::DURATION;
        ast::ExprPtr expr = Make(duration ? ast::ExprKind::Duration : ast::ExprKind::Bytes, span);
        expr->text = text;
        std::optional<int64_t> value = duration ? ParseDurationMs(text) : ParseByteSize(text);
        if (!value) {
          diagnostics_.Emit(diag::Kind::IntegerTooLarge, &source_, span, text);
          return nullptr;
        }
        expr->int_value = *value;
        return expr;
      }
      case AccelLexer::STRING: {
        ast::ExprPtr expr = Make(ast::ExprKind::String, span);
        expr->text = StringValue(token);
        return expr;
      }
      default:
        break;
    }
    if (text == "true" || text == "false") {
      ast::ExprPtr expr = Make(ast::ExprKind::Bool, span);
      expr->bool_value = text == "true";
      return expr;
    }
    return Make(ast::ExprKind::None, span);
  }

  // The value of a STRING token; reports the first bad escape sequence.
  std::string StringValue(antlr4::Token* token) {
    UnescapeResult result = UnescapeString(token->getText());
    if (result.bad_escape_at) {
      uint32_t at = SpanOf(token).begin + static_cast<uint32_t>(*result.bad_escape_at);
      diagnostics_.Emit(diag::Kind::InvalidEscape, &source_, {at, at + 2}, source_.Slice({at, at + 2}));
    }
    return result.value;
  }

  const source::SourceFile& source_;
  diag::DiagnosticEngine& diagnostics_;
  std::function<uint32_t(size_t)> to_byte_;
  antlr4::BufferedTokenStream& tokens_;
  int depth_ = 0;
  bool reported_depth_ = false;
};

}  // namespace

namespace {

// Rejects nesting deeper than kMaxNesting before the parser recurses into it: brackets, and
// runs of prefix operators (`- - - x`), which ANTLR also parses recursively.
bool CheckNesting(antlr4::CommonTokenStream& tokens, const source::SourceFile& source,
                  const std::function<uint32_t(size_t)>& to_byte, diag::DiagnosticEngine& diagnostics) {
  int depth = 0;
  int type_depth = 0;   // `list<map<...` type arguments
  int prefix_run = 0;   // `- - - x`, `not not x`
  int implies_run = 0;  // `a implies b implies ...` (right-associative, so recursive)
  std::string previous;
  for (antlr4::Token* token : tokens.getTokens()) {
    if (token->getChannel() != antlr4::Token::DEFAULT_CHANNEL) continue;
    std::string text = token->getType() == antlr4::Token::EOF ? "" : token->getText();
    if (text == "(" || text == "[" || text == "{") ++depth;
    if (text == ")" || text == "]" || text == "}") depth = std::max(0, depth - 1);
    if (text == "<" && (previous == "list" || previous == "map")) ++type_depth;
    if (text == ">" && type_depth > 0) --type_depth;
    prefix_run = (text == "-" || text == "not") ? prefix_run + 1 : 0;
    if (text == "implies") ++implies_run;
    if (text == ";" || text == "{" || text == "}" || text == "rule") implies_run = 0;
    previous = text;
    if (depth > kMaxNesting || type_depth > kMaxNesting || prefix_run > kMaxNesting ||
        implies_run > kMaxNesting) {
      uint32_t at = to_byte(token->getStartIndex());
      diagnostics.Emit(diag::Kind::NestingTooDeep, &source, {at, at + 1}, "nesting", kMaxNesting,
                       "flatten it or name parts with `let`");
      return false;
    }
  }
  return true;
}

// Counts the file's tokens before ANTLR stores them, and refuses a file with more than
// kMaxTokens (A1011): ANTLR's tokens and tree cost ~570 bytes a token, so a flat list of 8 M
// numbers in 16 MB took 9.5 GB and 46 s. The count keeps one token at a time.
bool CheckTokenCount(antlr4::ANTLRInputStream& input, const source::SourceFile& source,
                     const std::function<uint32_t(size_t)>& to_byte, diag::DiagnosticEngine& diagnostics) {
  AccelLexer counter(&input);
  counter.removeErrorListeners();
  size_t count = 0;
  for (std::unique_ptr<antlr4::Token> token = counter.nextToken(); token->getType() != antlr4::Token::EOF;
       token = counter.nextToken()) {
    // Comments count too: ANTLR's token stream keeps every one.
    if (++count <= kMaxTokens) continue;
    uint32_t at = to_byte(token->getStartIndex());
    diagnostics.Emit(diag::Kind::TooManyValues, &source, {at, at + 1},
                     fmt::format("holds more than {} tokens (names, numbers, strings, symbols and comments)", kMaxTokens));
    return false;
  }
  input.reset();
  return true;
}

// 64 MiB: ANTLR uses a few KiB of stack per nesting level; kMaxNesting levels fit many times.
constexpr size_t kParserStackBytes = 64u << 20;

// Runs ANTLR over `source` from the start rule `start` and hands the tree and its tokens to `build`:
// UTF-8 and nesting checks, a big stack, two-stage SLL/LL prediction, located syntax errors.
template <typename Start, typename Build>
void RunParser(const source::SourceFile& source, diag::DiagnosticEngine& diagnostics, Start start,
               Build build) {
  if (std::optional<size_t> bad = FirstInvalidUtf8(source.text())) {
    uint32_t at = static_cast<uint32_t>(*bad);
    diagnostics.Emit(diag::Kind::InvalidUtf8, &source, {at, at + 1},
                     static_cast<unsigned char>(source.text()[at]));
    return;
  }
  // Pure ASCII (the common case) needs no table: code point i is byte i.
  bool ascii = std::all_of(source.text().begin(), source.text().end(),
                           [](char c) { return static_cast<unsigned char>(c) < 0x80; });
  std::vector<uint32_t> offsets = ascii ? std::vector<uint32_t>{} : CodePointOffsets(source.text());
  uint32_t size = static_cast<uint32_t>(source.text().size());
  auto to_byte = [&offsets, ascii, size](size_t index) -> uint32_t {
    if (ascii) return index < size ? static_cast<uint32_t>(index) : size;
    return index < offsets.size() ? offsets[index] : offsets.back();
  };
  RunWithStack(kParserStackBytes, [&] {
    // ANTLR is allowed to throw only inside this function (STYLE.md: one boundary per library).
    try {
      Utf32Input input(source.text());
      // Every token takes a byte at least: a file no longer than the bound needs no count.
      if (source.text().size() > kMaxTokens && !CheckTokenCount(input, source, to_byte, diagnostics)) return;
      AccelLexer lexer(&input);
      lexer.removeErrorListeners();
      antlr4::CommonTokenStream tokens(&lexer);
      tokens.fill();
      if (!CheckNesting(tokens, source, to_byte, diagnostics)) return;
      AccelParser parser(&tokens);
      // Two-stage parsing: the fast SLL prediction mode with bail-out on the first error
      // decides almost every file; only a file with a syntax error (or a construct SLL cannot
      // decide) is parsed again with full LL and error recovery, which reports every error.
      parser.removeErrorListeners();
      parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(
          antlr4::atn::PredictionMode::SLL);
      parser.setErrorHandler(std::make_shared<antlr4::BailErrorStrategy>());
      decltype(start(parser)) tree = nullptr;
      try {
        tree = start(parser);
      } catch (const antlr4::ParseCancellationException&) {
        tokens.seek(0);
        parser.reset();
        parser.setErrorHandler(std::make_shared<antlr4::DefaultErrorStrategy>());
        parser.getInterpreter<antlr4::atn::ParserATNSimulator>()->setPredictionMode(
            antlr4::atn::PredictionMode::LL);
        tree = nullptr;
      }
      SyntaxErrorListener listener(source, diagnostics, to_byte);
      if (tree == nullptr) {
        parser.addErrorListener(&listener);
        tree = start(parser);
      }
      TreeBuilder builder(source, diagnostics, to_byte, tokens);
      build(builder, tree, tokens, to_byte);
    } catch (const std::exception& error) {
      diagnostics.Emit(diag::Kind::SyntaxError, &source, {},
                       std::string("the parser gave up: ") + error.what());
    }
  });
}

}  // namespace

ast::File Parse(const source::SourceFile& source, diag::DiagnosticEngine& diagnostics, SyntaxTree* syntax) {
  ast::File file;
  file.source = &source;
  int errors_before = diagnostics.error_count();
  RunParser(
      source, diagnostics, [](AccelParser& parser) { return parser.file(); },
      [&](TreeBuilder& builder, AccelParser::FileContext* tree, antlr4::BufferedTokenStream& tokens,
          const std::function<uint32_t(size_t)>& to_byte) {
        file = builder.Build(tree);
        // A tree that error recovery patched up is not the file's syntax; no one gets it.
        if (syntax != nullptr && diagnostics.error_count() == errors_before) {
          *syntax = BuildSyntaxTree(tokens, tree, to_byte);
        }
      });
  file.source = &source;
  return file;
}

ast::Block ParseOverrides(const source::SourceFile& source, diag::DiagnosticEngine& diagnostics) {
  ast::Block block;
  RunParser(
      source, diagnostics, [](AccelParser& parser) { return parser.overrides(); },
      [&](TreeBuilder& builder, AccelParser::OverridesContext* tree, antlr4::BufferedTokenStream&,
          const std::function<uint32_t(size_t)>&) { block = builder.Overrides(tree); });
  return block;
}

}  // namespace accel::parse
