#!/usr/bin/env python3
"""Where accelrun's start to first step goes: each worker's phases, timed from its spawn.

Plays the launcher: takes each rank's command and environment from `accelrun PLAN --dry-run`
(so the workers run exactly as accelrun would start them), starts both ranks at once with a
progress pipe of their own (ACCEL_PROGRESS_FD, runtime/support/progress.h), and timestamps
every progress line and output line as it arrives. A run ends when rank 0 starts step 2, i.e.
when its first optimizer step and the logged loss's reduce are done; then both are killed.

Phases, per rank (medians of the runs):
  to main        spawn -> the `joins` line: exec, dynamic loading and LibTorch's static
                 initialisers, then reading the plan
  to rendezvous  -> `W the rendezvous`
  rendezvous     -> the plan-hash check-in is done (`S building ...`): store, Gloo mesh, gather
  build          -> `S restoring ...`: seed, model, weights broadcast, data, reducer
  restore        -> `S step 1` (nothing to restore here)
  first step     -> `S step 2`: forward, backward, all-reduce, AdamW, the logged loss's reduce

Usage: worker_phases.py BIN_DIR SPEC_OR_PLAN [--repetitions N]
"""
import argparse
import os
import selectors
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

PHASES = [("to main", "joins"), ("to rendezvous", "W the rendezvous"), ("rendezvous", "S building"),
          ("build", "S restoring"), ("restore", "S step 1"), ("first step", "S step 2")]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ranks_from_dry_run(accelrun, plan, out, port):
    """[(argv, env)] per rank, as `accelrun --dry-run` prints them."""
    text = subprocess.run([accelrun, plan, "--dry-run", "--master-port", str(port), "--output-dir", out],
                          check=True, capture_output=True, text=True).stdout
    ranks = []
    for line in text.splitlines():
        if line.startswith("  command: "):
            ranks.append((shlex.split(line[len("  command: "):]), {}))
        elif line.startswith("  env: "):
            key, _, value = shlex.split(line[len("  env: "):])[0].partition("=")
            ranks[-1][1][key] = value
    return ranks


def one_run(accelrun, plan, out):
    ranks = ranks_from_dry_run(accelrun, plan, out, free_port())
    os.makedirs(out, exist_ok=True)
    shutil.copy(plan, os.path.join(out, "plan.json"))  # where the workers' command reads it
    launch_id = f"phases-{os.getpid()}-{time.monotonic_ns()}"
    selector = selectors.DefaultSelector()
    workers, seen = [], [dict() for _ in ranks]
    started = time.perf_counter()
    for rank, (argv, extra) in enumerate(ranks):
        read_end, write_end = os.pipe()
        env = dict(os.environ)
        env.update(extra)
        env.update(ACCEL_LAUNCHER_PID=str(os.getpid()), ACCEL_LAUNCH_ID=launch_id, ACCEL_PROGRESS_FD=str(write_end))
        worker = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  pass_fds=(write_end,))
        os.close(write_end)
        workers.append(worker)
        selector.register(read_end, selectors.EVENT_READ, (rank, "progress"))
        selector.register(worker.stdout.fileno(), selectors.EVENT_READ, (rank, "output"))
    try:
        while "S step 2" not in seen[0]:
            if time.perf_counter() - started > 120:
                sys.exit(f"no step 2 within 120 s: {seen}")
            for key, _ in selector.select(timeout=1):
                rank, kind = key.data
                data = os.read(key.fd, 65536)
                if not data:
                    selector.unregister(key.fileobj)
                    continue
                now = time.perf_counter() - started
                for line in data.decode(errors="replace").splitlines():
                    if kind == "output" and " joins " in line:
                        line = "joins"
                    for _, prefix in PHASES:
                        if line.startswith(prefix):
                            seen[rank].setdefault(prefix, now)
    finally:
        for worker in workers:
            worker.kill()
            worker.wait()
    return seen


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bin_dir")
    parser.add_argument("spec")
    parser.add_argument("--repetitions", type=int, default=7)
    args = parser.parse_args()
    accelrun = os.path.join(args.bin_dir, "accelrun")
    work = tempfile.mkdtemp(prefix="accel-phases-")
    plan = os.path.join(work, "plan.json")
    if args.spec.endswith(".json"):
        plan = os.path.abspath(args.spec)
    else:
        subprocess.run([os.path.join(args.bin_dir, "accelc"), "compile", args.spec, "-o", plan], check=True)
    runs = [one_run(accelrun, plan, os.path.join(work, f"run-{i}")) for i in range(args.repetitions)]
    print(f"worker phases from spawn, median of {args.repetitions} (s; the phase's length, then when it ends)\n")
    print("| phase | rank 0 | rank 1 |")
    print("|---|---|---|")
    for index, (name, mark) in enumerate(PHASES):
        cells = []
        for rank in (0, 1):
            ends = [run[rank].get(mark) for run in runs]
            begins = [run[rank].get(PHASES[index - 1][1], 0.0) if index else 0.0 for run in runs]
            if None in ends or None in begins:
                cells.append("—")
                continue
            length = statistics.median(end - begin for begin, end in zip(begins, ends))
            cells.append(f"{length:.3f} (at {statistics.median(ends):.3f})")
        print(f"| {name} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
