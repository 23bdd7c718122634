#!/usr/bin/env python3
"""Real training with the placements a cluster gives, all on this machine: two accelrun
processes per job, one per "node" or task, each starting one worker.

1. by hand: --nnodes 2 --node-rank 0|1 --nproc-per-node 1 --master-addr --master-port;
2. srun, simulated: SLURM_PROCID 0|1 of SLURM_NTASKS 2, rendezvous at the node list's first host;
3. mpirun (OpenMPI), simulated: OMPI_COMM_WORLD_RANK 0|1 of 2 on one node.

Each job must train to the end on world size 2 with the same weights, and each launcher must
say how it was placed.

Usage: launch_schedulers_test.py ACCELRUN SPEC WORKDIR
"""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from e2e_support import free_port  # noqa: E402


def clean_env():
    """This process's environment without any scheduler's variables."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("SLURM_", "OMPI_", "PMI_", "MV2_", "MASTER_"))}


def run_pair(name, out, commands_and_envs):
    """Starts both launchers at once; returns their outputs after both succeed."""
    runs = [subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for argv, env in commands_and_envs]
    outputs = []
    for run in runs:
        text, _ = run.communicate(timeout=200)
        outputs.append(text)
    for run, text in zip(runs, outputs):
        sys.stdout.write(text)
        assert run.returncode == 0, f"{name}: a launcher exited {run.returncode}"
    with open(os.path.join(out, "metrics.json")) as f:
        metrics = json.load(f)
    assert metrics["world_size"] == 2, f"{name}: {metrics}"
    for rank in (0, 1):
        assert os.path.exists(os.path.join(out, "ranks", f"rank-{rank}.json")), f"{name}: rank {rank} missing"
    print(f"{name}: trained on 2 ranks")
    return outputs


def assert_one_voice(name, outputs, marks):
    """Rank 0's launcher says which job and that it is done; the other launcher marks every line it
    prints, its worker's included, with `marks` and says neither."""
    assert "accelrun: job `quickstart`" in outputs[0] and "accelrun: done in" in outputs[0], f"{name}: {outputs[0]}"
    lines = outputs[1].splitlines()
    assert lines and all(line.startswith(marks) for line in lines), f"{name}: unmarked lines:\n{outputs[1]}"
    assert "accelrun: job" not in outputs[1] and "accelrun: done" not in outputs[1], f"{name}: {outputs[1]}"


def main():
    accelrun, spec, workdir = sys.argv[1:4]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)

    out = os.path.join(workdir, "manual")
    port = free_port()
    pair = [([accelrun, spec, "--output-dir", out, "--nnodes", "2", "--node-rank", str(node), "--nproc-per-node",
              "1", "--master-addr", "127.0.0.1", "--master-port", str(port)], clean_env()) for node in (0, 1)]
    outputs = run_pair("by hand", out, pair)
    assert "local launch: 1 process on this machine (node 1 of 2), world size 2" in outputs[1], outputs[1]
    assert_one_voice("by hand", outputs, "[rank 1] ")

    out = os.path.join(workdir, "slurm")
    port = free_port()
    pair = []
    for task in (0, 1):
        env = clean_env()
        env.update({"SLURM_JOB_ID": "1", "SLURM_STEP_ID": "0", "SLURM_PROCID": str(task), "SLURM_NTASKS": "2",
                    "SLURM_LOCALID": str(task), "SLURM_NODEID": "0", "SLURM_NNODES": "1",
                    "SLURM_TASKS_PER_NODE": "2", "SLURM_STEP_NODELIST": "localhost", "MASTER_PORT": str(port)})
        pair.append(([accelrun, spec, "--output-dir", out], env))
    outputs = run_pair("srun", out, pair)
    assert (f"launched by Slurm: rank 1 of 2 (local rank 1 of 2, node 0 of 1); rendezvous localhost:{port} "
            "(address from the first node of SLURM_STEP_NODELIST, port from MASTER_PORT)") in outputs[1], outputs[1]
    assert_one_voice("srun", outputs, "[rank 1] ")

    out = os.path.join(workdir, "mpi")
    port = free_port()
    pair = []
    for rank in (0, 1):
        env = clean_env()
        env.update({"OMPI_COMM_WORLD_RANK": str(rank), "OMPI_COMM_WORLD_SIZE": "2",
                    "OMPI_COMM_WORLD_LOCAL_RANK": str(rank), "OMPI_COMM_WORLD_LOCAL_SIZE": "2"})
        pair.append(([accelrun, spec, "--output-dir", out, "--master-port", str(port)], env))
    outputs = run_pair("mpirun", out, pair)
    assert ("launched by OpenMPI: rank 0 of 2 (local rank 0 of 2, node 0 of 1); rendezvous 127.0.0.1:"
            f"{port} (address from all tasks on one node, port from --master-port)") in outputs[0], outputs[0]
    assert_one_voice("mpirun", outputs, "[rank 1] ")

    # Same plan, same world size: the placement must not change a single bit of the result.
    models = []
    for name in ("manual", "slurm", "mpi"):
        with open(os.path.join(workdir, name, "model.safetensors"), "rb") as f:
            models.append(f.read())
    assert models[0] == models[1] == models[2], "the three placements trained different weights"
    print("all placements: bit-identical weights")


if __name__ == "__main__":
    main()
