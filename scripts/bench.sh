#!/usr/bin/env bash
# Runs every benchmark binary in build/bin (bench_*) with repetitions and prints, per group,
# the median of each row and its ratio to the group's `baseline:` row, measured in the same
# process. Absolute times on shared 2-core machines are noise; the ratios are the result.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${ACCEL_BUILD_DIR:-$root/build}"
repetitions="${ACCEL_BENCH_REPETITIONS:-9}"
"$root/scripts/build.sh" --target bench_compiler bench_format bench_lsp bench_checkpoint bench_checkpoint_store bench_train_state bench_memory \
  bench_dist_ops bench_collectives bench_train_step accelc accelrun >/dev/null
# Measure as accelrun runs its workers: with huge-page malloc (fresh 4 KiB pages cost ~14 µs
# each here). ACCEL_NO_HUGEPAGES=1 measures plain malloc.
if [[ -z "${ACCEL_NO_HUGEPAGES:-}" ]]; then export GLIBC_TUNABLES="${GLIBC_TUNABLES:+$GLIBC_TUNABLES:}glibc.malloc.hugetlb=1"; fi
out="$(mktemp -d)"
for bench in "$build"/bin/bench_*; do
  # The multi-rank benchmarks and the step benchmark print their own tables (below).
  case "$(basename "$bench")" in bench_dist_ops | bench_collectives | bench_train_step) continue ;; esac
  "$bench" --benchmark_repetitions="$repetitions" --benchmark_report_aggregates_only=true \
    --benchmark_format=json --benchmark_out="$out/$(basename "$bench").json" >/dev/null
done
python3 - "$out" <<'PY'
import glob, json, sys
rows = {}
for path in sorted(glob.glob(sys.argv[1] + "/*.json")):
    for b in json.load(open(path))["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        group, _, name = b["run_name"].partition("/")
        scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b["time_unit"]]
        rows.setdefault(group, []).append((name, b["real_time"] * scale))
for group, entries in rows.items():
    base = next((t for n, t in entries if n.startswith("baseline:")), None)
    print(f"{group}")
    for name, ms in entries:
        ratio = f"{ms / base:8.2f}x" if base else ""
        print(f"  {name:<40} median {ms:12.4f} ms  {ratio}")
PY
rm -rf "$out"
# Data operations against Accelerate's per-tensor c10d calls, 2 ranks over Gloo.
"$build/bin/bench_dist_ops"
# Reduce-scatter against an all-reduce of the same input, 2 and 4 ranks over Gloo.
"$build/bin/bench_collectives"
# The executor's step against a hand-written LibTorch loop, then 2-rank scaling beside DDP.
"$build/bin/bench_train_step" "$repetitions"
/usr/bin/python3 "$root/bench/train_scaling.py" "$build/bin/accelrun" "$repetitions"
# Whole-process `accelc check` against Accelerate's config loader, side by side.
corpus="$root/../shared/reference/accelerate-configs"
if [[ -d "$corpus" ]]; then
  # ACCELERATE_SRC: an Accelerate checkout's src/, for the row of Accelerate's own loader.
  /usr/bin/python3 "$root/bench/check_throughput.py" "$build/bin/accelc" "$corpus" "$root/specs/quickstart.accel" \
    "$repetitions" ${ACCELERATE_SRC:+--accelerate-src "$ACCELERATE_SRC"}
else
  echo "check_throughput: skipped, no corpus at $corpus (shared/ beside the repository)"
fi
