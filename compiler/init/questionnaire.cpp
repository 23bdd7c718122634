// Ask: the questionnaire's conversation, over streams so that tests can drive it.
#include "compiler/init/questionnaire.h"

#include <fmt/format.h>

namespace accel::init {
namespace {

constexpr const char* kBold = "\x1b[1m";
constexpr const char* kRed = "\x1b[31m";
constexpr const char* kReset = "\x1b[0m";

// How the question shows its choices and default: `(no, fp16, bf16, fp8) [no]`, `[yes/NO]`.
std::string Prompt(const Question& question, const Answers& earlier, bool color) {
  std::optional<std::string> fallback =
      question.default_value ? question.default_value(earlier) : std::nullopt;
  std::string text = color ? kBold + question.text + kReset : question.text;
  if (question.kind == AnswerKind::kChoice) text += fmt::format(" ({})", fmt::join(question.choices, ", "));
  if (question.kind == AnswerKind::kYesNo && fallback) {
    // `accelerate config`'s convention: the default in capitals.
    bool yes = *fallback == "yes";
    text += yes ? " [YES/no]" : " [yes/NO]";
  } else if (fallback) {
    text += fmt::format(" [{}]", fallback->empty() ? question.empty_default_label : *fallback);
  }
  return text + ": ";
}

// How much of a line past kMaxAnswerBytes is skipped before the input counts as endless: a
// pasted paragraph is skipped and asked again, `< /dev/zero` stops the questionnaire.
constexpr size_t kMaxSkippedBytes = 1 << 20;

// One line of at most kMaxAnswerBytes, without its newline (`\r\n` too). Empty at the end of
// the input; `too_long` says the line was cut (and the rest of it skipped), `endless` that no
// newline came within kMaxSkippedBytes (the rest is left unread).
std::optional<std::string> ReadLine(std::istream& in, bool& too_long, bool& endless) {
  std::string line;
  too_long = false;
  endless = false;
  size_t skipped = 0;
  char c;
  bool any = false;
  while (in.get(c)) {
    any = true;
    if (c == '\n') break;
    if (line.size() < kMaxAnswerBytes) {
      line += c;
    } else if (++skipped > kMaxSkippedBytes) {
      too_long = endless = true;
      break;
    } else {
      too_long = true;
    }
  }
  if (!any) return std::nullopt;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

llvm::Error Fail(const std::string& message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", message.c_str());
}

}  // namespace

llvm::Error Ask(const std::vector<Question>& questions, Dialogue& dialogue, Answers& answers) {
  for (const Question& question : questions) {
    if (question.spec_only && !dialogue.spec) continue;
    if (question.asked && !question.asked(answers)) continue;
    for (int tries = 0;; ++tries) {
      if (tries == kMaxTries) {
        return Fail(fmt::format("no valid answer to \"{}\" after {} tries", question.text, kMaxTries));
      }
      dialogue.out << Prompt(question, answers, dialogue.color);
      bool too_long = false;
      bool endless = false;
      std::optional<std::string> line;
      if (dialogue.defaults_only) {
        line = "";
      } else {
        dialogue.out.flush();
        line = ReadLine(dialogue.in, too_long, endless);
      }
      if (!line) {
        dialogue.out << "\n";
        return Fail(fmt::format("the input ended before \"{}\" was answered", question.text));
      }
      if (endless) {
        dialogue.out << "\n";
        return Fail(fmt::format("no line break in the first {} MiB of the answer to \"{}\"; the input is not "
                                "one answer per line",
                                kMaxSkippedBytes >> 20, question.text));
      }
      if (dialogue.echo || dialogue.defaults_only) dialogue.out << *line << "\n";
      llvm::Expected<std::string> answer =
          too_long ? llvm::Expected<std::string>(
                         Fail(fmt::format("the answer is longer than {} bytes", kMaxAnswerBytes)))
                   : ReadAnswer(question, *line, answers);
      if (answer) {
        answers.Set(question.id, std::move(*answer));
        break;
      }
      std::string why = llvm::toString(answer.takeError());
      // With --defaults nobody can answer again.
      if (dialogue.defaults_only) return Fail(fmt::format("\"{}\": {}", question.text, why));
      dialogue.out << (dialogue.color ? fmt::format("{}{}; try again{}\n", kRed, why, kReset)
                                      : fmt::format("{}; try again\n", why));
    }
  }
  return llvm::Error::success();
}

}  // namespace accel::init
