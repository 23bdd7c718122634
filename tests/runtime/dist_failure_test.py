#!/usr/bin/env python3
"""Failure scenarios on real processes over Gloo: a rank killed mid-collective (an all-gather, a
reduce-scatter), a rank that never joins, a straggler past the timeout. Every surviving rank
must end within timeout + 5 s with an error that names the cause; nothing may hang.

With --loaded, every scenario runs beside 2 busy processes per CPU (stopped by pid at the end):
the same bounds must hold on a machine that other work keeps busy.

usage: dist_failure_test.py <dist_failure_worker> [world_size] [--loaded]
"""
import os
import re
import socket
import subprocess
import sys
import time

TIMEOUT_MS = 2000
# Measured by each worker from the start of its main(): loading LibTorch takes seconds on a
# loaded machine and is not what the bound is about.
BOUND_S = TIMEOUT_MS / 1000 + 5
# Wall-clock guard against a hang, startup included.
HANG_S = 60


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(worker, world, args, never_exits=()):
    port = free_port()
    procs = []
    started = time.monotonic()
    for rank in range(world):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), ACCEL_TEST_START_GATE="1")
        procs.append(subprocess.Popen([worker, "--timeout-ms", str(TIMEOUT_MS)] + args, env=env,
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
    # Every rank has loaded LibTorch before any starts its clock: how long a busy machine takes
    # to start a process is not what the bounds are about.
    for rank, proc in enumerate(procs):
        ready = proc.stdout.readline()
        assert ready == "ready\n", f"rank {rank} did not start: {ready!r}"
    for proc in procs:
        proc.stdin.write("\n")
        proc.stdin.close()
        proc.stdin = None  # communicate() must not flush it again
    results = {}
    for rank, proc in enumerate(procs):
        if rank in never_exits:
            continue
        remaining = max(0.1, started + HANG_S - time.monotonic())
        try:
            _, err = proc.communicate(timeout=remaining)
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
            raise AssertionError(f"rank {rank} still running {HANG_S} s after the start: a hang")
        line = err.strip().splitlines()[-1] if err.strip() else ""
        own = re.search(r"(?:after|in) (\d+) ms", line)
        results[rank] = (proc.returncode, line, int(own.group(1)) / 1000 if own else None)
    for rank in never_exits:
        procs[rank].kill()
        procs[rank].wait()
    return results


def check(name, results, expect_codes, must_contain):
    failures = []
    for rank, (code, line, seconds) in sorted(results.items()):
        print(f"  {name}: rank {rank} exit {code}: {line}")
        if code not in expect_codes.get(rank, (3,)):
            failures.append(f"rank {rank}: exit {code}, expected {expect_codes.get(rank, (3,))}")
        if seconds is not None and seconds > BOUND_S:
            failures.append(f"rank {rank}: ended after {seconds:.2f} s, bound {BOUND_S} s")
        for text in must_contain.get(rank, ()):
            if text not in line:
                failures.append(f"rank {rank}: `{text}` not in: {line}")
    return failures


def start_load():
    """Two CPU-bound processes per CPU; returns them so the caller can stop them."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2 * (os.cpu_count() or 1))]


def main():
    args = [a for a in sys.argv[1:] if a != "--loaded"]
    load = start_load() if "--loaded" in sys.argv else []
    try:
        return scenarios(args[0], int(args[1]) if len(args) > 1 else 3, loaded=bool(load))
    finally:
        for p in load:
            p.kill()
            p.wait()


def scenarios(worker, world, loaded):
    others = [r for r in range(world) if r != 1]
    failures = []

    # Rank 1 dies by SIGKILL inside its third all-gather (mid-job, mid-operation).
    results = run(worker, world, ["--faults", "all_gather:3:kill", "--fault-rank", "1"])
    expect = {1: (-9,)}
    failures += check("killed", results, expect, {r: ("error", "failed on rank") for r in others})

    # Rank 1 never joins: every other rank names it.
    results = run(worker, world, ["--never-join-rank", "1"], never_exits=(1,))
    failures += check("never joins", results, {},
                      {r: ("rank 1 did not join within 2000 ms",) for r in others})

    # Rank 1 stalls past the timeout before its second all-reduce: the others time out, and
    # rank 1 fails as soon as it comes back to a group that is gone.
    results = run(worker, world, ["--faults", f"all_reduce:2:delay={TIMEOUT_MS + 1000}ms", "--fault-rank", "1"])
    failures += check("straggler", results, {1: (3,)},
                      {r: ("all_reduce failed on rank", "timeout 2000 ms") for r in others})

    # Rank 1 dies by SIGKILL inside its third reduce-scatter (an all-to-all and a local sum).
    results = run(worker, world, ["--sharded", "1", "--faults", "reduce_scatter:3:kill", "--fault-rank", "1"])
    failures += check("killed in reduce_scatter", results, expect,
                      {r: ("reduce_scatter failed on rank", "timeout 2000 ms") for r in others})

    # Reduce-scatters without faults complete with the right chunks (the worker checks them).
    results = run(worker, world, ["--sharded", "1"])
    failures += check("healthy reduce_scatter", results, {r: (0,) for r in range(world)},
                      {r: ("done",) for r in range(world)})

    # And without faults everything completes.
    results = run(worker, world, [])
    failures += check("healthy", results, {r: (0,) for r in range(world)}, {r: ("done",) for r in range(world)})

    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        return 1
    print(f"all failure scenarios ended within timeout + 5 s at world size {world}"
          f"{' beside 2 busy processes per CPU' if loaded else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
