#include "compiler/format/format.h"

#include <string_view>

#include "compiler/format/meaning.h"
#include "compiler/format/printer.h"
#include "compiler/parse/parse.h"

namespace accel::format {

Formatted Format(const source::SourceFile& source, diag::DiagnosticEngine& diagnostics, size_t line_limit) {
  // A UTF-8 byte-order mark is no part of the layout (editors on Windows add one): the canonical
  // file has none, and the rest is formatted as if it had never been there.
  constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";
  if (std::string_view(source.text()).substr(0, kByteOrderMark.size()) == kByteOrderMark) {
    return Format(source::SourceFile(source.name(), source.text().substr(kByteOrderMark.size())), diagnostics,
                  line_limit);
  }
  Formatted result;
  parse::SyntaxTree syntax;
  ast::File file = parse::Parse(source, diagnostics, &syntax);
  if (diagnostics.has_errors() || !syntax.root) {
    result.outcome = Formatted::Outcome::kSyntaxErrors;
    return result;
  }
  std::string text = PrintCanonical(source, syntax, line_limit);
  if (text == source.text()) {
    result.text = std::move(text);
    return result;
  }

  // The layout is only ever allowed to move tokens and comments around; check that it did no
  // more. Costs a second parse, about as much as the first.
  source::SourceFile formatted(source.name(), text);
  diag::DiagnosticEngine reparse_diagnostics;
  parse::SyntaxTree formatted_syntax;
  ast::File formatted_file = parse::Parse(formatted, reparse_diagnostics, &formatted_syntax);
  if (reparse_diagnostics.has_errors() || !formatted_syntax.root) {
    result.outcome = Formatted::Outcome::kUnsafe;
    result.problem = "the formatted text does not parse";
    return result;
  }
  if (MeaningKey(source, syntax, file) != MeaningKey(formatted, formatted_syntax, formatted_file)) {
    result.outcome = Formatted::Outcome::kUnsafe;
    result.problem = "the formatted text parses differently or lost a comment";
    return result;
  }
  result.text = std::move(text);
  return result;
}

}  // namespace accel::format
