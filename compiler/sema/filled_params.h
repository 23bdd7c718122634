#ifndef ACCEL_COMPILER_SEMA_FILLED_PARAMS_H_
#define ACCEL_COMPILER_SEMA_FILLED_PARAMS_H_

#include <string>
#include <string_view>
#include <vector>

namespace accel::sema {

// Who fills in a key of a DeepSpeed params map that says "auto" (filled_params.def).
enum class FilledBy {
  kAccelerateAndTrainer,
  kTrainer,
};

// True when `field` of `record` is a params map whose "auto"s only the listed keys may hold.
bool HasFilledParams(std::string_view record, std::string_view field);

// The keys of that map the tool `target` fills ("accelerate", "trainer"; any other: both tools',
// as a file whose tool was guessed may be for either).
std::vector<std::string_view> FilledParams(std::string_view record, std::string_view field,
                                           std::string_view target);

}  // namespace accel::sema

#endif  // ACCEL_COMPILER_SEMA_FILLED_PARAMS_H_
