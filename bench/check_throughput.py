#!/usr/bin/env python3
"""Whole-process time of `accelc check` on one file and on 1,000 files, against what
Accelerate does for the same files, measured in the same run.

Baselines, each a Python process over the same files:
- Accelerate's own loader: `accelerate.commands.config.config_args.load_config_from_file` per
  file, imported from a source checkout (--accelerate-src, the checkout's `src/`). Debian 12
  has neither safetensors nor huggingface_hub, which `import accelerate` needs, so the package
  `__init__`s of `accelerate`, `accelerate.utils`, `accelerate.commands` and
  `accelerate.commands.config` are bypassed: the real `accelerate.utils.dataclasses` (which
  imports torch and the `utils` modules it names) and `config_args` are imported, and
  `accelerate.utils` is given the three enums `config_args` takes from it. Needs Debian's
  python3-torch and python3-packaging (scripts/setup.sh).
- PyYAML alone: two `yaml.safe_load` passes per file, what the loader does besides its
  dataclass step: a lower bound on Accelerate's time that needs no checkout.
`/bin/true` and `accelc --version` are the floors of any process and of accelc's start.

Usage: check_throughput.py ACCELC CORPUS_DIR SPEC [REPETITIONS] [--accelerate-src DIR]
       [--before OLD_ACCELC]
Prints medians of wall and CPU (user + sys) time and ratios; the ratios are the result,
absolute times are noise on a shared machine.
"""
import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

PYYAML = r"""
import sys, yaml
for path in sys.argv[1:]:
    with open(path) as f:
        yaml.safe_load(f)      # peek for compute_environment
    with open(path) as f:
        yaml.safe_load(f)      # the real load
"""

# argv: the checkout's src/, then the files.
ACCELERATE = r"""
import importlib, os, sys, types
src = sys.argv[1]
def package_without_init(name):
    module = types.ModuleType(name)
    module.__path__ = [os.path.join(src, *name.split("."))]
    sys.modules[name] = module
    return module
package_without_init("accelerate")
utils = package_without_init("accelerate.utils")
dataclasses = importlib.import_module("accelerate.utils.dataclasses")
for name in ("ComputeEnvironment", "DistributedType", "SageMakerDistributedType"):
    setattr(utils, name, getattr(dataclasses, name))
package_without_init("accelerate.commands")
package_without_init("accelerate.commands.config")
from accelerate.commands.config.config_args import load_config_from_file
for path in sys.argv[2:]:
    load_config_from_file(path)
"""


def measure(command, repetitions):
    """Median (wall seconds, CPU seconds) of `command` run `repetitions` times."""
    wall, cpu = [], []
    for _ in range(repetitions):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        result = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wall.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
        if result.returncode != 0:
            sys.exit(f"{command[:3]}... exited {result.returncode}: {result.stderr.decode()[-400:]}")
    return statistics.median(wall), statistics.median(cpu)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("accelc")
    parser.add_argument("corpus")
    parser.add_argument("spec")
    parser.add_argument("repetitions", type=int, nargs="?", default=9)
    parser.add_argument("--accelerate-src", help="an Accelerate checkout's src/ folder")
    parser.add_argument("--before", help="an older accelc to time beside this one")
    args = parser.parse_args()
    python = "/usr/bin/python3"
    configs = sorted(os.path.join(args.corpus, n) for n in os.listdir(args.corpus)
                     if n.endswith((".yaml", ".yml")) and "invalid" not in n)
    typical = os.path.join(args.corpus, "config_yaml_templates__multi_gpu.yaml")
    work = tempfile.mkdtemp(prefix="accel-bench-")
    try:
        many_yaml, many_specs = [], []
        for i in range(1000):
            source = configs[i % len(configs)]
            target = os.path.join(work, f"c{i:04d}{os.path.splitext(source)[1]}")
            shutil.copyfile(source, target)
            many_yaml.append(target)
            target = os.path.join(work, f"s{i:04d}.accel")
            shutil.copyfile(args.spec, target)
            many_specs.append(target)
        rows = []
        for group, files in (("1 config", [typical]), ("1,000 configs", many_yaml)):
            if args.accelerate_src:
                rows.append((group, "baseline: Accelerate's load_config_from_file",
                             [python, "-c", ACCELERATE, args.accelerate_src] + files))
            rows.append((group, "PyYAML safe_load x2 (lower bound)", [python, "-c", PYYAML] + files))
            if args.before:
                rows.append((group, "before: accelc check", [args.before, "check"] + files))
            rows.append((group, "accelc check", [args.accelc, "check"] + files))
            if len(files) > 1:
                rows.append((group, "accelc check -j1", [args.accelc, "check", "-j1"] + files))
            else:
                rows.append((group, "floor: accelc --version", [args.accelc, "--version"]))
                rows.append((group, "floor: /bin/true", ["/bin/true"]))
        rows.append(("1 spec", "accelc check quickstart.accel", [args.accelc, "check", args.spec]))
        rows.append(("1,000 specs", "accelc check", [args.accelc, "check"] + many_specs))

        print(f"whole-process time, median of {args.repetitions}; a ratio is the baseline's wall "
              "time over the row's")
        print("| files | what | wall | CPU | files/s | vs Accelerate | vs PyYAML |")
        print("|---|---|---|---|---|---|---|")
        accelerate, pyyaml = {}, {}
        for group, name, command in rows:
            wall, cpu = measure(command, args.repetitions)
            if name.startswith("baseline:"):
                accelerate[group] = wall
            if name.startswith("PyYAML"):
                pyyaml[group] = wall
            ratios = []
            for base in (accelerate.get(group), pyyaml.get(group)):
                compared = base and base != wall and not name.startswith("floor:")
                ratios.append(f"{base / wall:.1f}×" if compared else "")
            files = 1000 if group.startswith("1,000") else 1
            print(f"| {group} | {name} | {wall * 1e3:,.1f} ms | {cpu * 1e3:,.1f} ms | "
                  f"{files / wall:,.0f} | {ratios[0]} | {ratios[1]} |", flush=True)
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
