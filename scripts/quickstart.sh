#!/usr/bin/env bash
# Sets up the machine, builds Accel, and runs the quickstart job: a small MLP trained on
# 2 CPU processes over Gloo, weights saved to runs/quickstart/model.safetensors.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh" --target accelc accelrun
cd "$root"
exec ./build/bin/accelrun specs/quickstart.accel "$@"
