#!/usr/bin/env bash
# The full crash loop: SIGKILLs a process that saves checkpoints N times (default
# 100) at random moments, and after each kill checks that the newest complete checkpoint loads,
# its checksums verify, and rotation never removed the last complete one
# (tests/runtime/checkpoint_crash_test.py; ctest runs the same test with 20 trials).
#   scripts/crash-loop.sh                  # 100 trials, 4 MiB states
#   scripts/crash-loop.sh 300 --seed 42    # more trials, a fixed seed (to replay a failure)
#   ACCEL_CRASH_STATE_BYTES=67108864 scripts/crash-loop.sh 100   # 64 MiB states
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${ACCEL_BUILD_DIR:-$root/build}"
trials="${1:-100}"
shift || true
ACCEL_BUILD_DIR="$build" "$root/scripts/build.sh" --target checkpoint_crash_driver >/dev/null
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 "$root/tests/runtime/checkpoint_crash_test.py" "$build/bin/checkpoint_crash_driver" "$work" \
  --trials "$trials" "$@"
