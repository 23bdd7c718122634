#!/usr/bin/env python3
"""Time and peak memory of `accelc check` on a file of 100,000 unknown keys, whole process.

The files: one line of JSON (a DeepSpeed config: each key is warning A2023) and one YAML
mapping (an Accelerate config: each key is error A2003). Both must end under 1 s and 100 MB
with the first 100 diagnostics and the count of the rest. Baseline, measured in the same run:
`accelc check` on a one-key file (process start, the stdlib), and Python's json/yaml loading
the same file (what DeepSpeed and Accelerate do before any check).

Usage: hostile_check.py ACCELC [--before OLD_ACCELC] [--corpus DIR] [--repetitions N]
       hostile_check.py --write DIR

--before: an older accelc measured in the same run, row by row beside ACCELC.
--corpus: also each `*.json` file of DIR (the published DeepSpeed configs), and whether the
          two binaries print the same and exit alike on it.
--write:  only write the generated files into DIR, to measure them by hand
          (`/usr/bin/time -v accelc check DIR/many.json`).
Prints medians of wall time, CPU time (user + system) and peak RSS as Markdown tables.
"""
import argparse
import glob
import os
import resource
import statistics
import subprocess
import tempfile
import time

KEYS = 100_000


def write_files(directory):
    files = {name: os.path.join(directory, name) for name in ("many.json", "many.yaml", "tiny.json")}
    with open(files["many.json"], "w") as f:
        f.write("{" + ", ".join(f'"key{i}": 1' for i in range(KEYS)) + "}\n")
    with open(files["many.yaml"], "w") as f:
        f.write("".join(f"key{i}: 1\n" for i in range(KEYS)))
    with open(files["tiny.json"], "w") as f:
        f.write('{"train_batch_size": 8}\n')
    return files


def run(command):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def peak_rss_kb(command):
    # ru_maxrss of the children is the largest so far, so each command runs in its own child.
    out = subprocess.run(["/usr/bin/time", "-f", "%M"] + command, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True).stderr.strip().splitlines()[-1]
    return int(out)


def measure(name, command, repetitions):
    samples = [run(command) for _ in range(repetitions)]
    rss = statistics.median(peak_rss_kb(command) for _ in range(3))
    wall = statistics.median(s[0] for s in samples)
    cpu = statistics.median(s[1] for s in samples)
    print(f"| {name} | {wall * 1000:.0f} ms | {cpu * 1000:.0f} ms | {rss / 1024:.1f} MB |")


def output_of(accelc, path):
    result = subprocess.run([accelc, "check", path], capture_output=True, text=True)
    return result.returncode, result.stdout, result.stderr


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("accelc", nargs="?")
    parser.add_argument("--before")
    parser.add_argument("--corpus")
    parser.add_argument("--repetitions", type=int, default=7)
    parser.add_argument("--write")
    args = parser.parse_args()
    if args.write:
        os.makedirs(args.write, exist_ok=True)
        for path in write_files(args.write).values():
            print(path)
        return
    if not args.accelc:
        parser.error("ACCELC is required unless --write is given")
    files = write_files(tempfile.mkdtemp(prefix="accel-hostile-"))
    binaries = [("", args.accelc)] + ([("before: ", args.before)] if args.before else [])
    print("| what | wall | CPU | peak RSS |")
    print("|---|---|---|---|")
    measure("baseline: `accelc check` one key", [args.accelc, "check", files["tiny.json"]], args.repetitions)
    measure("baseline: Python `json.load`", ["/usr/bin/python3", "-c",
            f"import json; json.load(open({files['many.json']!r}))"], args.repetitions)
    measure("baseline: PyYAML `safe_load`", ["/usr/bin/python3", "-c",
            f"import yaml; yaml.safe_load(open({files['many.yaml']!r}))"], args.repetitions)
    for label, accelc in binaries:
        measure(f"{label}`accelc check` 100,000 keys, JSON", [accelc, "check", files["many.json"]],
                args.repetitions)
        measure(f"{label}`accelc check` 100,000 keys, YAML", [accelc, "check", files["many.yaml"]],
                args.repetitions)
    if not args.corpus:
        return
    print()
    print("| published DeepSpeed config | wall | CPU | peak RSS |")
    print("|---|---|---|---|")
    for path in sorted(glob.glob(os.path.join(args.corpus, "*.json"))):
        for label, accelc in binaries:
            measure(f"{label}{os.path.basename(path)}", [accelc, "check", path], args.repetitions)
        if args.before:
            same = output_of(args.accelc, path) == output_of(args.before, path)
            print(f"| ... output and exit status {'the same' if same else '**DIFFERENT**'} | | | |")


if __name__ == "__main__":
    main()
