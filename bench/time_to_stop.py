#!/usr/bin/env python3
"""How long a failing job takes to stop, per failure kind and launcher: the time from the
failure to the moment every launcher of the job has exited, with a 4 s collective timeout.

Kinds: a worker killed (SIGKILL), a worker stopped (SIGSTOP), both timed from the hit; and,
timed from the launch (worker start-up included): the rendezvous port held by another process,
and rank 0 silent in its first checkpoint save, after the first step (a write stuck in the
kernel, planted by the save test hook ACCEL_TEST_SAVE_DELAY; with `--own-work-limit 4`, so that
own work is held to the timeout too). Launchers: one local accelrun
for both ranks; `srun -N1 -n2` on a one-node Slurm cluster this script starts itself
(tests/e2e/slurm_cluster.py); `mpirun.openmpi -np 2`; `mpiexec.hydra -n 2`. Each pair runs
REPEATS times; the medians are printed. Needs root for Slurm (skipped otherwise).

Usage: time_to_stop.py ACCELC ACCELRUN SPEC [REPEATS]
"""
import os
import re
import select
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "e2e"))
from e2e_support import scheduler_free_env, worker_ranks  # noqa: E402
from slurm_cluster import SlurmCluster, Unavailable, free_port  # noqa: E402

TIMEOUT_S = 4


def one_run(argv, env, out, kind):
    """Starts the job, waits for both workers to train, hits rank 1, returns seconds to stop."""
    plan = os.path.join(out, "plan.json")  # what accelrun hands its workers
    job = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           start_new_session=True)
    try:
        # Until a step is reported: a `step` line, or under mpirun (whose tasks write to a
        # terminal) the progress bar redrawn after `\r` (`[----]  1/1000000 ... it/s`), with no
        # newline to wait for.
        deadline = time.time() + 90
        seen = b""
        while time.time() < deadline and not re.search(rb"(^|\n)step | it/s ", seen):
            if select.select([job.stdout], [], [], 0.1)[0]:
                chunk = os.read(job.stdout.fileno(), 65536)
                if not chunk:
                    break
                seen = seen[-4096:] + chunk
        ranks = worker_ranks(plan)
        assert sorted(ranks) == [0, 1], f"workers: {ranks}"
        os.kill(ranks[1], signal.SIGKILL if kind == "kill" else signal.SIGSTOP)
        hit = time.time()
        job.communicate(timeout=TIMEOUT_S + 60)
        return time.time() - hit
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()
        for pid in worker_ranks(plan).values():
            os.kill(pid, signal.SIGKILL)


def start_failure(argv, env, kind):
    """Seconds from the launch to the end of a job that fails early: `port` (the port the job
    is given is held by a listening socket) or `silent save` (rank 0 says nothing in its first
    save, right after the first step)."""
    if kind == "silent save":
        env = dict(env, ACCEL_TEST_SAVE_DELAY="0:600:silent")
    started = time.time()
    job = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           start_new_session=True)
    try:
        job.wait(timeout=TIMEOUT_S + 90)
        assert job.returncode != 0, f"{kind}: the job did not fail"
        return time.time() - started
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()


def main():
    accelc, accelrun, spec = map(os.path.abspath, sys.argv[1:4])
    repeats = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    work = tempfile.mkdtemp(prefix="accel-stop-")
    def build(name, *overrides):
        path = os.path.join(work, name)
        sets = [f"--set={o}" for o in ("train.steps=1000000", f"accelerator.init_process_group.timeout={TIMEOUT_S}s")
                + overrides]
        subprocess.run([accelc, "build", spec, *sets, "-o", path], check=True, capture_output=True)
        return path

    # The silent save's plan saves after every step: its first save comes right after step 1.
    plans = {"kill": build("plan.json"), "silent save": build("saving.json", "train.checkpoint_every=1")}
    plans["stop"] = plans["port"] = plans["kill"]
    env = scheduler_free_env()
    mpi_env = dict(env, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    # The silent save is the rank's own work: held to the timeout here, not to the ten minutes
    # such work gets by default.
    own = ["--own-work-limit", str(TIMEOUT_S)]
    launchers = {
        "local": lambda plan, port, out: ([accelrun, plan, "--output-dir", out, "--master-port", str(port)] + own,
                                          env),
        "mpirun (OpenMPI)": lambda plan, port, out: (["mpirun.openmpi", "-np", "2", "--oversubscribe", accelrun,
                                                      plan, "--output-dir", out, "--master-port", str(port)] + own,
                                                     mpi_env),
        "mpiexec (MPICH)": lambda plan, port, out: (["mpiexec.hydra", "-n", "2", accelrun, plan, "--output-dir",
                                                     out, "--master-port", str(port)] + own, env),
    }
    cluster = SlurmCluster(cpus=4)
    try:
        try:
            cluster.start()
            launchers["srun (Slurm)"] = lambda plan, port, out: (["srun", "-N1", "-n2", accelrun, plan,
                                                                  "--output-dir", out] + own,
                                                                 dict(cluster.env, MASTER_PORT=str(port)))
        except Unavailable as why:
            print(f"srun: skipped: {why}")
        print(f"| launcher | kill -9 of rank 1 | kill -STOP of rank 1 | port taken (from launch) | "
              f"silent save (from launch) |  (timeout {TIMEOUT_S} s, medians of {repeats})")
        print("|---|---|---|---|---|")
        for name, make in launchers.items():
            cells = []
            for kind in ("kill", "stop", "port", "silent save"):
                times = []
                for i in range(repeats):
                    out = os.path.join(work, f"{len(cells)}-{kind.replace(' ', '_')}-{i}-{abs(hash(name))}")
                    if kind in ("kill", "stop"):
                        times.append(one_run(*make(plans[kind], free_port(), out), out, kind))
                        continue
                    with socket.socket() as holder:
                        holder.bind(("127.0.0.1", 0))
                        holder.listen()
                        port = holder.getsockname()[1] if kind == "port" else free_port()
                        times.append(start_failure(*make(plans[kind], port, out), kind))
                cells.append(f"{statistics.median(times):.2f} s")
            print(f"| {name} | {' | '.join(cells)} |", flush=True)
    finally:
        cluster.stop()
        cluster.remove()


if __name__ == "__main__":
    main()
