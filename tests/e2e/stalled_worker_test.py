#!/usr/bin/env python3
"""A rank that stops making progress without dying: accelrun names it and stops the job within
the plan's timeout plus a few seconds.

1. `kill -STOP` of rank 1 mid-training: rank 0 gives up waiting in its all_reduce after the
   timeout; the launcher names rank 1, stopped, not rank 0's peer failure. Before the progress pipe the job stopped after 67 s and never named rank 1.
2. `kill -STOP` of rank 0, the rank that serves the rendezvous store: rank 1 waits, and rank 0
   is named.

3. Under `ulimit -v 1000000` OpenBLAS retries `mmap` forever in the first forward pass: both
   workers spin at 100% CPU, silent in their own work, and no collective timeout fires. The
   watchdog must stop the job within the limit for silent own work + 5 s (plus the workers'
   start), naming a rank; that limit is at least ten minutes unless `--own-work-limit` sets it,
   as here, to the timeout. (On a machine where the allocation fails outright instead, the
   worker's own error stops the job: also in time.)

4. A checkpoint save of rank 0 that takes longer than the timeout and the watchdog's limit for
   waits, while rank 0 says it still works (a slow disk; the save test hook
   ACCEL_TEST_SAVE_DELAY): rank 1 waits for it, and the job ends successfully.
5. The same save silent (a write stuck in the kernel): the job stops within the timeout plus a
   few seconds, naming rank 0 and its save, not rank 1, which waited for it.

Usage: stalled_worker_test.py ACCELRUN SPEC WORKDIR
"""
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from e2e_support import worker_ranks  # noqa: E402

TIMEOUT_S = 4


