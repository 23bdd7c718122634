#ifndef ACCEL_COMPILER_INIT_INIT_H_
#define ACCEL_COMPILER_INIT_INIT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/pipeline/stdlib.h"
#include "compiler/sema/schema.h"
#include "llvm/Support/Error.h"

// `accelc init`: a questionnaire in the order of `accelerate config` whose answers become a
// `.accel` job spec (or an Accelerate config YAML) that passes `accelc check --werror`.
namespace accel::init {

// What `accelc init` writes.
enum class OutputFormat {
  kAccel,           // a `.accel` job spec in `accelc fmt`'s layout
  kAccelerateYaml,  // the spec's `compute` as the YAML `accelerate config` writes
};

// The answers so far, by question id, each already validated and normalised (an enum answer is
// the member's name, a yes/no answer `true` or `false`, an integer in decimal).
class Answers {
 public:
  void Set(std::string_view id, std::string value) { values_[std::string(id)] = std::move(value); }
  // Whether the question was asked and answered.
  bool Has(std::string_view id) const { return values_.count(std::string(id)) > 0; }
  // The answer, or "" when the question was not asked.
  std::string Get(std::string_view id) const;
  // The answer as a number; `fallback` when the question was not asked.
  int64_t Int(std::string_view id, int64_t fallback) const;
  // True only when the question was asked and answered yes.
  bool Yes(std::string_view id) const { return Get(id) == "true"; }
  // The `distributed_type` the machine type and engine answers select (`NO`, `FSDP`, ...).
  std::string DistributedType() const;

 private:
  std::map<std::string, std::string> values_;
};

// How an answer is read.
enum class AnswerKind {
  kChoice,   // one of `choices`, case-insensitively (an enum member's name or value)
  kInteger,  // a decimal integer within the bounds `check` enforces
  kYesNo,    // yes/no/y/n/true/false
  kText,     // free text that `check` accepts
};

// One question of the questionnaire. Every field but `id`, `text` and `kind` may be empty.
struct Question {
  std::string id = {};    // the answer's key in Answers
  std::string text = {};  // the question, as asked
  AnswerKind kind = AnswerKind::kText;
  // kChoice: what may be answered, as shown (a member's serialized value, or its name), and the
  // member name each stands for (same order).
  std::vector<std::string> choices = {};
  std::vector<std::string> members = {};
  // Whether the question is asked, given the earlier answers; empty: always.
  std::function<bool(const Answers&)> asked = {};
  // The default given the earlier answers, as it would be typed; unset: an answer is needed.
  std::function<std::optional<std::string>(const Answers&)> default_value = {};
  // What the brackets show for an empty default (`_no_split_modules`).
  std::string empty_default_label = {};
  // Further validation of a normalised answer against the earlier ones: an error message ("is
  // not ..."; the caller names the answer), or "".
  std::function<std::string(const std::string& answer, const Answers&)> check = {};
  // Asked only when a `.accel` spec is written: an Accelerate config YAML has no place for it.
  bool spec_only = false;
};

// The questions in the order they are asked: one table. The enum choices come from `schema`
// (sema::Schema of the embedded stdlib), which must outlive the result.
std::vector<Question> Questions(const sema::Schema& schema);

// Reads `raw` (one line, without its newline) as an answer to `question`: the normalised answer,
// or an error saying why it is refused. An empty line means the default.
llvm::Expected<std::string> ReadAnswer(const Question& question, std::string_view raw,
                                       const Answers& earlier);

// The `.accel` job spec the answers describe, named `job_name` unless the answers name it,
// not yet laid out by the formatter. The workload is the smallest complete one, as `accelc
// import` writes it.
std::string WriteSpec(const Answers& answers);

// The file `accelc init` writes for `answers`: the spec in `accelc fmt`'s layout, or its
// `compute` as Accelerate YAML. Fails, with the diagnostics as the message, when the result
// would not pass `accelc check --werror`: the questions should have refused such answers, so
// that is a bug in this library.
llvm::Expected<std::string> Generate(const Answers& answers, OutputFormat format,
                                     const pipeline::Stdlib& stdlib);

}  // namespace accel::init

#endif  // ACCEL_COMPILER_INIT_INIT_H_
