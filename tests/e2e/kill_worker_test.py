#!/usr/bin/env python3
"""Rank 1 killed mid-training: accelrun names rank 1 (not rank 0's collective error that follows),
shows its last lines, stops the rest and exits 1, with no worker left behind.

Usage: kill_worker_test.py ACCELRUN SPEC WORKDIR
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from e2e_support import worker_ranks  # noqa: E402


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
    # Wait until both workers are training (rank 0 prints the first loss after step 1).
    deadline = time.time() + 60
    first_line_seen = False
    output = []
    while time.time() < deadline and not first_line_seen:
        line = run.stdout.readline()
        output.append(line)
        first_line_seen = line.startswith("step ")
    assert first_line_seen, "training never started:\n" + "".join(output)
    ranks = worker_ranks(plan)
    assert sorted(ranks) == [0, 1], f"expected ranks 0 and 1, found {ranks}"
    os.kill(ranks[1], signal.SIGKILL)
    killed_at = time.time()
    rest, _ = run.communicate(timeout=60)
    elapsed = time.time() - killed_at
    text = "".join(output) + rest
    sys.stdout.write(text)
    assert run.returncode == 1, f"accelrun exited {run.returncode}"
    # Rank 1 is named first, with its pid and its signal, not rank 0's collective error. Rank 0,
    # which says its collective failed, may exit on its own (then it follows, as a consequence)
    # or be stopped.
    assert re.search(rf"accelrun: error: rank 1 \(pid {ranks[1]}\) failed with signal 9 \(Killed\); "
                     r"stopped (1 other worker|0 other workers\nthen rank 0 \(pid \d+\) failed with exit code 3 "
                     r"\(peer failure: a collective or the rendezvous failed\), a consequence)", text), \
        "rank 1 is not named as the failure"
    # The launcher's verdict never names rank 0. (Rank 0's own error line, `accelrun: error:
    # rank 0: all_reduce failed ...`, may be relayed before it is stopped: that is a race
    # between its detection and the launcher's SIGTERM, and fine.)
    assert not re.search(r"accelrun: error: rank 0 \(pid", text), "rank 0 was named as the failure"
    # Its last lines: the line every worker prints when it starts.
    assert re.search(rf"last \d+ lines? of rank 1:\n  \| accelrun: worker rank 1 of 2 \(pid {ranks[1]}\) joins",
                     text), "rank 1's last lines are missing"
    # Relayed live with its prefix too.
    assert f"[rank 1] accelrun: worker rank 1 of 2 (pid {ranks[1]})" in text, "rank 1's output was not relayed"
    assert elapsed < 15, f"took {elapsed:.1f} s after the kill"
    assert worker_ranks(plan) == {}, "a worker outlived the launcher"
    print(f"kill_worker: accelrun named rank 1 {elapsed:.2f} s after it was killed")


if __name__ == "__main__":
    main()