def stall(accelrun, spec, workdir, name, stopped_rank):
    out = os.path.join(workdir, name)
    plan = os.path.join(out, "plan.json")
    run = subprocess.Popen([accelrun, spec, "--output-dir", out], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
    deadline = time.time() + 90
    output = []
    while time.time() < deadline:
        line = run.stdout.readline()
        output.append(line)
        if line.startswith("step ") or not line:
            break
    assert output[-1].startswith("step "), "training never started:\n" + "".join(output)
    ranks = worker_ranks(plan)
    assert sorted(ranks) == [0, 1], f"expected ranks 0 and 1, found {ranks}"
    os.kill(ranks[stopped_rank], signal.SIGSTOP)
    stopped_at = time.time()
    try:
        rest, _ = run.communicate(timeout=TIMEOUT_S + 30)
    finally:
        for pid in ranks.values():  # never leave a stopped process behind
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    elapsed = time.time() - stopped_at
    text = "".join(output) + rest
    sys.stdout.write(text)
    assert run.returncode == 1, f"{name}: accelrun exited {run.returncode}"
    assert re.search(rf"accelrun: error: rank {stopped_rank} \(pid {ranks[stopped_rank]}\) is stopped \(SIGSTOP or a "
                     r"debugger\) and made no progress for \d+ s \(last: ", text), \
        f"{name}: rank {stopped_rank} is not named as the stalled rank"
    other = 1 - stopped_rank
    assert not re.search(rf"accelrun: error: rank {other} \(pid", text), f"{name}: rank {other} was named"
    assert elapsed < TIMEOUT_S + 5 + 3, f"{name}: took {elapsed:.1f} s after the stop (timeout {TIMEOUT_S} s)"
    assert worker_ranks(plan) == {}, f"{name}: a worker outlived the launcher"
    print(f"{name}: accelrun named rank {stopped_rank} {elapsed:.2f} s after it was stopped")


def libtorch_cpu_bytes(accelrun):
    """The size of the worker's libtorch_cpu.so, which alone takes most of a worker's address space."""
    worker = os.path.join(os.path.dirname(accelrun), "accelrun-worker")
    linked = subprocess.run(["ldd", worker], stdout=subprocess.PIPE, text=True, check=True).stdout
    found = re.search(r"libtorch_cpu\.so => (\S+)", linked)
    assert found, f"accelrun-worker does not link libtorch_cpu.so:\n{linked}"
    return os.path.getsize(found.group(1))


def memory_capped(accelrun, spec, workdir):
    """A worker whose address space is capped just above what LibTorch's code takes fails (to
    start a thread, to allocate): accelrun names a rank within the timeout instead of hanging."""
    out = os.path.join(workdir, "memory_capped")
    limit = libtorch_cpu_bytes(accelrun) + 24 * 2**20
    cap = lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    started = time.time()
    run = subprocess.run([accelrun, spec, "--output-dir", out, "--own-work-limit", str(TIMEOUT_S)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, preexec_fn=cap, timeout=120)
    elapsed = time.time() - started
    sys.stdout.write(run.stdout)
    assert run.returncode == 1, f"memory_capped: accelrun exited {run.returncode}"
    assert re.search(r"accelrun: error: rank \d \(pid \d+\) (made no progress|failed)", run.stdout), \
        "memory_capped: no rank is named"
    # Starting the workers (LibTorch, the dataset) takes a few seconds on a busy machine.
    assert elapsed < TIMEOUT_S + 5 + 15, f"memory_capped: took {elapsed:.1f} s (timeout {TIMEOUT_S} s)"
    print(f"memory_capped: stopped {elapsed:.2f} s after the start (timeout {TIMEOUT_S} s)")


def saving_spec(spec, workdir):
    """The quickstart with one checkpoint, at step 10 of 10, and the test's timeout."""
    with open(spec) as f:
        text = f.read()
    path = os.path.join(workdir, "saving.accel")
    with open(path, "w") as f:
        f.write(text.replace("steps = 200", "steps = 10").replace("timeout = 60s", f"timeout = {TIMEOUT_S}s")
                .replace("log_every = 20", "log_every = 5\n    checkpoint_every = 10"))
    return path


def slow_save(accelrun, spec, workdir, mode, seconds):
    """Runs the saving spec with rank 0's save `seconds` longer, saying it works or not."""
    out = os.path.join(workdir, f"{mode}_save")
    env = dict(os.environ, ACCEL_TEST_SAVE_DELAY=f"0:{seconds}:{mode}")
    started = time.time()
    run = subprocess.run([accelrun, spec, "--output-dir", out, "--own-work-limit", str(TIMEOUT_S)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, timeout=180)
    sys.stdout.write(run.stdout)
    return run, time.time() - started


def main():
    accelrun, spec, workdir = sys.argv[1:4]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    long_spec = os.path.join(workdir, "long.accel")
    with open(spec) as f:
        text = f.read()
    assert "steps = 200" in text and "timeout = 60s" in text, "the quickstart changed: update this test"
    with open(long_spec, "w") as f:
        f.write(text.replace("steps = 200", "steps = 1000000").replace("timeout = 60s", f"timeout = {TIMEOUT_S}s"))
    stall(accelrun, long_spec, workdir, "rank1_stopped", 1)
    stall(accelrun, long_spec, workdir, "rank0_stopped", 0)
    memory_capped(accelrun, long_spec, workdir)

    saving = saving_spec(spec, workdir)
    # Past the timeout and the watchdog's limit for waits (timeout + 5 s) both.
    run, elapsed = slow_save(accelrun, saving, workdir, "working", TIMEOUT_S + 8)
    assert run.returncode == 0, f"working_save: accelrun exited {run.returncode}"
    assert re.search(r"checkpoint \S+ saved at step 10 ", run.stdout), "working_save: no checkpoint"
    assert elapsed >= TIMEOUT_S + 8, f"working_save: took {elapsed:.1f} s, shorter than the delay"
    print(f"working_save: a save {TIMEOUT_S + 8} s long ended well ({elapsed:.1f} s in all)")

    run, elapsed = slow_save(accelrun, saving, workdir, "silent", 120)
    assert run.returncode == 1, f"silent_save: accelrun exited {run.returncode}"
    assert re.search(r"accelrun: error: rank 0 \(pid \d+\) made no progress for \d+ s \(last: saving the "
                     r"checkpoint of step 10\)", run.stdout), "silent_save: rank 0's save is not named"
    assert not re.search(r"accelrun: error: rank 1 \(pid", run.stdout), "silent_save: rank 1 was named"
    # Starting the workers takes a few seconds on a busy machine.
    assert elapsed < TIMEOUT_S + 5 + 20, f"silent_save: took {elapsed:.1f} s (timeout {TIMEOUT_S} s)"
    print(f"silent_save: rank 0 named {elapsed:.1f} s after the start")


if __name__ == "__main__":
    main()
