#include "compiler/pipeline/filter.h"

#include <regex>

#include <fmt/format.h>

#include "compiler/config/reader.h"

namespace accel::pipeline {
namespace {

bool Matches(const std::string& pattern, const std::string& code) {
  if (pattern == "all") return true;
  if (!pattern.empty() && pattern.back() == '*')
    return code.rfind(pattern.substr(0, pattern.size() - 1), 0) == 0;
  return pattern == code;
}

bool IsSyntaxError(const diag::Diagnostic& d) { return d.code.size() == 5 && d.code.rfind("A1", 0) == 0; }

struct Suppression {
  std::vector<std::string> codes;
  uint32_t line = 0;  // 0: the whole file
  source::Span span;  // of the comment, for A2017/A2018
  bool used = false;
};

// The directive is split so this file never reads as one.
const std::regex& SuppressionPattern() {
  static const std::regex pattern(std::string("accelc-") +
                                  R"(ignore(-file)?\[([A-Za-z0-9_,* -]+)\](:\s*(\S.*))?)");
  return pattern;
}

std::vector<Suppression> FindSuppressions(const source::SourceFile& file, diag::DiagnosticEngine& out) {
  std::vector<Suppression> found;
  // `#` comments in the files the config reader takes (the same suffix test), `//` in specs.
  const std::string marker = config::IsConfigFileName(file.name()) ? "#" : "//";
  for (uint32_t line = 1; line <= file.line_count(); ++line) {
    std::string text(file.LineText(line));
    uint32_t line_start = static_cast<uint32_t>(file.LineText(line).data() - file.text().data());
    size_t comment = text.find(marker);
    if (comment == std::string::npos) continue;
    std::string tail = text.substr(comment);
    // The pattern's fixed start first: compiling the pattern costs a process more than checking
    // a config does, and most files have no directive.
    if (tail.find(std::string("accelc-") + "ignore") == std::string::npos) continue;
    std::smatch m;
    if (!std::regex_search(tail, m, SuppressionPattern())) continue;
    Suppression s;
    std::string codes = m[2];
    for (size_t start = 0; start <= codes.size();) {
      size_t comma = codes.find(',', start);
      std::string code = codes.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      code.erase(0, code.find_first_not_of(' '));
      code.erase(code.find_last_not_of(' ') + 1);
      if (!code.empty()) s.codes.push_back(code);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    bool alone = text.find_first_not_of(" \t") == comment;
    s.line = m[1].matched ? 0 : (alone ? line + 1 : line);
    uint32_t begin = line_start + static_cast<uint32_t>(comment + m.position(0));
    s.span = {begin, begin + static_cast<uint32_t>(m.length(0))};
    if (!m[4].matched) {
      std::string joined = fmt::format("`{}`", fmt::join(s.codes, ", "));
      out.Emit(diag::Kind::SuppressionWithoutReason, &file, s.span, joined,
               fmt::format("{}", fmt::join(s.codes, ",")));
    }
    found.push_back(std::move(s));
  }
  return found;
}

}  // namespace

bool PatternMatchesAny(const std::string& pattern, const std::vector<std::string>& known) {
  for (const std::string& code : known) {
    if (Matches(pattern, code)) return true;
  }
  return false;
}

diag::DiagnosticEngine Filter(const source::SourceFile* source, diag::DiagnosticEngine produced,
                              const FilterOptions& options, int* suppressed) {
  diag::DiagnosticEngine notices;  // what the suppression comments themselves deserve
  std::vector<Suppression> suppressions;
  if (source != nullptr) suppressions = FindSuppressions(*source, notices);
  std::vector<diag::Diagnostic> all = produced.TakeAll();
  for (const diag::Diagnostic& d : notices.diagnostics()) all.push_back(d);

  auto promote = [&](diag::Diagnostic& d) {
    if (options.werror && d.severity == diag::Severity::Warning) {
      d.severity = diag::Severity::Error;
      d.message += " [-Werror]";
    }
  };
  *suppressed = 0;
  // The kept ones move to the front of `all`: a second vector would hold another copy of a file's
  // 100,000 diagnostics.
  size_t kept_count = 0;
  for (diag::Diagnostic& d : all) {
    if (!IsSyntaxError(d)) {
      bool dropped = false;
      if (d.file == source && source != nullptr) {
        uint32_t line = source->Locate(d.span.begin).line;
        for (Suppression& s : suppressions) {
          if (s.line != 0 && s.line != line) continue;
          for (const std::string& pattern : s.codes) {
            if (Matches(pattern, d.code)) dropped = s.used = true;
          }
        }
      }
      bool enabled = true;
      for (const auto& [enable, pattern] : options.toggles) {
        if (Matches(pattern, d.code)) enabled = enable;
      }
      if (dropped || !enabled) {
        ++*suppressed;
        continue;
      }
    }
    promote(d);
    if (&all[kept_count] != &d) all[kept_count] = std::move(d);
    ++kept_count;
  }
  all.erase(all.begin() + static_cast<std::ptrdiff_t>(kept_count), all.end());
  diag::DiagnosticEngine unused;
  for (const Suppression& s : suppressions) {
    if (s.used) continue;
    unused.Emit(diag::Kind::UnusedSuppression, source, s.span, fmt::format("{}", fmt::join(s.codes, ", ")),
                s.line == 0 ? " in this file" : " on its line");
  }
  for (diag::Diagnostic d : unused.diagnostics()) {
    promote(d);
    all.push_back(std::move(d));
  }
  diag::DiagnosticEngine kept;
  kept.AddAll(std::move(all));
  kept.SortByLocation();
  return kept;
}

}  // namespace accel::pipeline
