#!/usr/bin/env python3
"""Two jobs that meet at one rendezvous, as two srun jobs sharing a node and a port did.

Job 12 runs ranks 0 and 1 of the quickstart; rank 1 of job 11 (whose rank 0 could not bind the
same port) reaches job 12's store. The stray rank must be refused at once, naming both
launches, and exit non-zero; job 12 must train to the end on its own two ranks. Before launch
ids, the stray rank could take job 12's rank 1 place and exit 0 with "done".

Two local jobs given one output directory: the second is refused before it starts a worker,
naming the first (its pid); the first finishes. Before the lock both exited 0, with their
metrics.jsonl lines interleaved.

A port the launcher picks for itself is held until rank 0's store serves it: another process
that tries to take it in the meantime (here, the moment the workers exist, before rank 0 has
loaded LibTorch) is refused, and the job trains. Before, the launcher let the port go at once,
and a process that took it in that second failed the job at its start ("another process holds
the port"), which other tests' connections did now and then in a loaded run.

Usage: two_jobs_test.py ACCELRUN SPEC WORKDIR
"""
import os
import shutil
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from e2e_support import free_port, live_workers  # noqa: E402


def workers_master_port(plan):
    """MASTER_PORT of a live worker of `plan`, or None before one exists."""
    for _, env in live_workers(plan):
        if b"MASTER_PORT" in env:
            return int(env[b"MASTER_PORT"])
    return None


def held_port(accelrun, spec, workdir):
    out = os.path.join(workdir, "held_port")
    plan = os.path.join(out, "plan.json")  # what accelrun hands its workers
    job = subprocess.Popen([accelrun, spec, "--output-dir", out, "--set", "train.steps=20"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           env={k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "OMPI_", "PMI"))})
    port = None
    deadline = time.time() + 60
    while port is None and job.poll() is None and time.time() < deadline:
        port = workers_master_port(plan)
    assert port is not None, "no worker of the job appeared"
    taker = socket.socket()
    try:
        taker.bind(("127.0.0.1", port))
        taker.listen()
        taken = True
    except OSError:
        taken = False
    output = job.communicate(timeout=200)[0]
    taker.close()
    sys.stdout.write(output)
    assert not taken, f"another process took port {port}, which the launcher picked, before rank 0 served it"
    assert job.returncode == 0, f"the job failed:\n{output}"
    print(f"port {port}, picked by the launcher, could not be taken before rank 0 served it; the job trained")


def srun_task(job, task, port):
    """The variables real `srun -n2` gives task `task` of job `job` on one node."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "OMPI_", "PMI", "MASTER_"))}
    env.update({"SLURM_JOB_ID": str(job), "SLURM_STEP_ID": "0", "SLURM_PROCID": str(task), "SLURM_NTASKS": "2",
                "SLURM_LOCALID": str(task), "SLURM_NODEID": "0", "SLURM_NNODES": "1",
                "SLURM_TASKS_PER_NODE": "2", "SLURM_STEP_TASKS_PER_NODE": "2",
                "SLURM_STEP_NODELIST": "localhost", "MASTER_PORT": str(port)})
    return env


def main():
    accelrun, spec, workdir = sys.argv[1:4]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    port = free_port()
    job_out = os.path.join(workdir, "job12")

    def start(job, task, out):
        return subprocess.Popen([accelrun, spec, "--output-dir", out], env=srun_task(job, task, port),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    rank0 = start(12, 0, job_out)
    time.sleep(0.5)  # the store is up; the stray rank knocks before job 12's rank 1
    stray = start(11, 1, os.path.join(workdir, "job11"))
    stray_text, _ = stray.communicate(timeout=120)
    rank1 = start(12, 1, job_out)
    outputs = [p.communicate(timeout=200)[0] for p in (rank0, rank1)]

    sys.stdout.write(stray_text)
    assert stray.returncode != 0, "the rank of job 11 was let into job 12"
    assert ("belongs to launch slurm-12.0, and this rank to launch slurm-11.0" in stray_text), stray_text
    assert "done" not in stray_text, stray_text
    for p, text in zip((rank0, rank1), outputs):
        assert p.returncode == 0, f"job 12 failed:\n{text}"
    assert os.path.exists(os.path.join(job_out, "model.safetensors")), "job 12 saved no model"
    print("the stray rank was refused; job 12 trained on its own ranks")

    shared = os.path.join(workdir, "shared")
    first = subprocess.Popen([accelrun, spec, "--output-dir", shared], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True,
                             env={k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "OMPI_", "PMI"))})
    first_lines = []
    for line in first.stdout:  # until its workers run, so it surely holds the directory
        first_lines.append(line)
        if "joins" in line:
            break
    second = subprocess.run([accelrun, spec, "--output-dir", shared], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, timeout=60)
    first_lines.append(first.communicate(timeout=200)[0])
    first_text = "".join(first_lines)
    sys.stdout.write(second.stdout)
    assert second.returncode != 0, f"a second job wrote into a directory in use:\n{second.stdout}"
    assert f"is in use by another job (accelrun pid {first.pid} on " in second.stdout, second.stdout
    assert "worker rank" not in second.stdout, "the refused job started workers"
    assert first.returncode == 0, f"the first job failed:\n{first_text}"
    print("the second job on one output directory was refused, naming the first")

    held_port(accelrun, spec, workdir)


if __name__ == "__main__":
    main()
