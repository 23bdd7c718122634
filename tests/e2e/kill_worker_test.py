#!/usr/bin/env python3
"""A worker killed mid-training: accelrun names the rank, stops the rest and exits 1, quickly.

Usage: kill_worker_test.py ACCELRUN SPEC WORKDIR
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import time


def worker_pids(plan):
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if b"--worker" in argv and plan.encode() in argv:
            pids.append(int(entry))
    return sorted(pids)


def main():
    accelrun, spec, workdir = sys.argv[1:4]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    long_spec = os.path.join(workdir, "long.accel")
    with open(spec) as f:
        text = f.read().replace("steps = 200", "steps = 1000000")
    with open(long_spec, "w") as f:
        f.write(text)
    out = os.path.join(workdir, "out")
    plan = os.path.join(out, "plan.json")
    run = subprocess.Popen([accelrun, long_spec, "--output-dir", out], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    # Wait until both workers are training (the first loss line is printed after step 1).
    deadline = time.time() + 60
    first_line_seen = False
    output = []
    while time.time() < deadline and not first_line_seen:
        line = run.stdout.readline()
        output.append(line)
        first_line_seen = line.startswith("step ")
    assert first_line_seen, "training never started:\n" + "".join(output)
    pids = worker_pids(plan)
    assert len(pids) == 2, f"expected 2 workers, found {pids}"
    os.kill(pids[-1], signal.SIGKILL)
    killed_at = time.time()
    rest, _ = run.communicate(timeout=60)
    elapsed = time.time() - killed_at
    text = "".join(output) + rest
    sys.stdout.write(text)
    assert run.returncode == 1, f"accelrun exited {run.returncode}"
    assert re.search(r"rank \d \(pid \d+\) failed with signal 9", text), "the failed rank is not named"
    assert elapsed < 15, f"took {elapsed:.1f} s after the kill"
    assert worker_pids(plan) == [], "a worker outlived the launcher"
    print(f"kill_worker: accelrun stopped {elapsed:.2f} s after a worker was killed")


if __name__ == "__main__":
    main()
