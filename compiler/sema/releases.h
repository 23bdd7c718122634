#ifndef ACCEL_COMPILER_SEMA_RELEASES_H_
#define ACCEL_COMPILER_SEMA_RELEASES_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace accel::sema {

// The tools whose config files the checker reads, each in the releases releases.def covers.
enum class Tool { kAccelerate, kDeepSpeed };

// One covered release. Releases of a tool are ordered by `index`, oldest first.
struct Release {
  Tool tool;
  int index;
  std::string_view version;  // "0.19.2"
};

// "Accelerate" or "DeepSpeed".
std::string_view ToolName(Tool tool);

// The covered releases of `tool`, oldest first, and the newest of them (the one the schemas model).
const std::vector<Release>& ReleasesOf(Tool tool);
const Release& NewestRelease(Tool tool);

// The release `version` names: an exact covered version, or `major.minor` for the newest covered
// patch of that minor. Null when none is covered.
const Release* FindRelease(Tool tool, std::string_view version);

// How a release treats a key a config file writes in `section` ("" is the top level;
// `zero_optimization.offload_param` a nested one).
enum class KeyFate {
  kNotCovered,  // the table says nothing: the section is neither a model nor a listed key
  kRead,
  kIgnored,  // the section's model ignores keys it does not declare
  kRefused,  // the release refuses a file that has the key
};
struct KeyInRelease {
  KeyFate fate = KeyFate::kNotCovered;
  std::string_view default_json;  // with kRead: the default as JSON, "" when computed
  std::string_view bounds;        // with kRead: its bounds, such as ">0 <=1", "" when none
};
KeyInRelease LookUpKey(const Release& release, std::string_view section, std::string_view key);

// The sections `release` reads through a model, with whether each refuses an unknown key, and
// the keys it reads in `section` (for the schemas' drift test and the docs).
struct ModelledSection {
  std::string_view section;
  bool closed;
};
std::vector<ModelledSection> SectionsOf(const Release& release);
struct KeyRead {
  std::string_view key;
  std::string_view default_json;
  std::string_view bounds;
};
std::vector<KeyRead> KeysOf(const Release& release, std::string_view section);

// Whether the model `release` reads `section` into runs the validator named `check`; nullopt
// when the release reads no model there.
std::optional<bool> RunsCheck(const Release& release, std::string_view section, std::string_view check);

// The covered releases that read `key` in `section`, for messages: "DeepSpeed 0.18.9 to 0.19.8",
// "DeepSpeed up to 0.19.6" (from the oldest covered on); empty when none does.
std::string ReleasesReading(Tool tool, std::string_view section, std::string_view key);

// Whether `value` (a number) lies within `bounds` (KeyInRelease::bounds).
bool WithinBounds(double value, std::string_view bounds);

// `bounds` on `key` as a condition: "reduce_bucket_size > 0 and reduce_bucket_size <= 1".
std::string BoundsText(std::string_view key, std::string_view bounds);

}  // namespace accel::sema

#endif  // ACCEL_COMPILER_SEMA_RELEASES_H_
