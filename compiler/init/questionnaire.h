#ifndef ACCEL_COMPILER_INIT_QUESTIONNAIRE_H_
#define ACCEL_COMPILER_INIT_QUESTIONNAIRE_H_

#include <cstddef>
#include <istream>
#include <ostream>
#include <string>
#include <vector>

#include "compiler/init/init.h"

namespace accel::init {

// Answers longer than this are refused (and read no further): no answer is longer than a path.
inline constexpr size_t kMaxAnswerBytes = 4096;
// Bad answers to one question before the questionnaire gives up.
inline constexpr int kMaxTries = 5;

// Where the questions go and the answers come from.
struct Dialogue {
  std::istream& in;
  std::ostream& out;
  // Color and bold (ANSI escapes): only for a person at a terminal.
  bool color = false;
  // Answers come from a file or a pipe: each is written after its question, so the output
  // reads as the conversation it was.
  bool echo = false;
  // Take every default without reading anything (`--defaults`).
  bool defaults_only = false;
  // A `.accel` spec is written: the `spec_only` questions are asked too.
  bool spec = true;
};

// Asks each question of `questions` whose `asked` holds for the answers before it, re-asking
// with the reason after a bad answer. `answers` holds what is known beforehand (the default job
// name) and receives every answer. Fails when the input ends before the last question, after
// kMaxTries bad answers to one question, or with `defaults_only` at a question without a
// default; the message names the question.
llvm::Error Ask(const std::vector<Question>& questions, Dialogue& dialogue, Answers& answers);

}  // namespace accel::init

#endif  // ACCEL_COMPILER_INIT_QUESTIONNAIRE_H_
