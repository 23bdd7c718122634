#!/usr/bin/env bash
# Prints what `accelc check` finds in every config of tests/corpus/published: the diagnostic
# lines (no source excerpts) and the summary, with paths relative to the corpus. The lit test
# published.test compares this with tests/corpus/published/expected-findings.txt;
# `tests/corpus/check_published.sh build/bin/accelc > tests/corpus/published/expected-findings.txt`
# regenerates it.
set -u
accelc="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
cd "$(dirname "$0")/published"
mapfile -t files < <(find . -type f \( -name '*.yaml' -o -name '*.yml' -o -name '*.json' \) |
                     sed 's#^\./##' | LC_ALL=C sort)
# Exit status 1 (errors found) is expected; the findings file says which.
NO_COLOR=1 "$accelc" check "${files[@]}" 2>&1 |
  grep -E '^[^ ].*:[0-9]+:[0-9]+: (error|warning|note): |^[0-9]+ files? checked'
exit 0
