#!/usr/bin/env bash
# Imports each Accelerate config that native-builds.txt lists (paths under
# tests/corpus/published) into a job spec with `accelc import`, builds it with `accelc build`,
# and prints `PATH: builds` or `PATH: refused CODES` (the distinct error codes, sorted), then
# `N of M build`. It works in a copy under OUT, since the configs name their DeepSpeed JSON
# files relative to themselves and the specs are written beside them.
# Usage: build_published.sh ACCELC OUT
set -u
accelc="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
here="$(cd "$(dirname "$0")" && pwd)"
out="$2"
rm -rf "$out"
mkdir -p "$out"
cp -r "$here/published/accelerate" "$out/"
cd "$out"
built=0
total=0
while IFS= read -r line; do
  config="${line%%:*}"
  [[ -z "$config" || "$config" == \#* ]] && continue
  total=$((total + 1))
  spec="${config%.*}.accel"
  if ! "$accelc" import "$config" -o "$spec" 2>/dev/null; then
    echo "$config: import failed"
    continue
  fi
  codes=$(NO_COLOR=1 "$accelc" build "$spec" -o "${config%.*}.plan.json" 2>&1 |
          grep -E '^[^ ].*: error: ' | grep -oE '\[A[0-9]+\]$' | tr -d '[]' | LC_ALL=C sort -u | paste -sd' ' -)
  if [[ -z "$codes" && -f "${config%.*}.plan.json" ]]; then
    echo "$config: builds"
    built=$((built + 1))
  else
    echo "$config: refused ${codes:-without a code}"
  fi
done < "$here/published/native-builds.txt"
echo "$built of $total build"
