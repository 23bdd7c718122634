#!/usr/bin/env python3
"""The launcher's failure paths with real workers:

1. the launcher itself SIGKILLed mid-training leaves no worker behind;
2. a rank that never joins: the rank that waited exits 3 (peer failure) after the plan's
   timeout, and accelrun names it as a peer failure whose cause is elsewhere;
3. another program listens on the rendezvous port and never answers: a rank that connects
   there gives up within the plan's timeout, naming the address. PyTorch's store client alone
   waits there forever, and only the watchdog stopped the rank, at the timeout + 5 s.

Usage: launch_failures_test.py ACCELRUN SPEC WORKDIR
"""
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from e2e_support import free_port, worker_ranks  # noqa: E402


def write_spec(spec, workdir, name, replacements):
    with open(spec) as f:
        text = f.read()
    for old, new in replacements:
        assert old in text, f"`{old}` is not in {spec}"
        text = text.replace(old, new)
    path = os.path.join(workdir, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def launcher_killed(accelrun, spec, workdir):
    long_spec = write_spec(spec, workdir, "long.accel", [("steps = 200", "steps = 1000000")])
    out = os.path.join(workdir, "killed")
    plan = os.path.join(out, "plan.json")
    run = subprocess.Popen([accelrun, long_spec, "--output-dir", out], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    output = []
    for line in run.stdout:
        output.append(line)
        if line.startswith("step "):
            break
    assert len(worker_ranks(plan)) == 2, "two workers should be training:\n" + "".join(output)
    run.kill()
    run.wait()
    run.stdout.close()
    # PR_SET_PDEATHSIG: the kernel kills each worker when the launcher dies; allow it a moment.
    deadline = time.time() + 10
    while worker_ranks(plan) and time.time() < deadline:
        time.sleep(0.05)
    assert worker_ranks(plan) == {}, f"workers outlived a SIGKILLed launcher: {worker_ranks(plan)}"
    print("launcher SIGKILLed: no worker left")


def peer_never_joins(accelrun, spec, workdir):
    short_spec = write_spec(spec, workdir, "short_timeout.accel", [("timeout = 60s", "timeout = 2s")])
    out = os.path.join(workdir, "alone")
    # Node 0 of 2 with one process: rank 1 (node 1) is never started. Across machines the
    # port must be given; take a free one.
    port = free_port()
    run = subprocess.run([accelrun, short_spec, "--output-dir", out, "--nnodes", "2", "--node-rank", "0",
                          "--nproc-per-node", "1", "--master-addr", "127.0.0.1", "--master-port", str(port)],
                         capture_output=True, text=True, timeout=120)
    text = run.stdout + run.stderr
    sys.stdout.write(text)
    assert run.returncode == 1, f"accelrun exited {run.returncode}"
    assert re.search(r"accelrun: error: rank 0 \(pid \d+\) failed with exit code 3 \(peer failure", text), \
        "rank 0's peer failure is not named"
    assert "the cause is a rank it did not start (another task or machine), or one that never joined" in text
    # Rank 0's error line was relayed as it came: the summary shows the lines before it and ends
    # with it, the cause.
    assert re.search(r"last \d+ lines? of rank 0 before its error:", text), "rank 0's last lines are missing"
    assert text.rstrip("\n").splitlines()[-1].startswith("rank 0's error: rendezvous at "), \
        "the summary does not end with rank 0's error"
    print("peer never joined: named as a peer failure")


def foreign_listener(accelrun, spec, workdir):
    short_spec = write_spec(spec, workdir, "foreign_timeout.accel", [("timeout = 60s", "timeout = 2s")])
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        # Node 1 of 2: its rank 1 connects to rank 0's store, which the holder stands in for.
        run = subprocess.run([accelrun, short_spec, "--output-dir", os.path.join(workdir, "foreign"), "--nnodes", "2",
                              "--node-rank", "1", "--nproc-per-node", "1", "--master-addr", "127.0.0.1",
                              "--master-port", str(port)], capture_output=True, text=True, timeout=120)
    text = run.stdout + run.stderr
    sys.stdout.write(text)
    assert run.returncode == 1, f"accelrun exited {run.returncode}"
    assert (f"rendezvous at 127.0.0.1:{port} failed on rank 1 of 2 within 2000 ms: something accepts connections "
            f"at 127.0.0.1:{port} but does not answer as the job's rendezvous store") in text, \
        "rank 1 did not give up on the foreign listener by itself"
    assert "made no progress" not in text, "the watchdog had to stop rank 1"
    print("foreign listener on the port: rank 1 gave up within the timeout, naming the address")


def port_taken(accelrun, spec, workdir):
    """The rendezvous port is held by another process: rank 0 cannot serve the store. That is
    rank 0's own failure, named with the port and the fix, not "a peer failure"."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        run = subprocess.run([accelrun, spec, "--output-dir", os.path.join(workdir, "port_taken"), "--master-port",
                              str(port)], capture_output=True, text=True, timeout=120)
    text = run.stdout + run.stderr
    sys.stdout.write(text)
    assert run.returncode == 1, f"accelrun exited {run.returncode}"
    assert re.search(r"accelrun: error: rank 0 \(pid \d+\) failed with exit code 1;", text), \
        "rank 0's own failure is not named"
    assert f"rank 0 cannot serve the rendezvous store on port {port}" in text, text
    assert "another process holds the port: pass another --master-port" in text, text
    assert "peer failure" not in text.split("accelrun: error: rank 0 (pid")[-1].splitlines()[0], \
        "rank 0's bind failure is reported as a peer failure"
    print("port taken: rank 0's own failure, with the port named")


def out_of_descriptors(accelrun, spec, workdir):
    """Under `ulimit -n 16` a worker runs out of file descriptors: the report names a rank that
    failed on its own, with the cause in its lines, never only a peer failure."""
    cap = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (16, 16))
    run = subprocess.run([accelrun, spec, "--output-dir", os.path.join(workdir, "descriptors")],
                         capture_output=True, text=True, timeout=120, preexec_fn=cap)
    text = run.stdout + run.stderr
    sys.stdout.write(text)
    assert run.returncode == 1, f"accelrun exited {run.returncode}"
    verdict = re.search(r"accelrun: error: (rank \d \(pid \d+\) .*)", text)
    assert verdict, "no rank is named"
    assert "peer failure" not in verdict.group(1), f"named as a peer failure: {verdict.group(1)}"
    assert re.search(r"Too many open files|file descriptors", text), "the cause is not shown"
    print("out of descriptors: the rank named failed on its own")


def main():
    accelrun, spec, workdir = sys.argv[1:4]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    launcher_killed(accelrun, spec, workdir)
    peer_never_joins(accelrun, spec, workdir)
    foreign_listener(accelrun, spec, workdir)
    port_taken(accelrun, spec, workdir)
    out_of_descriptors(accelrun, spec, workdir)


if __name__ == "__main__":
    main()
