#ifndef ACCEL_RUNTIME_MODEL_TEST_FAULT_H_
#define ACCEL_RUNTIME_MODEL_TEST_FAULT_H_

namespace accel::rt::train {

// The test hook of the equivalence tests (tests/e2e): the environment variable
// ACCEL_TEST_FAULT, read by the gradient synchronisation and the tensor-parallel operators only,
// breaks them on purpose so that a test proves its tolerance would catch the break:
//   grad_scale    the averaged gradients are multiplied by 16;
//   shard_offset  (sharded engine) each rank's gathered shard lands one shard further on;
//   slice_offset  (sharded engine) each range read from a sharded checkpoint lands one element
//                 further on (rolled), so a resume test proves it catches a wrong offset;
//   tp_backward   (tensor parallelism) the all-reduce of the input's gradient before a
//                 column-parallel Linear is skipped;
//   tp_offset     (tensor parallelism) each rank keeps the next rank's slice of a row-parallel
//                 Linear.
// Unset or empty in every real run.
enum class TestFault { kNone, kGradScale, kShardOffset, kSliceOffset, kTpBackward, kTpOffset };
TestFault TestFaultFromEnvironment();
// The factory `grad_scale` applies.
inline constexpr double kFaultGradScale = 16.0;

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_MODEL_TEST_FAULT_H_
