#!/usr/bin/env bash
# Formats every C++ file of the project in place with .clang-format (`--check` only reports).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mode=(-i)
[[ "${1:-}" == "--check" ]] && mode=(--dry-run --Werror)
cd "$root"
git ls-files '*.cpp' '*.h' | xargs clang-format "${mode[@]}"
