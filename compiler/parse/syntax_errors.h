#ifndef ACCEL_COMPILER_PARSE_SYNTAX_ERRORS_H_
#define ACCEL_COMPILER_PARSE_SYNTAX_ERRORS_H_

#include <functional>
#include <string>

#include "BaseErrorListener.h"
#include "compiler/diagnostics/diagnostic.h"

// Turns ANTLR's syntax errors into A1xxx diagnostics. Internal to compiler/parse.
namespace accel::parse {

// Maps an ANTLR code-point index to a byte offset in the source (ANTLR decodes UTF-8).
using OffsetMap = std::function<uint32_t(size_t)>;

class SyntaxErrorListener : public antlr4::BaseErrorListener {
 public:
  SyntaxErrorListener(const source::SourceFile& source, diag::DiagnosticEngine& diagnostics,
                      OffsetMap to_byte)
      : source_(source), diagnostics_(diagnostics), to_byte_(std::move(to_byte)) {}

  void syntaxError(antlr4::Recognizer* recognizer, antlr4::Token* offending, size_t line, size_t column,
                   const std::string& message, std::exception_ptr error) override;

 private:
  const source::SourceFile& source_;
  diag::DiagnosticEngine& diagnostics_;
  OffsetMap to_byte_;
};

}  // namespace accel::parse

#endif  // ACCEL_COMPILER_PARSE_SYNTAX_ERRORS_H_
