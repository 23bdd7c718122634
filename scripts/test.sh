#!/usr/bin/env bash
# Sets up the machine, builds everything, and runs every test (unit, lit, runtime, e2e).
# Ends with ctest's summary line.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${ACCEL_BUILD_DIR:-$root/build}"
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
ctest --test-dir "$build" --output-on-failure -j2 "$@"
