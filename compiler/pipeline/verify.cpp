#include "compiler/pipeline/verify.h"

#include <charconv>
#include <regex>

#include <fmt/format.h>

namespace accel::pipeline {
namespace {

struct Expectation {
  diag::Severity severity;
  uint32_t line;
  std::string code;  // empty: any code
  std::string text;
  bool matched = false;
};

// The directive is split in two so that verify.cpp itself never reads as one.
const std::regex& DirectivePattern() {
  static const std::regex pattern(
      std::string("expected-") +
      R"((error|warning|note)(@([+-]?)(\d+))?\s*(\[([A-Za-z0-9_-]+)\])?\s*\{\{(.*?)\}\})");
  return pattern;
}

std::vector<Expectation> ParseExpectations(const source::SourceFile& file,
                                           std::vector<std::string>& problems) {
  std::vector<Expectation> expectations;
  for (uint32_t line = 1; line <= file.line_count(); ++line) {
    std::string text(file.LineText(line));
    // `//` starts a comment in a spec, `#` in a config YAML.
    size_t comment = text.find("//");
    if (comment == std::string::npos) comment = text.find('#');
    if (comment == std::string::npos) continue;
    std::string tail = text.substr(comment);
    for (auto it = std::sregex_iterator(tail.begin(), tail.end(), DirectivePattern());
         it != std::sregex_iterator(); ++it) {
      const std::smatch& m = *it;
      Expectation e;
      e.severity = m[1] == "error"     ? diag::Severity::Error
                   : m[1] == "warning" ? diag::Severity::Warning
                                       : diag::Severity::Note;
      e.line = line;
      if (m[2].matched) {
        // Parsed without exceptions or wrap-around; anything outside the file is reported below.
        uint64_t offset = 0;
        std::string digits = m[4].str();
        auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), offset);
        uint64_t target = 0;
        if (error == std::errc() && offset <= file.line_count()) {
          if (m[3] == "+")
            target = line + offset;
          else if (m[3] == "-")
            target = offset < line ? line - offset : 0;
          else
            target = offset;
        }
        e.line = target <= file.line_count() ? static_cast<uint32_t>(target) : 0;
      }
      e.code = m[6].matched ? m[6].str() : "";
      e.text = m[7].str();
      if (e.line == 0 || e.line > file.line_count()) {
        problems.push_back(
            fmt::format("{}:{}: expectation points at line {}, outside the file", file.name(), line, e.line));
        continue;
      }
      expectations.push_back(std::move(e));
    }
  }
  return expectations;
}

bool Matches(const Expectation& e, const diag::Diagnostic& d, uint32_t line) {
  return e.severity == d.severity && e.line == line && (e.code.empty() || e.code == d.code) &&
         d.message.find(e.text) != std::string::npos;
}

}  // namespace

std::vector<std::string> Verify(const source::SourceFile& file,
                                const std::vector<diag::Diagnostic>& produced) {
  std::vector<std::string> problems;
  std::vector<Expectation> expectations = ParseExpectations(file, problems);
  bool check_notes = std::any_of(expectations.begin(), expectations.end(),
                                 [](const Expectation& e) { return e.severity == diag::Severity::Note; });

  // Flatten notes next to their diagnostics; each produced diagnostic consumes one expectation.
  std::vector<const diag::Diagnostic*> all;
  for (const diag::Diagnostic& d : produced) {
    all.push_back(&d);
    for (const diag::Diagnostic& note : d.notes) all.push_back(&note);
  }
  for (const diag::Diagnostic* d : all) {
    if (d->severity == diag::Severity::Note && !check_notes) continue;
    bool here = d->file == &file || (d->file != nullptr && d->file->name() == file.name());
    uint32_t line = here ? file.Locate(d->span.begin).line : 0;
    bool found = false;
    for (Expectation& e : expectations) {
      if (!e.matched && here && Matches(e, *d, line)) {
        e.matched = true;
        found = true;
        break;
      }
    }
    if (found) continue;
    std::string where = here ? fmt::format("{}:{}", file.name(), line)
                             : (d->file ? d->file->name() : std::string("<no file>"));
    problems.push_back(fmt::format("{}: unexpected {} [{}]: {}", where, diag::SeverityName(d->severity),
                                   d->code, d->message));
  }
  for (const Expectation& e : expectations) {
    if (e.matched) continue;
    problems.push_back(fmt::format("{}:{}: expected {}{} not produced: {{{{{}}}}}", file.name(), e.line,
                                   diag::SeverityName(e.severity), e.code.empty() ? "" : " [" + e.code + "]",
                                   e.text));
  }
  return problems;
}

}  // namespace accel::pipeline
