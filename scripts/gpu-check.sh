#!/usr/bin/env bash
# The GPU check: runs accelrun's GPU paths on a machine with NVIDIA GPUs and prints one table
# (docs/gpu.md, "The GPU check"). Two steps, on two machines:
#
#   scripts/gpu-check.sh --kit DIR   On the build machine: copies what the check runs, stripped of
#                                    debug sections, into DIR/bin (accelc, accelrun,
#                                    accelrun-worker) and DIR/lib (libaccel_cuda.so, and the
#                                    build machine's libraries they need besides glibc and
#                                    PyTorch's); about 30 MB.
#   scripts/gpu-check.sh [OUT]       On the GPU machine, in a checkout of the same commit (the
#                                    specs and bench/gpu are read from it): runs the check. The
#                                    build is ACCEL_BUILD_DIR (default: build; pass the kit).
#                                    Output and logs go to OUT (default: runs/gpu-check).
#
# The GPU machine needs PyTorch 2.x (the pinned version of python/requirements.txt) in its
# Python (PYTHON, default python3), and no registry: the workers load that PyTorch's LibTorch,
# CUDA and NCCL libraries, found from `import torch` and put first on LD_LIBRARY_PATH. The
# Python side also runs the eager baseline of the throughput row. Every run has a time limit
# (the whole check at most 25 minutes). Exits non-zero when any row failed. With one GPU the
# rows that need a process group say so: NCCL needs two ranks on two GPUs.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${ACCEL_BUILD_DIR:-$root/build}"
python="${PYTHON:-python3}"

if [[ ${1:-} == --kit ]]; then
  kit="${2:?--kit needs a folder}"
  mkdir -p "$kit/bin" "$kit/lib"
  for tool in accelc accelrun accelrun-worker; do
    strip --strip-debug -o "$kit/bin/$tool" "$build/bin/$tool" || exit 2
  done
  strip --strip-debug -o "$kit/lib/libaccel_cuda.so" "$build/lib/libaccel_cuda.so" || exit 2
  # The build machine's shared libraries the binaries need besides glibc's own and the torch
  # wheel's (which the GPU machine's PyTorch provides): fmt, OpenSSL's crypto, zlib, ncurses'
  # tinfo, and GCC 12's C++ runtime, which older systems lack (GLIBCXX_3.4.30).
  ldd "$kit/bin/"* "$kit/lib/libaccel_cuda.so" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
    grep -v -e '/torch/' -e '/nvidia/' -e '/lib\(c\|m\|dl\|pthread\|rt\|util\)\.so' |
    while read -r library; do cp -L "$library" "$kit/lib/"; done
  du -sh "$kit"
  exit 0
fi

out="${1:-$root/runs/gpu-check}"
for tool in bin/accelc bin/accelrun bin/accelrun-worker lib/libaccel_cuda.so; do
  if [[ ! -e $build/$tool ]]; then
    echo "gpu-check: $build/$tool is missing: run scripts/build.sh, or pass a kit as ACCEL_BUILD_DIR" >&2
    exit 2
  fi
done
rm -rf "$out" && mkdir -p "$out"

# The machine's PyTorch: its lib folder and the CUDA wheels' (nvidia/*/lib) first, so that the
# workers load this machine's LibTorch, CUDA runtime and NCCL.
libraries=$("$python" - <<'EOF'
import glob, os, torch
site = os.path.dirname(os.path.dirname(torch.__file__))
wheels = sorted(glob.glob(os.path.join(site, "nvidia", "*", "lib")))
print(":".join([os.path.join(os.path.dirname(torch.__file__), "lib")] + wheels))
EOF
) || { echo "gpu-check: $python cannot import torch" >&2; exit 2; }
# Then the kit's own copies of the build machine's libraries (--kit), where the system lacks them.
export LD_LIBRARY_PATH="$libraries:$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
pinned=$(sed -n 's/^torch==//p' "$root/python/requirements.txt")
found=$("$python" -c 'import torch; print(torch.__version__.split("+")[0], torch.version.cuda)')
if [[ $found != "$pinned 13."* ]]; then
  echo "gpu-check: this machine has torch and CUDA $found; the build is for torch $pinned with CUDA 13" \
    "(python/requirements.txt): the CUDA back end may not load" >&2
fi

accelc="$build/bin/accelc"
accelrun="$build/bin/accelrun"
"$accelrun" env --format json >"$out/env.json" 2>"$out/env.log" || { cat "$out/env.log" >&2; exit 2; }
"$accelrun" env
devices=$("$python" -c 'import json, re, sys
found = re.search(r"(\d+) devices?", json.load(open(sys.argv[1]))["cuda"])
print(found.group(1) if found else 0)' "$out/env.json")
if [[ $devices == 0 ]]; then
  echo "gpu-check: no CUDA device is visible to the workers (see CUDA above): nothing to check" >&2
  exit 1
fi

# run NAME SPEC [--set k=v ...] [-- ACCELRUN-OPTIONS...]: compiles SPEC with the assignments
# and runs it, output in $out/NAME; one line of $out/cases.tsv: name, exit status, seconds.
run() {
  local name=$1 spec=$2
  shift 2
  local sets=() extra=()
  while [[ $# -gt 0 && $1 != -- ]]; do sets+=("$1"); shift; done
  [[ ${1:-} == -- ]] && shift && extra=("$@")
  local started=$SECONDS status=0
  echo "gpu-check: $name"
  timeout 120 "$accelc" build "$spec" "${sets[@]}" -o "$out/$name.plan.json" >"$out/$name.log" 2>&1 &&
    timeout 150 "$accelrun" "$out/$name.plan.json" --output-dir "$out/$name" "${extra[@]}" \
      >>"$out/$name.log" 2>&1 ||
    status=$?
  [[ $status == 0 ]] || tail -5 "$out/$name.log" >&2
  printf '%s\t%s\t%s\n' "$name" "$status" "$((SECONDS - started))" >>"$out/cases.tsv"
}
gpu1=(--set compute.distributed_type=MULTI_GPU --set compute.num_processes=1)
gpus=(--set compute.distributed_type=MULTI_GPU --set "compute.num_processes=$devices")
quick="$root/specs/quickstart.accel"

run quickstart-1gpu "$quick" "${gpu1[@]}" --set train.log_every=1
run quickstart-cpu "$quick" "${gpu1[@]}" --set train.log_every=1 -- --device cpu
run ddp "$quick" "${gpus[@]}"
run bf16 "$quick" "${gpus[@]}" --set accelerator.mixed_precision=bf16
run fp16 "$quick" "${gpus[@]}" --set accelerator.mixed_precision=fp16 --set train.log_every=10
run zero3 "$root/specs/zero3.accel" --set "compute.num_processes=$devices"
run fsdp "$root/specs/fsdp.accel" --set "compute.num_processes=$devices"
run throughput "$root/bench/gpu/transformer_throughput.accel"

echo "gpu-check: data operations over NCCL (accelrun test)"
started=$SECONDS
status=0
timeout 150 "$accelrun" test "$out/ddp.plan.json" --output-dir "$out/test" >"$out/test.log" 2>&1 || status=$?
printf 'test\t%s\t%s\n' "$status" "$((SECONDS - started))" >>"$out/cases.tsv"

echo "gpu-check: the throughput baseline in PyTorch eager"
timeout 300 "$python" "$root/bench/gpu/transformer_eager.py" >"$out/eager.json" 2>"$out/eager.log" ||
  tail -5 "$out/eager.log" >&2

"$python" "$root/bench/gpu/check_table.py" "$out" "$devices"
