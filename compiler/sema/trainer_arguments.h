#ifndef ACCEL_COMPILER_SEMA_TRAINER_ARGUMENTS_H_
#define ACCEL_COMPILER_SEMA_TRAINER_ARGUMENTS_H_

#include <string_view>

namespace accel::sema {

// One of Hugging Face Trainer's TrainingArguments names (`save_steps`) and the job field it
// means, as a path from `Job` (`train.checkpoint_every`).
struct TrainerArgument {
  std::string_view name;
  std::string_view path;
};

// Every row of trainer_arguments.def, in its order.
inline constexpr TrainerArgument kTrainerArguments[] = {
#define TRAINER_ARGUMENT(trainer_name, path) {#trainer_name, path},
#include "compiler/sema/trainer_arguments.def"
};

}  // namespace accel::sema

#endif  // ACCEL_COMPILER_SEMA_TRAINER_ARGUMENTS_H_
