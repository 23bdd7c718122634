#!/usr/bin/env bash
# Runs clang-tidy (.clang-tidy) over the project's sources using build/compile_commands.json.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${ACCEL_BUILD_DIR:-$root/build}"
[[ -f "$build/compile_commands.json" ]] || "$root/scripts/build.sh"
cd "$root"
git ls-files 'compiler/*.cpp' 'runtime/*.cpp' | xargs clang-tidy -p "$build" --quiet "$@"
