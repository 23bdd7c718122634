#!/usr/bin/env python3
"""Whole-process time of `accelc check` on one file and on 1,000 files, against what
Accelerate does today for the same files, measured in the same run.

Baseline: a Python process that loads each config as `accelerate.commands.config.
load_config_from_file` does (two `yaml.safe_load` passes with pure-Python PyYAML); Accelerate
itself is not installed here, and its own dataclass step is ~3 µs per file
(shared/reference/perf-baselines.md #6), so this is a lower bound on its time.

Usage: check_throughput.py ACCELC CORPUS_DIR SPEC [REPETITIONS]
Prints median wall times and ratios; the ratio is the result, absolute times are noise.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

BASELINE = r"""
import sys, yaml
for path in sys.argv[1:]:
    with open(path) as f:
        yaml.safe_load(f)      # peek for compute_environment
    with open(path) as f:
        yaml.safe_load(f)      # the real load
"""


def median_time(command, repetitions):
    times = []
    for _ in range(repetitions):
        start = time.perf_counter()
        result = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        times.append(time.perf_counter() - start)
        if result.returncode not in (0,):
            sys.exit(f"{command[:3]}... exited {result.returncode}: {result.stderr.decode()[-400:]}")
    return statistics.median(times)


def main():
    accelc, corpus, spec = sys.argv[1], sys.argv[2], sys.argv[3]
    repetitions = int(sys.argv[4]) if len(sys.argv) > 4 else 9
    python = "/usr/bin/python3"
    configs = sorted(os.path.join(corpus, n) for n in os.listdir(corpus)
                     if n.endswith((".yaml", ".yml")) and "invalid" not in n)
    typical = os.path.join(corpus, "config_yaml_templates__multi_gpu.yaml")
    work = tempfile.mkdtemp(prefix="accel-bench-")
    try:
        many_yaml, many_specs = [], []
        for i in range(1000):
            source = configs[i % len(configs)]
            target = os.path.join(work, f"c{i:04d}{os.path.splitext(source)[1]}")
            shutil.copyfile(source, target)
            many_yaml.append(target)
            target = os.path.join(work, f"s{i:04d}.accel")
            shutil.copyfile(spec, target)
            many_specs.append(target)
        rows = [
            ("1 config", "baseline: PyYAML safe_load x2 (Accelerate's loader)", [python, "-c", BASELINE, typical]),
            ("1 config", "accelc check", [accelc, "check", typical]),
            ("1 spec", "accelc check quickstart.accel", [accelc, "check", spec]),
            ("1,000 configs", "baseline: PyYAML safe_load x2 (Accelerate's loader)", [python, "-c", BASELINE] + many_yaml),
            ("1,000 configs", "accelc check (2 threads)", [accelc, "check"] + many_yaml),
            ("1,000 configs", "accelc check -j1", [accelc, "check", "-j1"] + many_yaml),
            ("1,000 specs", "accelc check (2 threads)", [accelc, "check"] + many_specs),
        ]
        baselines = {}
        print(f"whole-process wall time, median of {repetitions}")
        for group, name, command in rows:
            seconds = median_time(command, repetitions)
            if name.startswith("baseline:"):
                baselines[group] = seconds
            base = baselines.get(group) or baselines.get(group.replace("specs", "configs").replace("spec", "config"))
            files = 1000 if group.startswith("1,000") else 1
            ratio = f"{base / seconds:6.1f}x faster" if base and not name.startswith("baseline:") else ""
            print(f"  {group:<14} {name:<52} {seconds * 1e3:9.1f} ms  {files / seconds:8.0f} files/s  {ratio}")
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
