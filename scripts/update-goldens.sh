#!/usr/bin/env bash
# Rewrites tests/golden/plans/ from specs/ with accelc (build/bin/accelc, or $1). Review the
# diff before committing: every changed byte is a changed plan.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
accelc="${1:-$root/build/bin/accelc}"
cd "$root"
rm -rf tests/golden/plans && mkdir -p tests/golden/plans
for spec in specs/*.accel specs/*.yaml; do
  # On stdout: input paths stay relative to the repository's root, where the plans are read
  # (`-o` would make them relative to tests/golden/plans).
  "$accelc" build "$spec" > "tests/golden/plans/$(basename "$spec").plan.json"
done
echo "update-goldens: $(ls tests/golden/plans | wc -l) plans in tests/golden/plans/"
