#ifndef ACCEL_RUNTIME_TRAIN_SAVE_FAULTS_H_
#define ACCEL_RUNTIME_TRAIN_SAVE_FAULTS_H_

// Faults the end-to-end tests and benches plant in a checkpoint save through the environment.
// Unset in every real run; a malformed value is refused with a std::invalid_argument.
namespace accel::rt::train {

// ACCEL_TEST_SAVE_KILL=`point:rank:save` (tests/e2e/sharded_checkpoint_kill_test.py) makes rank
// `rank` SIGKILL itself at `point` of its `save`-th sharded save (1 the first): `slices` before
// it writes its slices, `written` after (before the barrier), `finish` (rank 0) before it
// finishes the checkpoint, `finished` (rank 0) after the checkpoint is in place, before the last
// barrier.
void KillIfAsked(const char* point, int rank);

// ACCEL_TEST_SAVE_DELAY=`rank:seconds:mode` makes rank `rank` take `seconds` longer over each
// save it writes (a slow disk), before writing: `working` says it still works every 100 ms, as
// a slow write does; `silent` says nothing, as a write stuck in the kernel.
void DelayIfAsked(int rank);

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_TRAIN_SAVE_FAULTS_H_
