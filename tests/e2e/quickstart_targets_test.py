"""The README's first command builds everything it runs.

scripts/quickstart.sh builds a few targets, then runs accelrun. accelrun starts accelrun-worker
(beside it in bin/), and a `cuda` job's worker opens libaccel_cuda.so (in lib/). Both must be
among what building the quickstart's targets produces, or the quickstart fails on a clean clone
while the full build (what CI ran) hides it.

Usage: quickstart_targets_test.py <scripts/quickstart.sh> <build dir>
"""
import re
import shlex
import subprocess
import sys

# What accelrun runs at run time, as build-tree paths: runtime/tools/worker_executable.cpp and
# runtime/cuda/loader.cpp name them.
STARTED_AT_RUN_TIME = ["bin/accelrun-worker", "lib/libaccel_cuda.so"]


def quickstart_targets(script):
    for line in open(script):
        match = re.search(r'build\.sh"?\s+--target\s+(.*)$', line)
        if match:
            return shlex.split(match.group(1))
    sys.exit(f"FAIL: {script} builds no --target list")


def main():
    script, build = sys.argv[1], sys.argv[2]
    targets = quickstart_targets(script)
    inputs = subprocess.run(["ninja", "-C", build, "-t", "inputs", *targets], check=True, capture_output=True,
                            text=True).stdout.split()
    built = {path[len(build) + 1:] if path.startswith(build + "/") else path for path in inputs} | set(targets)
    missing = [path for path in STARTED_AT_RUN_TIME if path not in built]
    if missing:
        sys.exit(f"FAIL: the quickstart builds {' '.join(targets)}, which does not build {', '.join(missing)}")
    print(f"ok: building {' '.join(targets)} builds {', '.join(STARTED_AT_RUN_TIME)}")


main()
