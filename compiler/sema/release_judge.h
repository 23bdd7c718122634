#ifndef ACCEL_COMPILER_SEMA_RELEASE_JUDGE_H_
#define ACCEL_COMPILER_SEMA_RELEASE_JUDGE_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/sema/releases.h"

namespace accel::sema {

struct SectionKeyPrefix;

// Judges a config file as a pinned release reads it (`accelc check --for deepspeed@0.19.2`),
// where that release differs from the newest covered one, which the schemas model. Every
// question is asked of the key at a path as the checker walks it: `prefix` is the path of the
// record the key is in, as check.cpp builds it (`zero_optimization.offload_param.`), and `key`
// the key as the file writes it. Where the pinned release and the newest agree, or the table
// (releases.def) says nothing, the answer is "as modelled", and the schema judges alone.
class ReleaseJudge {
 public:
  // `pinned` null or the newest release: every answer is "as modelled". `defaults_against`: the
  // release whose defaults DefaultChange compares the pinned one's with (`accelc diff --for`'s
  // newer release); null: the newest.
  ReleaseJudge(const Release* pinned, const std::vector<SectionKeyPrefix>& prefixes,
               const Release* defaults_against = nullptr);

  enum class Verdict {
    kAsModelled,
    kReadOnlyHere,  // the pinned release reads a key the newest refuses or ignores
    kRefusedHere,   // the pinned release refuses a file that has the key
    kIgnoredHere,   // the pinned release ignores the key
  };
  struct KeyJudgement {
    Verdict verdict = Verdict::kAsModelled;
    std::string pinned;     // "DeepSpeed 0.19.2"
    std::string reading;    // the releases that read the key: "DeepSpeed 0.18.9 to 0.19.8"
    std::string newest;     // what the newest does: "DeepSpeed 0.19.8 refuses a file that has it"
  };
  KeyJudgement JudgeKey(std::string_view prefix, std::string_view key) const;

  // For a key the file leaves unset whose default the pinned release and the newest (or
  // `defaults_against`) disagree on: "0.0 in DeepSpeed 0.19.2 and 1.0 from 0.19.3 on".
  std::optional<std::string> DefaultChange(std::string_view prefix, std::string_view key) const;

  // The pinned release's bounds on a key (">=0", or "" for none) where they differ from the
  // newest's, which the schema's `where` models.
  std::optional<std::string> BoundsChange(std::string_view prefix, std::string_view key) const;

  // For a rule (by code) or a field's `where` (by key) that stands for a validator of the
  // section's model which the pinned release does not run: why it is not an error there,
  // "DeepSpeed 0.19.2 does not check it (`_validate_dynamic_loss_scale_params` runs from 0.19.3)".
  std::optional<std::string> CheckNotRun(std::string_view prefix, std::string_view rule_or_key) const;

  // Rules (by code) that stand for a launch default which some covered releases' own readers
  // refuse, such as a float default whose text the FSDP plugin reads with int(). Such a rule is
  // checked only where `RefusedDefault` gives a reason: the judged release (the pinned one, else
  // the newest) refuses its default, "Accelerate 1.12.0 exports `fsdp_min_num_params`'s default
  // as 100000000.0". Nullopt where it does not, where the table knows no default, and for any
  // other rule.
  static bool StandsForRefusedDefault(std::string_view rule);
  std::optional<std::string> RefusedDefault(std::string_view prefix, std::string_view rule) const;

  // "DeepSpeed 0.19.2".
  std::string PinnedName() const;

 private:
  std::string SectionOf(std::string_view prefix) const;
  std::string KeyOf(std::string_view section, std::string_view key) const;
  // The first release after the pinned one, up to `last`, from which on `same` holds.
  template <typename Same>
  std::string_view FirstLike(const Release& last, Same same) const;

  const Release* pinned_ = nullptr;  // null: as modelled
  const Release* defaults_against_ = nullptr;
  const std::vector<SectionKeyPrefix>& prefixes_;
};

}  // namespace accel::sema

#endif  // ACCEL_COMPILER_SEMA_RELEASE_JUDGE_H_
