#!/usr/bin/env bash
# On a machine with CUDA GPUs: checks that the runtime finds them and that its NCCL path works.
#   1. `accelrun env`: the CUDA back end loads and sees the devices; NCCL's version.
#   2. `accelrun test` on the quickstart compiled as a MULTI_GPU job, one process per visible
#      GPU: every data operation over NCCL on CUDA tensors, each rank checking its result.
# Stops at the first failure with a non-zero exit. Uses an existing build (scripts/build.sh);
# ACCEL_BUILD_DIR names another one. Output goes to ${1:-runs/gpu-check}.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${ACCEL_BUILD_DIR:-$root/build}"
out="${1:-$root/runs/gpu-check}"
for tool in accelc accelrun accelrun-worker; do
  if [[ ! -x $build/bin/$tool ]]; then
    echo "gpu-check: $build/bin/$tool is missing: run scripts/build.sh first" >&2
    exit 2
  fi
done
mkdir -p "$out"

echo "gpu-check: accelrun env"
"$build/bin/accelrun" env --format json >"$out/env.json"
"$build/bin/accelrun" env
devices=$(python3 -c 'import json, re, sys
cuda = json.load(open(sys.argv[1]))["cuda"]
found = re.search(r"(\d+) devices?:", cuda)
print(found.group(1) if found else 0)' "$out/env.json")
if [[ $devices == 0 ]]; then
  echo "gpu-check: no CUDA device is visible to the workers (see CUDA above): nothing to check" >&2
  exit 1
fi

echo "gpu-check: accelrun test over NCCL on $devices GPU(s)"
"$build/bin/accelc" build "$root/specs/quickstart.accel" --set compute.distributed_type=MULTI_GPU \
  --set "compute.num_processes=$devices" -o "$out/plan.json"
"$build/bin/accelrun" test "$out/plan.json" --output-dir "$out/test"
echo "gpu-check: passed on $devices GPU(s)"
