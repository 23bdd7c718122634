#!/usr/bin/env python3
"""CPU and wall time of the launcher's own commands, whole process, against `accelc --help`
(a small C++ tool: the floor) measured in the same run.

accelrun links no LibTorch; only accelrun-worker does. `accelrun-worker --facts` is in the table
as the cost of loading LibTorch once, which every accelrun command paid before the split. Pass
`--before OLD_ACCELRUN` to time an older accelrun (one that loads LibTorch) beside the new one.

Usage: launcher_start.py BIN_DIR SPEC [--repetitions N] [--before OLD_ACCELRUN]
Prints medians and the ratio of CPU time to accelc's; the ratios are the result.
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time


def measure(command, repetitions):
    """Median (CPU seconds, wall seconds) of `command` run `repetitions` times."""
    cpu, wall = [], []
    for _ in range(repetitions):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        result = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wall.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
        if result.returncode != 0:
            sys.exit(f"{' '.join(command)} exited {result.returncode}: {result.stderr.decode()[-400:]}")
    return statistics.median(cpu), statistics.median(wall)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bin_dir")
    parser.add_argument("spec")
    parser.add_argument("--repetitions", type=int, default=15)
    parser.add_argument("--before", help="an older accelrun to time beside this one")
    args = parser.parse_args()
    accelc = os.path.join(args.bin_dir, "accelc")
    accelrun = os.path.join(args.bin_dir, "accelrun")
    worker = os.path.join(args.bin_dir, "accelrun-worker")
    out = tempfile.mkdtemp(prefix="accel-launcher-bench-")
    dry_run = [args.spec, "--dry-run", "--master-port", "29500", "--output-dir", out]
    plan = os.path.join(out, "plan.json")
    subprocess.run([accelc, "compile", args.spec, "-o", plan], check=True)
    plan_dry_run = [plan] + dry_run[1:]

    rows = [("baseline: accelc --help", [accelc, "--help"]),
            ("accelrun --help", [accelrun, "--help"]),
            ("accelrun PLAN --dry-run", [accelrun] + plan_dry_run),
            ("accelc compile SPEC (what a spec's dry run adds)", [accelc, "compile", args.spec, "-o", plan]),
            ("accelrun SPEC --dry-run", [accelrun] + dry_run),
            ("accelrun env (asks accelrun-worker --facts)", [accelrun, "env"]),
            ("accelrun-worker --facts (LibTorch loaded once)", [worker, "--facts"])]
    if args.before:
        rows += [("before: accelrun --help (loads LibTorch)", [args.before, "--help"]),
                 ("before: accelrun PLAN --dry-run", [args.before] + plan_dry_run),
                 ("before: accelrun SPEC --dry-run", [args.before] + dry_run)]

    results = [(name, *measure(command, args.repetitions)) for name, command in rows]
    floor = results[0][1]
    print(f"median of {args.repetitions}, whole process\n")
    print("| command | CPU (user+sys) | wall | CPU vs accelc --help |")
    print("|---|---|---|---|")
    for name, cpu, wall in results:
        print(f"| {name} | {cpu * 1000:.1f} ms | {wall * 1000:.1f} ms | {cpu / floor:.1f}x |")


if __name__ == "__main__":
    main()
