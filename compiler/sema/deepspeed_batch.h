#ifndef ACCEL_COMPILER_SEMA_DEEPSPEED_BATCH_H_
#define ACCEL_COMPILER_SEMA_DEEPSPEED_BATCH_H_

#include "compiler/diagnostics/diagnostic.h"
#include "compiler/sema/check.h"

namespace accel::sema {

// DeepSpeed's start-up assertion across two checked files (A3006): `train_batch_size` of
// `deepspeed` (a checked DeepSpeed JSON) must be `train_micro_batch_size_per_gpu` x
// `gradient_accumulation_steps` x the data-parallel processes, `num_processes` of `launch` (a
// `ClusterConfig` value: a config file, or a job's `compute`) divided by
// `sequence_parallel_size`. Reports a mismatch to `diagnostics` at `train_batch_size`, with a
// note at `num_processes` when the launch config sets it. Reports nothing when `deepspeed` is
// not a `DeepSpeedConfig`, when a size is unset or `"auto"`, or when the division is not exact.
// With `written_only` (a file had errors: a misspelt key may have meant a field now at its
// default), only sizes the files wrote are used, and nothing is reported when one is not.
void CheckDeepSpeedBatch(const Value& launch, const Spec& deepspeed, diag::DiagnosticEngine& diagnostics,
                         bool written_only = false);

}  // namespace accel::sema

#endif  // ACCEL_COMPILER_SEMA_DEEPSPEED_BATCH_H_
