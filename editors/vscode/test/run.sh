#!/usr/bin/env bash
# The VS Code package's node tests as a ctest entry (`vscode_extension`, label `editors`):
# installs the locked npm packages, from npm's cache when it has them, and runs `npm test`.
# Exits 77, which ctest reports as skipped, when node or npm is missing or the packages cannot
# be had; it never exits 0 without having run the tests.
#
# Usage: run.sh [WORK_DIR]. With WORK_DIR (ctest passes one in the build tree) it runs on a copy
# of the package there, so that the checkout gets no node_modules/.
set -uo pipefail

package=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
repo=$(cd "$package/../.." && pwd)

skip() {
  echo "vscode_extension: skipped: $*"
  exit 77
}

command -v node >/dev/null || skip "node is not installed (scripts/setup.sh installs Debian's nodejs)"
command -v npm >/dev/null || skip "npm is not installed (scripts/setup.sh installs Debian's npm)"
# node:test and the test runner's `--test` flag are stable from Node.js 18 on (Debian 12's).
node_major=$(node -p 'process.versions.node.split(".")[0]')
((node_major >= 18)) || skip "node $(node --version) is older than 18"

work=$package
if (($# >= 1)); then
  work=$1/package
  rm -rf "$work" && mkdir -p "$work"
  tar -C "$package" --exclude=./node_modules --exclude='./*.vsix' -cf - . | tar -C "$work" -xf - || exit 1
fi
cd "$work" || exit 1

# --ignore-scripts: no dependency needs an install script to be tested, and vsce's signing
# helper would otherwise try to fetch its platform binary.
npm_ci=(npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
if ! "${npm_ci[@]}" --offline >npm-ci-offline.log 2>&1; then
  # Not all in the cache: the registry decides whether this is a skip or a failure.
  timeout 30 npm ping --fetch-retries=0 >/dev/null 2>&1 ||
    skip "npm's cache lacks the locked packages and the npm registry is unreachable"
  "${npm_ci[@]}" || { echo "vscode_extension: npm ci failed"; exit 1; }
fi

ACCEL_SOURCE_DIR=$repo npm test
