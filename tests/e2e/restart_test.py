#!/usr/bin/env python3
"""Elastic restarts (`accelrun --max-restarts N`), 2 processes, checkpoints every few steps:

1. With `--max-restarts 2`, a worker SIGKILLed twice (rank 1 after one checkpoint, rank 0 after
   a later one): the launcher names each failure, restarts on a new port with a new launch id,
   each attempt resumes from a checkpoint (never from step 1), the job exits 0, and
   model.safetensors is bit-identical to a run that was never killed.
2. With `--max-restarts 1`, the same two kills: the job fails (exit 1) naming the second
   killed worker, after one restart.
3. With restarts left, the user's SIGTERM to the launcher stops the job for good: exit 143,
   no restart.
4. Under a simulated srun (one launcher per task) and a simulated mpirun, `--max-restarts 1` is
   refused before anything starts, pointing at `sbatch --requeue` for Slurm.
No worker outlives its launcher; every wait has a timeout.

Usage: restart_test.py ACCELRUN WORKDIR
"""
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from e2e_support import scheduler_free_env, worker_ranks  # noqa: E402

STEPS = 600
EVERY = 20
SPEC = """job restart {{
  compute {{
    distributed_type = MULTI_CPU
    num_processes = 2
  }}
  accelerator {{
    seed = 42
    init_process_group {{ timeout = 30s }}
    project_config {{ project_dir = "{root}/project"; automatic_checkpoint_naming = true; total_limit = 3 }}
  }}
  model = MLP {{ inputs = 16; hidden = [384, 384]; outputs = 4 }}
  data = SyntheticRegression {{ samples = 600; features = 16; batch_size = 16; seed = 7 }}
  train {{
    steps = {steps}
    optimizer = AdamW {{ lr = 0.001 }}
    log_every = 100
    checkpoint_every = {every}
  }}
  output {{ dir = "{root}/out" }}
}}
"""
# Every wait of one run comes out of this, well below ctest's TIMEOUT.
RUN_TIMEOUT_S = 150


def write_spec(root):
    os.makedirs(root)
    spec = os.path.join(root, "job.accel")
    with open(spec, "w") as f:
        f.write(SPEC.format(root=root, steps=STEPS, every=EVERY))
    return spec


class Run:
    """One accelrun, its merged output read line by line on a thread so that no read blocks."""

    def __init__(self, argv, env=None):
        self.process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                        env=env)
        self.lines = []
        self.queue = queue.Queue()
        self.deadline = time.monotonic() + RUN_TIMEOUT_S
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            self.queue.put((time.monotonic(), line))
        self.queue.put((time.monotonic(), None))

    def wait_for(self, pattern, accept=lambda found: True):
        """Reads up to the first line matching `pattern` that `accept`s; returns (match, time it
        arrived)."""
        while True:
            remaining = self.deadline - time.monotonic()
            try:
                arrived, line = self.queue.get(timeout=max(remaining, 0.01))
            except queue.Empty:
                self.kill()
                raise AssertionError(f"no line matching `{pattern}` within {RUN_TIMEOUT_S} s:\n" + self.text())
            if line is None:
                raise AssertionError(f"accelrun ended before a line matching `{pattern}`:\n" + self.text())
            self.lines.append(line)
            found = re.search(pattern, line)
            if found and accept(found):
                return found, arrived

    def finish(self):
        """Waits for the exit; returns (exit code, whole output)."""
        try:
            code = self.process.wait(timeout=max(self.deadline - time.monotonic(), 1))
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError("accelrun did not end in time:\n" + self.text())
        while True:
            _, line = self.queue.get(timeout=10)
            if line is None:
                break
            self.lines.append(line)
        return code, self.text()

    def kill(self):
        # The workers die with the launcher (PR_SET_PDEATHSIG).
        self.process.kill()
        self.process.wait(timeout=30)

    def text(self):
        return "".join(self.lines)


def kill_after_checkpoint(run, plan, rank, min_step):
    """SIGKILLs `rank` once a checkpoint at `min_step` or later is saved; returns (pid, kill time)."""
    run.wait_for(r"^checkpoint \S+ saved at step (\d+)", lambda found: int(found.group(1)) >= min_step)
    ranks = worker_ranks(plan)
    assert rank in ranks, f"rank {rank} is not running: {ranks}\n" + run.text()
    os.kill(ranks[rank], signal.SIGKILL)
    return ranks[rank], time.monotonic()


