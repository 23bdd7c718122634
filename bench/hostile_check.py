#!/usr/bin/env python3
"""Time and peak memory of `accelc check` on a file of 100,000 unknown keys, whole process.

The files: one line of JSON (a DeepSpeed config: each key is warning A2023) and one YAML
mapping (an Accelerate config: each key is error A2003). Both must end under 1 s and 100 MB
with the first 100 diagnostics and the count of the rest. Baseline, measured in the same run:
`accelc check` on a one-key file (process start, the stdlib), and Python's json/yaml loading
the same file (what DeepSpeed and Accelerate do before any check).

Usage: hostile_check.py ACCELC [REPETITIONS]
Prints medians of wall time, CPU time (user + system) and peak RSS.
"""
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

KEYS = 100_000


def run(command):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    # ru_maxrss of the children is the largest so far, so each command runs in its own child.
    return wall, cpu


def peak_rss_kb(command):
    out = subprocess.run(["/usr/bin/time", "-f", "%M"] + command, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True).stderr.strip().splitlines()[-1]
    return int(out)


def measure(name, command, repetitions):
    samples = [run(command) for _ in range(repetitions)]
    rss = statistics.median(peak_rss_kb(command) for _ in range(3))
    wall = statistics.median(s[0] for s in samples)
    cpu = statistics.median(s[1] for s in samples)
    print(f"| {name} | {wall * 1000:.0f} ms | {cpu * 1000:.0f} ms | {rss / 1024:.0f} MB |")


def main():
    accelc = sys.argv[1]
    repetitions = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    work = tempfile.mkdtemp(prefix="accel-hostile-")
    json_file = os.path.join(work, "many.json")
    yaml_file = os.path.join(work, "many.yaml")
    tiny = os.path.join(work, "tiny.json")
    with open(json_file, "w") as f:
        f.write("{" + ", ".join(f'"key{i}": 1' for i in range(KEYS)) + "}\n")
    with open(yaml_file, "w") as f:
        f.write("".join(f"key{i}: 1\n" for i in range(KEYS)))
    with open(tiny, "w") as f:
        f.write('{"train_batch_size": 8}\n')
    print("| what | wall | CPU | peak RSS |")
    print("|---|---|---|---|")
    measure("baseline: `accelc check` one key", [accelc, "check", tiny], repetitions)
    measure("baseline: Python `json.load`", ["/usr/bin/python3", "-c",
            f"import json; json.load(open({json_file!r}))"], repetitions)
    measure("baseline: PyYAML `safe_load`", ["/usr/bin/python3", "-c",
            f"import yaml; yaml.safe_load(open({yaml_file!r}))"], repetitions)
    measure("`accelc check` 100,000 keys, JSON", [accelc, "check", json_file], repetitions)
    measure("`accelc check` 100,000 keys, YAML", [accelc, "check", yaml_file], repetitions)


if __name__ == "__main__":
    main()
