#include "compiler/sema/release_judge.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include <fmt/format.h>

#include "compiler/sema/check.h"

namespace accel::sema {
namespace {

// Checks of the schemas that stand for a validator of a DeepSpeed model, which some covered
// releases lack: a rule (by code) or a field's `where` (by key), in a section. The one place this
// fact is kept; stdlib/deepspeed.accel cites each validator where it declares the check.
struct ValidatorCheck {
  std::string_view section;
  std::string_view rule_or_key;
  std::string_view validator;
};
constexpr ValidatorCheck kValidatorChecks[] = {
    {"fp16", "DSJ-010", "_validate_dynamic_loss_scale_params"},
    {"fp16", "loss_scale", "_validate_loss_scale"},
};

// Rules of the schemas that stand for a launch default which a release's own reader refuses:
// `accelerate launch` exports the default of `key` in `section` as its text, and the reader
// parses that with int(). The rule, declared in the record at `rule_section` of a config file,
// is checked only under a release whose default (releases.def) is not the text of an integer;
// stdlib/fsdp.accel cites the reader where it declares the rule.
struct IntegerDefaultCheck {
  Tool tool;
  std::string_view rule_section;
  std::string_view rule;
  std::string_view section;
  std::string_view key;
};
constexpr IntegerDefaultCheck kIntegerDefaultChecks[] = {
    {Tool::kAccelerate, "", "FSDP-031", "fsdp_config", "fsdp_min_num_params"},
};

// Whether the JSON `json` is an integer, whose Python text int() reads back: `100000000`, not
// `100000000.0` or `1e8`.
bool IsIntegerJson(std::string_view json) {
  if (!json.empty() && json[0] == '-') json.remove_prefix(1);
  auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  return !json.empty() && std::all_of(json.begin(), json.end(), digit);
}

// Two JSON defaults that mean the same value: `1e8` and `100000000`.
bool SameDefault(std::string_view a, std::string_view b) {
  if (a == b) return true;
  std::string x(a), y(b);
  char* x_end = nullptr;
  char* y_end = nullptr;
  double xv = std::strtod(x.c_str(), &x_end);
  double yv = std::strtod(y.c_str(), &y_end);
  return !x.empty() && !y.empty() && *x_end == '\0' && *y_end == '\0' && xv == yv;
}

}  // namespace

ReleaseJudge::ReleaseJudge(const Release* pinned, const std::vector<SectionKeyPrefix>& prefixes,
                           const Release* defaults_against)
    : pinned_(pinned != nullptr && pinned->index != NewestRelease(pinned->tool).index ? pinned : nullptr),
      defaults_against_(pinned_ == nullptr                  ? nullptr
                        : defaults_against != nullptr ? defaults_against
                                                      : &NewestRelease(pinned_->tool)),
      prefixes_(prefixes) {}

std::string ReleaseJudge::PinnedName() const {
  return pinned_ == nullptr ? "" : fmt::format("{} {}", ToolName(pinned_->tool), pinned_->version);
}

std::string ReleaseJudge::SectionOf(std::string_view prefix) const {
  return std::string(prefix.empty() ? prefix : prefix.substr(0, prefix.size() - 1));
}

// Accelerate's section keys are in the table as the launch options they become: `version` in
// `fsdp_config` is `fsdp_version`.
std::string ReleaseJudge::KeyOf(std::string_view section, std::string_view key) const {
  for (const SectionKeyPrefix& p : prefixes_) {
    if (p.section == section && key.substr(0, p.unless.size()) != p.unless) {
      return p.prefix + std::string(key);
    }
  }
  return std::string(key);
}

template <typename Same>
std::string_view ReleaseJudge::FirstLike(const Release& last, Same same) const {
  const std::vector<Release>& releases = ReleasesOf(pinned_->tool);
  size_t first = last.index;
  while (first > static_cast<size_t>(pinned_->index) + 1 && same(releases[first - 1])) --first;
  return releases[first].version;
}

ReleaseJudge::KeyJudgement ReleaseJudge::JudgeKey(std::string_view prefix, std::string_view written) const {
  KeyJudgement out;
  if (pinned_ == nullptr) return out;
  std::string section = SectionOf(prefix);
  std::string key = KeyOf(section, written);
  const Release& newest = NewestRelease(pinned_->tool);
  KeyFate here = LookUpKey(*pinned_, section, key).fate;
  KeyFate there = LookUpKey(newest, section, key).fate;
  if (here == KeyFate::kNotCovered || here == there) return out;
  out.pinned = PinnedName();
  out.reading = ReleasesReading(pinned_->tool, section, key);
  std::string_view since =
      FirstLike(newest, [&](const Release& r) { return LookUpKey(r, section, key).fate == there; });
  out.newest = there == KeyFate::kRefused ? fmt::format("{} and later refuse a file that has it", since)
               : there == KeyFate::kRead  ? fmt::format("{} and later read it", since)
                                          : fmt::format("{} and later ignore it", since);
  switch (here) {
    case KeyFate::kRead:
      out.verdict = Verdict::kReadOnlyHere;
      break;
    case KeyFate::kRefused:
      out.verdict = Verdict::kRefusedHere;
      break;
    case KeyFate::kIgnored:
      out.verdict = Verdict::kIgnoredHere;
      break;
    case KeyFate::kNotCovered:
      break;
  }
  return out;
}

std::optional<std::string> ReleaseJudge::DefaultChange(std::string_view prefix,
                                                       std::string_view written) const {
  if (pinned_ == nullptr) return std::nullopt;
  std::string section = SectionOf(prefix);
  std::string key = KeyOf(section, written);
  KeyInRelease here = LookUpKey(*pinned_, section, key);
  KeyInRelease there = LookUpKey(*defaults_against_, section, key);
  if (here.fate != KeyFate::kRead || there.fate != KeyFate::kRead || here.default_json.empty() ||
      there.default_json.empty() || SameDefault(here.default_json, there.default_json)) {
    return std::nullopt;
  }
  std::string_view since = FirstLike(*defaults_against_, [&](const Release& r) {
    KeyInRelease k = LookUpKey(r, section, key);
    return k.fate == KeyFate::kRead && SameDefault(k.default_json, there.default_json);
  });
  return fmt::format("{} in {} and {} from {} on", here.default_json, PinnedName(), there.default_json,
                     since);
}

std::optional<std::string> ReleaseJudge::BoundsChange(std::string_view prefix,
                                                      std::string_view written) const {
  if (pinned_ == nullptr) return std::nullopt;
  std::string section = SectionOf(prefix);
  std::string key = KeyOf(section, written);
  KeyInRelease here = LookUpKey(*pinned_, section, key);
  KeyInRelease there = LookUpKey(NewestRelease(pinned_->tool), section, key);
  if (here.fate != KeyFate::kRead || there.fate != KeyFate::kRead || here.bounds == there.bounds) {
    return std::nullopt;
  }
  return std::string(here.bounds);
}

std::optional<std::string> ReleaseJudge::CheckNotRun(std::string_view prefix,
                                                     std::string_view rule_or_key) const {
  if (pinned_ == nullptr) return std::nullopt;
  std::string section = SectionOf(prefix);
  for (const ValidatorCheck& check : kValidatorChecks) {
    if (check.section != section || check.rule_or_key != rule_or_key) continue;
    if (RunsCheck(*pinned_, section, check.validator) != false) return std::nullopt;
    std::string_view since = FirstLike(NewestRelease(pinned_->tool), [&](const Release& r) {
      return RunsCheck(r, section, check.validator) == std::optional<bool>(true);
    });
    return fmt::format("{} does not check it: `{}` runs `{}` from {} on", PinnedName(), section,
                       check.validator, since);
  }
  return std::nullopt;
}

bool ReleaseJudge::StandsForRefusedDefault(std::string_view rule) {
  return std::any_of(std::begin(kIntegerDefaultChecks), std::end(kIntegerDefaultChecks),
                     [&](const IntegerDefaultCheck& check) { return check.rule == rule; });
}

std::optional<std::string> ReleaseJudge::RefusedDefault(std::string_view prefix,
                                                        std::string_view rule) const {
  std::string section = SectionOf(prefix);
  for (const IntegerDefaultCheck& check : kIntegerDefaultChecks) {
    if (check.rule != rule || check.rule_section != section) continue;
    // Unpinned, or pinned to the other tool: the newest release of the rule's tool judges.
    const Release& judged =
        pinned_ != nullptr && pinned_->tool == check.tool ? *pinned_ : NewestRelease(check.tool);
    KeyInRelease key = LookUpKey(judged, check.section, check.key);
    if (key.fate != KeyFate::kRead || key.default_json.empty() || IsIntegerJson(key.default_json)) {
      return std::nullopt;
    }
    return fmt::format("{} {} exports `{}`'s default as `{}`, which is not an integer", ToolName(judged.tool),
                       judged.version, check.key, key.default_json);
  }
  return std::nullopt;
}

}  // namespace accel::sema