def killed_twice(accelrun, root, max_restarts):
    """Runs the job with `--max-restarts`, kills rank 1 after the checkpoint at step 60 and rank 0
    after one at step 200 or later of the next attempt. Returns (exit code, output, pids, resumes),
    where resumes holds (seconds from the kill to the resume line, step resumed at)."""
    spec = write_spec(root)
    plan = os.path.join(root, "out", "plan.json")
    run = Run([accelrun, spec, "--max-restarts", str(max_restarts)], env=scheduler_free_env())
    pids, resumes = [], []
    try:
        for attempt, (rank, step) in enumerate([(1, 60), (0, 200)]):
            pid, killed_at = kill_after_checkpoint(run, plan, rank, step)
            pids.append(pid)
            if attempt + 1 > max_restarts:
                break
            found, arrived = run.wait_for(r"^resumed from \S+/checkpoint_\d+ at step (\d+)")
            resumes.append((arrived - killed_at, int(found.group(1))))
        code, text = run.finish()
    finally:
        if run.process.poll() is None:
            run.kill()
    sys.stdout.write(text)
    assert worker_ranks(plan) == {}, "a worker outlived the launcher"
    return code, text, pids, resumes


def main():
    accelrun, workdir = sys.argv[1:3]
    accelrun, workdir = os.path.abspath(accelrun), os.path.abspath(workdir)
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    started = time.monotonic()

    straight = os.path.join(workdir, "straight")
    spec = write_spec(straight)
    done = subprocess.run([accelrun, spec], capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                          env=scheduler_free_env())
    assert done.returncode == 0, done.stdout + done.stderr
    with open(os.path.join(straight, "out", "model.safetensors"), "rb") as f:
        reference = f.read()

    # 1. Two kills, two restarts allowed: the job ends as if it had never been killed.
    code, text, pids, resumes = killed_twice(accelrun, os.path.join(workdir, "restarted"), 2)
    assert code == 0, f"accelrun exited {code} with restarts left"
    for restart, (rank, pid) in enumerate(zip((1, 0), pids), start=1):
        assert re.search(rf"^accelrun: restart {restart} of 2 after rank {rank} \(pid {pid}\) was killed by signal 9; "
                         r"resuming from the newest complete checkpoint \(where it began, if it wrote none\) in \d+\.\d s$", text, re.M), \
            f"restart {restart} (rank {rank}, pid {pid}) is not announced"
        assert re.search(rf"^accelrun: attempt {restart} of 3 failed: rank {rank} \(pid {pid}\) failed with "
                         r"signal 9 \(Killed\)", text, re.M), f"attempt {restart}'s failure is not reported"
    # Each restart resumed from a checkpoint taken after the one that triggered the kill, so the
    # work before it was kept: a restart from step 1 would say `starting at step 1`.
    assert [step >= low for (_, step), low in zip(resumes, (60, 200))] == [True, True], resumes
    assert "no checkpoint to resume from" not in text, "a restart started over"
    # A new rendezvous per attempt: its own port and launch id.
    rendezvous = re.findall(r"rendezvous 127\.0\.0\.1:(\d+) \([^)]*\), launch (\S+?)[ ,;\n]", text)
    assert len(rendezvous) == 3, f"expected 3 rendezvous lines, found {rendezvous}"
    assert len({port for port, _ in rendezvous}) == 3 and len({id for _, id in rendezvous}) == 3, rendezvous
    with open(os.path.join(workdir, "restarted", "out", "model.safetensors"), "rb") as f:
        assert f.read() == reference, "weights after two restarts differ from the uninterrupted run's"
    assert re.search(r"^accelrun: done in", text, re.M), "no done line"
    for (seconds, step) in resumes:
        print(f"restart: resumed at step {step} {seconds:.2f} s after the kill")
    print("two kills, --max-restarts 2: exit 0, model.safetensors bit-identical to the uninterrupted run")

    # 2. Two kills, one restart allowed: the second failure stands, named.
    code, text, pids, _ = killed_twice(accelrun, os.path.join(workdir, "exhausted"), 1)
    assert code == 1, f"accelrun exited {code} after its restarts ran out"
    assert re.search(rf"^accelrun: restart 1 of 1 after rank 1 \(pid {pids[0]}\) was killed by signal 9", text, re.M)
    # Its peer, whose collective failed, is stopped, or exits on its own first (then it follows,
    # as a consequence).
    assert re.search(rf"^accelrun: error: rank 0 \(pid {pids[1]}\) failed with signal 9 \(Killed\); "
                     r"stopped (1 other worker|0 other workers\nthen rank 1 \(pid \d+\) failed with exit code 3 "
                     r"\(peer failure: a collective or the rendezvous failed\), a consequence)", text, re.M), \
        "the second failure is not the one named"
    assert "no restart left: the job failed 2 times, after 1 restart" in text, "the restarts are not counted"
    assert "restart 2 of" not in text
    print(f"two kills, --max-restarts 1: exit 1 naming rank 0 (pid {pids[1]}), the second failure")

    # 3. Stopped by the user: an interruption, not a failure to restart.
    root = os.path.join(workdir, "stopped")
    spec = write_spec(root)
    run = Run([accelrun, spec, "--max-restarts", "2"], env=scheduler_free_env())
    try:
        run.wait_for(r"^checkpoint \S+ saved at step")
        run.process.send_signal(signal.SIGTERM)
        code, text = run.finish()
    finally:
        if run.process.poll() is None:
            run.kill()
    sys.stdout.write(text)
    assert code == 128 + signal.SIGTERM, f"accelrun exited {code} after SIGTERM"
    assert "accelrun: error: interrupted; stopped 2 workers" in text, "the stop is not reported"
    assert "accelrun: restart" not in text and "attempt 1 of" not in text, "a stop by the user was restarted"
    assert worker_ranks(os.path.join(root, "out", "plan.json")) == {}, "a worker outlived the launcher"
    print("SIGTERM with restarts left: exit 143, nothing restarted")

    # 4. One launcher per task: refused before anything is written or started.
    simulated = {
        "srun": ({"SLURM_JOB_ID": "1", "SLURM_STEP_ID": "0", "SLURM_PROCID": "0", "SLURM_NTASKS": "2",
                  "SLURM_LOCALID": "0", "SLURM_NODEID": "0", "SLURM_NNODES": "1", "SLURM_TASKS_PER_NODE": "2",
                  "SLURM_STEP_NODELIST": "localhost"}, "sbatch --requeue"),
        "mpirun": ({"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_RANK": "0",
                    "OMPI_COMM_WORLD_LOCAL_SIZE": "2"}, "under OpenMPI"),
    }
    for name, (variables, hint) in simulated.items():
        root = os.path.join(workdir, name)
        spec = write_spec(root)
        env = scheduler_free_env()
        env.update(variables)
        done = subprocess.run([accelrun, spec, "--max-restarts", "1"], capture_output=True, text=True, timeout=60,
                              env=env)
        assert done.returncode == 2, f"{name}: accelrun exited {done.returncode}:\n{done.stdout}{done.stderr}"
        assert "accelrun: error: `--max-restarts` cannot work under" in done.stderr and hint in done.stderr, \
            done.stderr
        assert not os.path.exists(os.path.join(root, "out")), f"{name}: something was written before the refusal"
        print(f"{name}: --max-restarts refused: {done.stderr.strip()}")

    # 5. A mistyped `--resume PATH` with restarts left: refused before anything starts (exit 2),
    # never restarted into another checkpoint.
    root = os.path.join(workdir, "mistyped")
    spec = write_spec(root)
    done = subprocess.run([accelrun, spec, "--resume", os.path.join(root, "chekpoint_3"), "--max-restarts", "1"],
                          capture_output=True, text=True, timeout=60, env=scheduler_free_env())
    assert done.returncode == 2, f"mistyped --resume: exit {done.returncode}:\n{done.stdout}{done.stderr}"
    assert "no such checkpoint folder; name a `checkpoint_N` folder" in done.stderr, done.stderr
    assert "accelrun: restart" not in done.stdout + done.stderr and not os.path.exists(os.path.join(root, "out")), done.stdout
    print(f"mistyped --resume: {done.stderr.strip()}")
    print(f"e2e restart: passed in {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    main()
