#!/usr/bin/env bash
# Configures (once) and builds Accel into build/. Extra arguments go to cmake --build
# (e.g. `--target accelc`).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${ACCEL_BUILD_DIR:-$root/build}"
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${ACCEL_BUILD_TYPE:-RelWithDebInfo}"
fi
cmake --build "$build" "$@"
