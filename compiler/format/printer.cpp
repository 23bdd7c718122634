#include "compiler/format/printer.h"

#include <algorithm>
#include <optional>
#include <string_view>
#include <utility>

namespace accel::format {
namespace {

using parse::SyntaxChild;
using parse::SyntaxKind;
using parse::SyntaxNode;
using parse::SyntaxToken;
using parse::TokenKind;

constexpr int kIndentWidth = 2;
// A line an expression continues on is indented at least this much past its item's line.
constexpr int kContinuationIndent = 4;

// What goes between the text already written and the next token.
enum class Gap {
  kNone,         // nothing: `a.b`, `f(`, `x,`
  kSpace,        // one space
  kSoftWide,     // two spaces, or the author's line break: before a field modifier (`int = 25  where ...`)
  kSoftNone,     // nothing, or the author's line break (inside expressions)
  kSoftSpace,    // one space, or the author's line break (around binary operators)
  kLine,         // a new line at the block's indentation, after the author's blank line if any
  kLineNoBlank,  // a new line, never after a blank one (a closing bracket)
};

bool IsLine(Gap gap) { return gap == Gap::kLine || gap == Gap::kLineNoBlank; }

// Columns are counted in code points, so that a line of non-ASCII text is measured as it shows.
size_t CodePoints(std::string_view text) {
  return static_cast<size_t>(std::count_if(
      text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

// Drops trailing blanks from every line of a comment, and the CR of CRLF line ends.
std::string CleanComment(std::string_view text) {
  std::string out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    size_t last = line.find_last_not_of(" \t\r");
    line = last == std::string_view::npos ? std::string_view() : line.substr(0, last + 1);
    if (start > 0) out += '\n';
    out += line;
    start = end + 1;
  }
  return out;
}

class Printer {
 public:
  Printer(const source::SourceFile& source, const parse::SyntaxTree& syntax, size_t line_limit, bool flat)
      : source_(source), syntax_(syntax), line_limit_(line_limit), flat_(flat) {}

  std::string Run() {
    if (syntax_.root) Node(*syntax_.root, Gap::kLine);
    // Comments after the last declaration.
    FlushComments(static_cast<uint32_t>(syntax_.tokens.size()), Gap::kLine);
    if (!out_.empty()) out_ += '\n';
    return std::move(out_);
  }

  // The width of `node` printed on one line, or nothing when it cannot be: it holds a comment or
  // a block with statements.
  std::optional<size_t> FlatWidth(const SyntaxNode& node) const {
    Printer flat(source_, syntax_, line_limit_, /*flat=*/true);
    flat.measured_ = &node;
    flat.cursor_ = node.first_token;
    flat.Node(node, Gap::kNone);
    if (flat.failed_) return std::nullopt;
    return CodePoints(flat.out_);
  }

 private:
  // ---- tokens and the source around them ----------------------------------------------------

  std::string_view Text(uint32_t token) const { return source_.Slice(syntax_.tokens[token].span); }
  bool Is(const SyntaxChild& child, std::string_view text) const {
    return !child.node && Text(child.token) == text;
  }

  size_t NewlinesBetween(uint32_t begin, uint32_t end) const {
    if (end <= begin) return 0;
    std::string_view between = std::string_view(source_.text()).substr(begin, end - begin);
    return static_cast<size_t>(std::count(between.begin(), between.end(), '\n'));
  }
  // The line breaks between token `token` and whatever precedes it in the source.
  size_t NewlinesBefore(uint32_t token) const {
    uint32_t previous_end = token == 0 ? 0 : syntax_.tokens[token - 1].span.end;
    uint32_t begin = token < syntax_.tokens.size() ? syntax_.tokens[token].span.begin
                                                   : static_cast<uint32_t>(source_.text().size());
    return NewlinesBetween(previous_end, begin);
  }
  int SourceColumn(uint32_t token) const {
    return static_cast<int>(source_.Locate(syntax_.tokens[token].span.begin).column) - 1;
  }

  // ---- writing --------------------------------------------------------------------------------

  size_t Column() const {
    size_t line_start = out_.rfind('\n');
    return CodePoints(std::string_view(out_).substr(line_start == std::string::npos ? 0 : line_start + 1));
  }

  void NewLine(bool blank, int indent) {
    if (out_.empty()) return;  // nothing, not even a blank line, starts the file
    out_ += blank ? "\n\n" : "\n";
    out_.append(static_cast<size_t>(indent), ' ');
  }

  // Where a line that continues the current item starts: the author's indentation relative to
  // the item's first line, and at least kContinuationIndent past it.
  int ContinuationIndent(uint32_t token) const {
    if (token >= syntax_.tokens.size()) return item_indent_ + kContinuationIndent;
    return item_indent_ + std::max(kContinuationIndent, SourceColumn(token) - item_column_);
  }

  // Writes the comments between the last written token and `next` (skipping the code tokens
  // the layout drops, `;` and trailing commas). `gap` is what the caller puts before `next`:
  // a comment on its own line is indented like a line of the block when `next` starts one,
  // else like a continuation line (measured at the comment, which starts its line, so that a
  // second run measures the same).
  void FlushComments(uint32_t next, Gap gap) {
    for (uint32_t i = cursor_; i < next; ++i) {
      const SyntaxToken& token = syntax_.tokens[i];
      if (token.kind == TokenKind::kCode) continue;
      if (flat_) {
        failed_ = true;
        return;
      }
      size_t newlines = NewlinesBefore(i);
      if (out_.empty()) {
        // The file starts with this comment.
      } else if (newlines == 0 && !need_newline_) {
        out_ += ' ';  // at the end of the line, or between two tokens: stays there
      } else {
        NewLine(newlines >= 2 && !after_open_, IsLine(gap) ? indent_ * kIndentWidth : ContinuationIndent(i));
      }
      out_ += CleanComment(Text(i));
      // A line comment ends its line; a block comment does when the author ended the line there.
      need_newline_ = token.kind != TokenKind::kBlockComment || NewlinesBefore(i + 1) > 0;
      after_comment_ = true;
      after_open_ = false;
    }
    cursor_ = std::max(cursor_, next);
  }

  void WriteGap(uint32_t token, Gap gap) {
    if (flat_ && IsLine(gap)) failed_ = true;
    bool soft = gap == Gap::kSoftNone || gap == Gap::kSoftSpace || gap == Gap::kSoftWide;
    if (out_.empty()) {
      // The first token of the file.
    } else if (!flat_ && (IsLine(gap) || need_newline_ || (soft && NewlinesBefore(token) > 0))) {
      bool blank = gap == Gap::kLine && !after_open_ && NewlinesBefore(token) >= 2;
      NewLine(blank, IsLine(gap) ? indent_ * kIndentWidth : ContinuationIndent(token));
    } else if (gap == Gap::kSoftWide) {
      out_ += "  ";
    } else if (gap == Gap::kSpace || gap == Gap::kSoftSpace || after_comment_) {
      out_ += ' ';
    }
  }

  void Emit(uint32_t token, Gap gap) {
    FlushComments(token, gap);
    WriteGap(token, gap);
    out_ += Text(token);
    cursor_ = token + 1;
    need_newline_ = false;
    after_comment_ = false;
    after_open_ = false;
  }

  // The comma after an element. The source's own commas are skipped like `;`: a list on one line
  // has none after its last element, a broken list one after every element.
  void EmitComma() { out_ += ','; }

  // Keeps continuation lines of the item that starts at `first_token` relative to it.
  class ItemScope {
   public:
    ItemScope(Printer& printer, uint32_t first_token)
        : printer_(printer), indent_(printer.item_indent_), column_(printer.item_column_) {
      printer.item_indent_ = printer.indent_ * kIndentWidth;
      printer.item_column_ =
          first_token < printer.syntax_.tokens.size() ? printer.SourceColumn(first_token) : 0;
    }
    ~ItemScope() {
      printer_.item_indent_ = indent_;
      printer_.item_column_ = column_;
    }

   private:
    Printer& printer_;
    int indent_;
    int column_;
  };

  uint32_t FirstToken(const SyntaxChild& child) const {
    return child.node ? child.node->first_token : child.token;
  }
  uint32_t LastToken(const SyntaxChild& child) const {
    return child.node ? child.node->last_token : child.token;
  }
  uint32_t LineOf(uint32_t token) const { return source_.Locate(syntax_.tokens[token].span.begin).line; }

  // Whether the item `child` keeps its one line as written: when the author wrote it on one line
  // and a comment refers to that line, either at its end or as an `accelc-ignore` comment on the
  // line before. Such comments (suppressions, test expectations) name a line, so splitting the
  // item over several lines would change what they apply to.
  bool KeepsLine(const SyntaxChild& child) const {
    uint32_t first = FirstToken(child);
    uint32_t last = LastToken(child);
    if (flat_ || first > last || LineOf(first) != LineOf(last)) return false;
    if (first > 0 && syntax_.tokens[first - 1].kind == TokenKind::kLineComment &&
        Text(first - 1).find("accelc-ignore[") != std::string_view::npos &&
        LineOf(first - 1) + 1 == LineOf(first)) {
      return true;
    }
    for (uint32_t i = last + 1; i < syntax_.tokens.size(); ++i) {
      const SyntaxToken& token = syntax_.tokens[i];
      if (token.kind == TokenKind::kCode) {
        if (Text(i) == ";" || Text(i) == ",") continue;
        return false;
      }
      // A trailing doc comment documents the next declaration, not this line.
      return token.kind != TokenKind::kDocComment &&
             NewlinesBetween(syntax_.tokens[last].span.end, token.span.begin) == 0;
    }
    return false;
  }

  // Prints one item of a block, a record, a list or the file on a new line.
  void Item(const SyntaxChild& child) {
    ItemScope item(*this, FirstToken(child));
    bool keep = KeepsLine(child);
    keep_line_ += keep;
    Child(child, Gap::kLine);
    keep_line_ -= keep;
  }

  // Opens a bracket whose contents go one per line.
  void Open(uint32_t token, Gap gap) {
    Emit(token, gap);
    ++indent_;
    after_open_ = true;
  }
  // Closes it: comments before the bracket stay inside, at the inner indentation.
  void Close(uint32_t token) {
    FlushComments(token, Gap::kLine);
    --indent_;
    Emit(token, Gap::kLineNoBlank);
  }

  bool HasCommentBetween(uint32_t first, uint32_t last) const {
    for (uint32_t i = first; i <= last && i < syntax_.tokens.size(); ++i) {
      if (syntax_.tokens[i].kind != TokenKind::kCode) return true;
    }
    return false;
  }

  // ---- the grammar ----------------------------------------------------------------------------

  void Child(const SyntaxChild& child, Gap gap) {
    if (child.node) {
      Node(*child.node, gap);
    } else {
      Emit(child.token, gap);
    }
  }

  void Node(const SyntaxNode& node, Gap gap) {
    switch (node.kind) {
      case SyntaxKind::kFile:
        return File(node);
      case SyntaxKind::kBlock:
        return Block(node, gap, /*may_join=*/true);
      case SyntaxKind::kJob:
        return Job(node, gap);
      case SyntaxKind::kRecord:
        return Record(node, gap);
      case SyntaxKind::kEnum:
        return Enum(node, gap);
      case SyntaxKind::kRule:
        return Rule(node, gap);
      case SyntaxKind::kList:
        return Bracketed(node, gap, /*inner_space=*/false);
      case SyntaxKind::kMap:
        return Bracketed(node, gap, /*inner_space=*/true);
      case SyntaxKind::kBinary:
        return Binary(node, gap);
      case SyntaxKind::kUnary:
        return Unary(node, gap);
      case SyntaxKind::kField:  // `name: type = default  modifier...`
      case SyntaxKind::kLet:
      case SyntaxKind::kImport:
      case SyntaxKind::kEnumMember:
      case SyntaxKind::kStatement:
      case SyntaxKind::kRecordLiteral:
      case SyntaxKind::kModifier:
      case SyntaxKind::kType:
      case SyntaxKind::kTypeAtom:
      case SyntaxKind::kRuleCode:
      case SyntaxKind::kPath:
      case SyntaxKind::kMapEntry:
      case SyntaxKind::kParen:
      case SyntaxKind::kOverrides:
        return Tokens(node, gap);
      case SyntaxKind::kIsSet:
      case SyntaxKind::kCall:
        return Operation(node, gap);
    }
  }

  // One declaration per line; the author's blank lines between them are kept (at most one).
  void File(const SyntaxNode& node) {
    for (const SyntaxChild& child : node.children) Item(child);
  }

  // The constructs that are one line of tokens: the gap before each token follows from the
  // tokens on either side of it. `;` is dropped: every item ends its line.
  void Tokens(const SyntaxNode& node, Gap gap) {
    bool first = true;
    const SyntaxChild* previous = nullptr;
    for (const SyntaxChild& child : node.children) {
      if (Is(child, ";")) continue;
      Gap before = first ? gap : GapBetween(node.kind, *previous, child);
      first = false;
      previous = &child;
      Child(child, before);
    }
  }

  Gap GapBetween(SyntaxKind kind, const SyntaxChild& left, const SyntaxChild& right) const {
    if (right.node && right.node->kind == SyntaxKind::kBlock) return Gap::kSpace;
    if (right.node && right.node->kind == SyntaxKind::kModifier) return Gap::kSoftWide;
    std::string_view l = left.node ? "" : Text(left.token);
    std::string_view r = right.node ? "" : Text(right.token);
    switch (kind) {
      case SyntaxKind::kPath:
      case SyntaxKind::kRuleCode:
        return Gap::kNone;  // `a.b.c`, `CFG-010`
      case SyntaxKind::kTypeAtom:
        // `list<map<string, int>>?`
        if (r == "<" || r == ">" || r == "?" || r == "," || l == "<") return Gap::kNone;
        return Gap::kSpace;
      case SyntaxKind::kCall:
        // `f(a, b)`; an argument the author moved to the next line stays there.
        if (r == "(" || r == ")" || r == "," || l == "(") return Gap::kNone;
        return Gap::kSoftSpace;
      case SyntaxKind::kParen:
        return r == ")" || l == "(" ? Gap::kSoftNone : Gap::kSpace;
      case SyntaxKind::kIsSet:
        return r == "is" ? Gap::kSoftSpace : Gap::kSpace;
      case SyntaxKind::kRule:
        return r == "for" ? Gap::kSoftSpace : r == "," || r == ":" ? Gap::kNone : Gap::kSpace;
      default:
        break;
    }
    if (r == "," || r == ":") return Gap::kNone;  // `from env A, B`, `a: int`, `"key": 1`
    return Gap::kSpace;
  }

  // A call or `x is set`: its parts are operands.
  void Operation(const SyntaxNode& node, Gap gap) {
    OperandScope operands(*this);
    Tokens(node, gap);
  }

  void Unary(const SyntaxNode& node, Gap gap) {
    OperandScope operands(*this);
    // `-x` but `not x`.
    Emit(node.children[0].token, gap);
    Child(node.children[1], Text(node.children[0].token) == "-" ? Gap::kNone : Gap::kSpace);
  }

  // `a op b`: the author may break the line before or after the operator.
  void Binary(const SyntaxNode& node, Gap gap) {
    OperandScope operands(*this);
    Child(node.children[0], gap);
    Emit(node.children[1].token, Gap::kSoftSpace);
    Child(node.children[2], Gap::kSoftSpace);
  }

  // Marks what is printed while it lives as part of a larger expression.
  class OperandScope {
   public:
    explicit OperandScope(Printer& printer) : printer_(printer) { ++printer_.operand_depth_; }
    ~OperandScope() { --printer_.operand_depth_; }

   private:
    Printer& printer_;
  };

  // `job name extends base { ... }`: a job's body always goes one statement per line.
  void Job(const SyntaxNode& node, Gap gap) {
    for (size_t i = 0; i + 1 < node.children.size(); ++i)
      Emit(node.children[i].token, i == 0 ? gap : Gap::kSpace);
    Block(*node.children.back().node, Gap::kSpace, /*may_join=*/keep_line_ > 0);
  }

  // `{ statement... }`: one statement per line; `{}` when empty, and, if `may_join`,
  // `{ name = value }` when it holds one assignment whose value holds no block and that fits.
  void Block(const SyntaxNode& node, Gap gap, bool may_join) {
    const std::vector<SyntaxChild>& children = node.children;
    uint32_t open = children.front().token;
    uint32_t close = children.back().token;
    if (children.size() == 2 && !HasCommentBetween(open, close)) {
      Emit(open, gap);
      Emit(close, Gap::kNone);
      return;
    }
    bool one_assignment = may_join && children.size() == 3 && children[1].node &&
                          children[1].node->children.size() >= 2 && Is(children[1].node->children[1], "=");
    if (keep_line_ > 0) return OneLine(children, 0, gap);
    bool flat = flat_;
    if (flat_) {
      // Measuring a list or a block around this one: only the block measured may hold a statement.
      if (measured_ != &node || !one_assignment) {
        failed_ = true;
        return;
      }
    } else if (one_assignment) {
      std::optional<size_t> width = FlatWidth(node);
      flat = width && Column() + 1 + *width <= line_limit_;
    }
    if (flat) {
      Emit(open, gap);
      Child(children[1], Gap::kSpace);
      Emit(close, Gap::kSpace);
      return;
    }
    Open(open, gap);
    for (size_t i = 1; i + 1 < children.size(); ++i) Item(children[i]);
    Close(close);
  }

  // `{ a = 1; b = 2 }`: the members between children[open] and the last child on the line they
  // were written on (see KeepsLine), separated by `;`.
  void OneLine(const std::vector<SyntaxChild>& children, size_t open, Gap gap) {
    Emit(children[open].token, gap);
    bool first = true;
    for (size_t i = open + 1; i + 1 < children.size(); ++i) {
      if (Is(children[i], ";")) continue;
      if (!first) out_ += ';';
      first = false;
      Child(children[i], Gap::kSpace);
    }
    bool empty = first && !HasCommentBetween(children[open].token, children.back().token);
    Emit(children.back().token, empty ? Gap::kNone : Gap::kSpace);
  }

  // `[open] kind Name { member... }`: one field or rule per line, like a block.
  void Record(const SyntaxNode& node, Gap gap) {
    const std::vector<SyntaxChild>& children = node.children;
    size_t open = 0;
    while (!Is(children[open], "{")) ++open;
    for (size_t i = 0; i < open; ++i) Emit(children[i].token, i == 0 ? gap : Gap::kSpace);
    uint32_t close = children.back().token;
    if (open + 2 == children.size() && !HasCommentBetween(children[open].token, close)) {
      Emit(children[open].token, Gap::kSpace);
      Emit(close, Gap::kNone);
      return;
    }
    if (keep_line_ > 0) return OneLine(children, open, Gap::kSpace);
    Open(children[open].token, Gap::kSpace);
    for (size_t i = open + 1; i + 1 < children.size(); ++i) Item(children[i]);
    Close(close);
  }

  // `rule CODE severity "message" for a, b:` and the condition on the next line, indented.
  void Rule(const SyntaxNode& node, Gap gap) {
    const std::vector<SyntaxChild>& children = node.children;
    size_t colon = 0;
    while (!Is(children[colon], ":")) ++colon;
    for (size_t i = 0; i <= colon; ++i) {
      Gap before = i == 0 ? gap : GapBetween(SyntaxKind::kRule, children[i - 1], children[i]);
      Child(children[i], before);
    }
    ++indent_;
    for (size_t i = colon + 1; i < children.size(); ++i) {
      if (!Is(children[i], ";"))
        Child(children[i], flat_ || keep_line_ > 0 ? Gap::kSpace : Gap::kLineNoBlank);
    }
    --indent_;
  }

  // `enum Name { a, b }` on one line when it fits and holds no comment, else one member per line.
  void Enum(const SyntaxNode& node, Gap gap) {
    const std::vector<SyntaxChild>& children = node.children;
    Emit(children[0].token, gap);
    Emit(children[1].token, Gap::kSpace);
    bool flat = flat_ || keep_line_ > 0;
    if (!flat) {
      std::optional<size_t> width = FlatWidth(node);
      flat = width && static_cast<size_t>(indent_ * kIndentWidth) + *width <= line_limit_;
    }
    Elements(children, 2, Gap::kSpace, flat, /*inner_space=*/true);
  }

  // `[a, b]` and `{ "k": v }` on one line when they fit and hold no comment or block, else one
  // element per line, each followed by a comma.
  // Inside a larger expression (`x in [a, b]`) a list stays on one line whatever its width:
  // breaking it there would scatter the expression; the author's line breaks around it stay.
  void Bracketed(const SyntaxNode& node, Gap gap, bool inner_space) {
    bool flat = flat_ || keep_line_ > 0;
    if (!flat) {
      std::optional<size_t> width = FlatWidth(node);
      size_t start = Column() + (gap == Gap::kNone || gap == Gap::kSoftNone ? 0 : 1);
      flat = width && (operand_depth_ > 0 || start + *width <= line_limit_);
    }
    Elements(node.children, 0, gap, flat, inner_space);
  }

  // The elements between children[open] (a bracket) and the last child (its partner).
  void Elements(const std::vector<SyntaxChild>& children, size_t open, Gap gap, bool flat, bool inner_space) {
    uint32_t close = children.back().token;
    std::vector<const SyntaxChild*> elements;
    for (size_t i = open + 1; i + 1 < children.size(); ++i) {
      if (!Is(children[i], ",")) elements.push_back(&children[i]);
    }
    if (flat) {
      Emit(children[open].token, gap);
      for (size_t i = 0; i < elements.size(); ++i) {
        if (i > 0) EmitComma();
        Child(*elements[i], i == 0 ? (inner_space ? Gap::kSpace : Gap::kNone) : Gap::kSpace);
      }
      Emit(close, inner_space && !elements.empty() ? Gap::kSpace : Gap::kNone);
      return;
    }
    Open(children[open].token, gap);
    int operand_depth = std::exchange(operand_depth_, 0);  // each element is an item of its own
    for (const SyntaxChild* element : elements) {
      Item(*element);
      EmitComma();
    }
    operand_depth_ = operand_depth;
    Close(close);
  }

  const source::SourceFile& source_;
  const parse::SyntaxTree& syntax_;
  const size_t line_limit_;
  // Measuring one line: any line break or comment fails it.
  const bool flat_;
  const SyntaxNode* measured_ = nullptr;  // when measuring, the node measured
  bool failed_ = false;

  std::string out_;
  uint32_t cursor_ = 0;        // the first token not yet written or skipped
  int indent_ = 0;             // block depth
  int operand_depth_ = 0;      // > 0 inside an operator, a call or `is set`
  int keep_line_ = 0;          // > 0 inside an item kept on its line (KeepsLine)
  int item_indent_ = 0;        // columns the current item's line starts at
  int item_column_ = 0;        // the column it started at in the source
  bool need_newline_ = false;  // a comment ended the line
  bool after_comment_ = false;
  bool after_open_ = false;  // right after a bracket whose contents go one per line: no blank line
};

}  // namespace

std::string PrintCanonical(const source::SourceFile& source, const parse::SyntaxTree& syntax,
                           size_t line_limit) {
  return Printer(source, syntax, line_limit, /*flat=*/false).Run();
}

}  // namespace accel::format
