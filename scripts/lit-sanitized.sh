#!/usr/bin/env bash
# Runs the compiler's file tests (syntax, compiler, coverage) against accelc built with clang,
# ASan and UBSan (the build-fuzz/ tree of scripts/fuzz.sh). Any sanitizer report aborts the
# process, so even tests that expect a failing exit status catch it.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/fuzz.sh" -runs=0 >/dev/null 2>&1 || true   # configures build-fuzz/ if needed
cmake --build "$root/build-fuzz" --target accelc
"$root/scripts/build.sh" --target accelc >/dev/null        # the lit site config lives in build/
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1
lit="/usr/lib/llvm-14/build/utils/lit/lit.py"
cd "$root/build"
python3 "$lit" -sv --param accelc="$root/build-fuzz/bin/accelc" \
  tests/lit/syntax tests/lit/compiler tests/lit/config tests/lit/rules tests/lit/diagnostic_coverage.test
