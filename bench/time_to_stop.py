#!/usr/bin/env python3
"""How long a failing job takes to stop, per failure kind and launcher: the time from the
failure to the moment every launcher of the job has exited, with a 4 s collective timeout.

Kinds: a worker killed (SIGKILL), a worker stopped (SIGSTOP), both timed from the hit; and,
timed from the launch (worker start-up included): the rendezvous port held by another process,
and a memory cap (`ulimit -v 1000000`, under which OpenBLAS spins on mmap). Launchers: one local accelrun
for both ranks; `srun -N1 -n2` on a one-node Slurm cluster this script starts itself
(tests/e2e/slurm_cluster.py); `mpirun.openmpi -np 2`; `mpiexec.hydra -n 2`. Each pair runs
REPEATS times; the medians are printed. Needs root for Slurm (skipped otherwise).

Usage: time_to_stop.py ACCELC ACCELRUN SPEC [REPEATS]
"""
import os
import resource
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
    job = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           start_new_session=True)
    try:
        deadline = time.time() + 90
        while time.time() < deadline:
            line = job.stdout.readline()
            if line.startswith("step ") or not line:
                break
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
    """Seconds from the launch to the end of a job that fails at start: `port` (the port the
    job is given is held by a listening socket) or `memory` (the launcher and all it starts run
    under a 1 GB address-space cap)."""
    cap = None
    if kind == "memory":
        cap = lambda: resource.setrlimit(resource.RLIMIT_AS, (1_000_000 * 1024, 1_000_000 * 1024))
    started = time.time()
    job = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=cap,
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
    plan = os.path.join(work, "plan.json")
    subprocess.run([accelc, "build", spec, "--set", "train.steps=1000000", "--set",
                    f"accelerator.init_process_group.timeout={TIMEOUT_S}s", "-o", plan], check=True,
                   capture_output=True)
    env = scheduler_free_env()
    mpi_env = dict(env, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    # Ranks spinning under the memory cap are silent in their own work: held to the timeout here,
    # not to the ten minutes such work gets by default.
    own = ["--own-work-limit", str(TIMEOUT_S)]
    launchers = {
        "local": lambda port, out: ([accelrun, plan, "--output-dir", out, "--master-port", str(port)] + own, env),
        "mpirun (OpenMPI)": lambda port, out: (["mpirun.openmpi", "-np", "2", "--oversubscribe", accelrun, plan,
                                                "--output-dir", out, "--master-port", str(port)] + own, mpi_env),
        "mpiexec (MPICH)": lambda port, out: (["mpiexec.hydra", "-n", "2", accelrun, plan, "--output-dir", out,
                                               "--master-port", str(port)] + own, env),
    }
    cluster = SlurmCluster(cpus=4)
    try:
        try:
            cluster.start()
            launchers["srun (Slurm)"] = lambda port, out: (["srun", "-N1", "-n2", accelrun, plan, "--output-dir",
                                                            out] + own, dict(cluster.env, MASTER_PORT=str(port)))
        except Unavailable as why:
            print(f"srun: skipped: {why}")
        print(f"| launcher | kill -9 of rank 1 | kill -STOP of rank 1 | port taken (from launch) | "
              f"memory cap (from launch) |  (timeout {TIMEOUT_S} s, medians of {repeats})")
        print("|---|---|---|---|---|")
        for name, make in launchers.items():
            cells = []
            for kind in ("kill", "stop", "port", "memory"):
                times = []
                for i in range(repeats):
                    out = os.path.join(work, f"{len(cells)}-{kind}-{i}-{abs(hash(name))}")
                    if kind in ("kill", "stop"):
                        times.append(one_run(*make(free_port(), out), out, kind))
                        continue
                    with socket.socket() as holder:
                        holder.bind(("127.0.0.1", 0))
                        holder.listen()
                        port = holder.getsockname()[1] if kind == "port" else free_port()
                        times.append(start_failure(*make(port, out), kind))
                cells.append(f"{statistics.median(times):.2f} s")
            print(f"| {name} | {' | '.join(cells)} |", flush=True)
    finally:
        cluster.stop()
        cluster.remove()


if __name__ == "__main__":
    main()
