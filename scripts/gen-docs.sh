#!/usr/bin/env bash
# Regenerates docs/reference/ (Markdown, reference.html, JSON Schemas) from the stdlib with
# `accelc docs`. A test compares the checked-in files with a fresh run, so run this after
# changing stdlib/, kinds.def or the explanations, and commit the result.
# Uses build/bin/accelc (scripts/build.sh); pass another accelc as $1.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
accelc="${1:-$root/build/bin/accelc}"
out="$root/docs/reference"
# Generate next to the old tree and swap, so a failed run leaves it intact and a type that was
# removed from the stdlib loses its page.
tmp="$(mktemp -d "$root/docs/.reference.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
"$accelc" docs --out "$tmp"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "gen-docs: wrote $(find "$out" -type f | wc -l) files to docs/reference/"
