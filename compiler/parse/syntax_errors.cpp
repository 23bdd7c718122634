#include "compiler/parse/syntax_errors.h"

#include <vector>

#include <fmt/format.h>

#include "AccelLexer.h"
#include "AccelParser.h"
#include "Parser.h"

namespace accel::parse {
namespace {

using accel::grammar::AccelLexer;

// How an expected token reads in a message: keywords and punctuation in backticks, token
// classes as words.
std::string DisplayToken(size_t type, const antlr4::dfa::Vocabulary& vocabulary) {
  switch (type) {
    case antlr4::Token::EOF:
      return "end of file";
    case AccelLexer::ID:
      return "a name";
    case AccelLexer::INT:
      return "an integer";
    case AccelLexer::FLOAT:
      return "a number";
    case AccelLexer::STRING:
      return "a string";
    case AccelLexer::DURATION:
      return "a duration";
    case AccelLexer::BYTES:
      return "a byte size";
    case AccelLexer::DOC_COMMENT:
      return "a doc comment";
    default:
      break;
  }
  std::string literal = vocabulary.getLiteralName(type);
  if (literal.size() >= 2 && literal.front() == '\'') {
    return "`" + literal.substr(1, literal.size() - 2) + "`";
  }
  return vocabulary.getSymbolicName(type);
}

std::string ExpectedList(antlr4::Parser& parser) {
  std::vector<std::string> names;
  bool any_name = false;
  for (size_t type : parser.getExpectedTokens().toList()) {
    // Soft keywords are also names: list "a name" once instead of every keyword.
    if (type == AccelLexer::ID) any_name = true;
    names.push_back(DisplayToken(type, parser.getVocabulary()));
  }
  if (names.empty()) return "";
  if (any_name && names.size() > 6) return "a name or an expression";
  if (names.size() > 8) return "";
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += names[i];
  }
  return out;
}

}  // namespace

void SyntaxErrorListener::syntaxError(antlr4::Recognizer* recognizer, antlr4::Token* offending, size_t line,
                                      size_t column, const std::string& message, std::exception_ptr error) {
  if (offending == nullptr) {
    // Lexer errors cannot happen (UNEXPECTED matches any character); keep ANTLR's text anyway.
    diagnostics_.Emit(diag::Kind::SyntaxError, &source_, {}, message);
    return;
  }
  source::Span span;
  if (offending->getType() == antlr4::Token::EOF) {
    uint32_t end = static_cast<uint32_t>(source_.text().size());
    span = {end, end};
  } else {
    span = {to_byte_(offending->getStartIndex()), to_byte_(offending->getStopIndex() + 1)};
  }
  if (offending->getType() == AccelLexer::BAD_NUMBER) {
    diagnostics_.Emit(diag::Kind::BadNumber, &source_, span, offending->getText());
    return;
  }
  if (offending->getType() == AccelLexer::UNTERMINATED_STRING) {
    diagnostics_.Emit(diag::Kind::UnterminatedString, &source_, span);
    return;
  }
  if (offending->getType() == AccelLexer::UNEXPECTED) {
    std::string text = offending->getText();
    unsigned char c = text.empty() ? 0 : static_cast<unsigned char>(text[0]);
    // Control characters are named by code, not printed.
    diagnostics_.Emit(diag::Kind::UnexpectedCharacter, &source_, span,
                      text.size() == 1 && (c < 0x20 || c == 0x7f) ? fmt::format("\\x{:02x}", c) : text);
    return;
  }
  std::string observed = offending->getType() == antlr4::Token::EOF
                             ? "unexpected end of file"
                             : "unexpected `" + offending->getText() + "`";
  std::string expected;
  if (auto* parser = dynamic_cast<antlr4::Parser*>(recognizer)) expected = ExpectedList(*parser);
  diagnostics_.Emit(diag::Kind::SyntaxError, &source_, span,
                    expected.empty() ? observed : observed + "; expected " + expected);
}

}  // namespace accel::parse
