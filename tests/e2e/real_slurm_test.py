#!/usr/bin/env python3
"""accelrun under a real Slurm: the test starts a one-node cluster of its own (munged, slurmctld,
slurmd; tests/e2e/slurm_cluster.py), runs the quickstart through it, and stops every daemon.

1. `srun -N1 -n2 accelrun plan.json`;
2. `sbatch` of a script that runs `srun accelrun plan.json`;
3. `salloc -n2` then `srun accelrun plan.json`;
4. two 2-task `sbatch` jobs at once on the one node, each on the plan's unset port: each derives
   its own port from its job id, and each trains in its own world (they once met at 29500, and a
   rank of one trained inside the other);
each trains on 2 ranks with weights bit-identical to a local 2-process `accelrun` run, and only
rank 0's launcher prints the job's lines. Then, with `--dry-run`:
5. `srun -n1` inside `salloc --ntasks-per-node=2`: the step's one task per node wins over the
   allocation's two (LOCAL_WORLD_SIZE=1);
6. `srun -n1 -c2`: SLURM_CPUS_PER_TASK sets the worker's threads.
Last, 7. the script `accelc export --to sbatch` writes for the spec, submitted as written: it
trains on the spec's world size in its own working directory, bit-identical to the local run.

Exits 77 (ctest: skipped) when the machine cannot host the cluster: packages missing, not root,
or the daemons do not start.

Usage: real_slurm_test.py ACCELC ACCELRUN SPEC WORKDIR
"""
import os
import re
import shutil
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from e2e_support import assert_trained_like, check_one_voice, run, scheduler_free_env, skip  # noqa: E402
from slurm_cluster import SlurmCluster, Unavailable, free_port  # noqa: E402

# Enough steps for the weights to depend on every rank's gradients; few enough for a 2-core
# machine to run five jobs in well under a minute.
STEPS = 40
# Every wait of the test comes out of this budget, below ctest's TIMEOUT (180 s): a hung job fails
# the test by itself, which then stops the cluster, instead of ctest killing it.
BUDGET_S = 200


def main():
    accelc, accelrun, spec, workdir = sys.argv[1:5]
    # Stopped from outside (Ctrl-C is KeyboardInterrupt already): still stop the daemons.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    accelc, accelrun, workdir = map(os.path.abspath, (accelc, accelrun, workdir))
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    started = time.monotonic()

    def left():
        remaining = BUDGET_S - (time.monotonic() - started)
        assert remaining > 1, f"the test ran past its budget of {BUDGET_S} s"
        return remaining

    cluster = SlurmCluster(cpus=4)  # two 2-task jobs at once; Slurm does not check the real count
    try:
        cluster.start()
    except Unavailable as why:
        cluster.stop()
        cluster.remove()
        skip(f"no one-node Slurm cluster on this machine: {why}")
    passed = False
    try:
        print(f"cluster up in {time.monotonic() - started:.1f} s")
        plan = os.path.join(workdir, "plan.json")
        run([accelc, "build", spec, "--set", f"train.steps={STEPS}", "-o", plan], timeout=left())
        reference = os.path.join(workdir, "local")
        run([accelrun, plan, "--output-dir", reference], env=scheduler_free_env(), timeout=left())

        # srun passes the environment on: MASTER_PORT keeps the rendezvous off the plan's fixed
        # port, which another test may hold.
        out = os.path.join(workdir, "srun")
        result = cluster.run(["srun", "-N1", "-n2", accelrun, plan, "--output-dir", out],
                             env={"MASTER_PORT": str(free_port())}, cwd=workdir, timeout=left())
        assert_trained_like(reference, out, "srun -N1 -n2")
        check_one_voice("srun -N1 -n2", "Slurm", result.stdout)

        out = os.path.join(workdir, "sbatch")
        script = os.path.join(workdir, "job.sh")
        with open(script, "w") as f:
            f.write(f"#!/bin/sh\n#SBATCH -N1 -n2 -o {out}.log\nexec srun {accelrun} {plan} --output-dir {out}\n")
        result = cluster.run(["sbatch", "--parsable", script], env={"MASTER_PORT": str(free_port())}, cwd=workdir, timeout=left())
        job_id = result.stdout.strip().split(";")[0]
        state, exit_code = cluster.wait_job(job_id, timeout=left())
        with open(f"{out}.log") as f:
            log = f.read()
        sys.stdout.write(log)
        assert (state, exit_code) == ("COMPLETED", "0:0"), f"sbatch: job {job_id} ended {state} {exit_code}"
        assert_trained_like(reference, out, "sbatch + srun")
        check_one_voice("sbatch + srun", "Slurm", log)

        # No MASTER_PORT: each job's port comes from its own job id, not the plan's 29500.
        jobs = {}
        for name in ("concurrent_a", "concurrent_b"):
            out = os.path.join(workdir, name)
            script = os.path.join(workdir, f"{name}.sh")
            with open(script, "w") as f:
                f.write(f"#!/bin/sh\n#SBATCH -N1 -n2 -o {out}.log\nexec srun {accelrun} {plan} --output-dir {out}\n")
            result = cluster.run(["sbatch", "--parsable", script], cwd=workdir, timeout=left())
            jobs[name] = result.stdout.strip().split(";")[0]
        ports = set()
        for name, job_id in jobs.items():
            state, exit_code = cluster.wait_job(job_id, timeout=left())
            with open(os.path.join(workdir, f"{name}.log")) as f:
                log = f.read()
            sys.stdout.write(log)
            assert (state, exit_code) == ("COMPLETED", "0:0"), f"{name}: job {job_id} ended {state} {exit_code}"
            assert_trained_like(reference, os.path.join(workdir, name), name)
            found = re.search(r"rendezvous [^:\s]+:(\d+) \([^)]*port from the launch id\), launch "
                              rf"slurm-{job_id}\.0 ", log)
            assert found, f"{name}: the port is not derived from job {job_id}"
            ports.add(found.group(1))
        assert len(ports) == 2, f"both jobs met at port {ports}"
        (start_a, end_a), (start_b, end_b) = (cluster.job_times(j) for j in jobs.values())
        assert start_b < end_a and start_a < end_b, f"the jobs did not overlap: {start_a}-{end_a}, {start_b}-{end_b}"
        print(f"two concurrent jobs on one node: ports {sorted(ports)}, each trained in its own world")

        out = os.path.join(workdir, "salloc")
        result = cluster.run(["salloc", "-n2", "srun", accelrun, plan, "--output-dir", out],
                             env={"MASTER_PORT": str(free_port())}, cwd=workdir, timeout=left())
        assert_trained_like(reference, out, "salloc -n2 + srun")
        check_one_voice("salloc -n2 + srun", "Slurm", result.stdout)

        # The step inherits SLURM_NTASKS_PER_NODE=2 from the allocation; its own count is 1.
        result = cluster.run(["salloc", "-N1", "--ntasks-per-node=2", "srun", "-n1", accelrun, plan, "--dry-run"],
                             cwd=workdir, timeout=left())
        assert "launched by Slurm: rank 0 of 1 (local rank 0 of 1, node 0 of 1)" in result.stdout, result.stdout
        assert re.search(r"^  env: LOCAL_WORLD_SIZE=1$", result.stdout, re.M), "srun -n1: LOCAL_WORLD_SIZE is not 1"
        assert re.search(r"^  env: WORLD_SIZE=1$", result.stdout, re.M), "srun -n1: WORLD_SIZE is not 1"
        print("srun -n1 in --ntasks-per-node=2: LOCAL_WORLD_SIZE=1")

        result = cluster.run(["srun", "-n1", "-c2", accelrun, plan, "--dry-run"], cwd=workdir, timeout=left())
        assert "; 2 threads per worker (SLURM_CPUS_PER_TASK)" in result.stdout, result.stdout
        assert re.search(r"^  env: OMP_NUM_THREADS=2$", result.stdout, re.M), "srun -c2: OMP_NUM_THREADS is not 2"
        print("srun -n1 -c2: 2 threads per worker from SLURM_CPUS_PER_TASK")

        # The exported script as a user would submit it: no environment from the test but the
        # cluster's, the plan compiled at export time, paths resolved in the export's directory.
        exported = os.path.join(workdir, "exported")
        os.makedirs(exported)
        script = os.path.join(exported, "job.sbatch")
        run([accelc, "export", "--to", "sbatch", os.path.abspath(spec), "--set", f"train.steps={STEPS}", "-o", script],
            cwd=exported, timeout=left())
        with open(script) as f:
            text = f.read()
        assert "#SBATCH --nodes=1\n#SBATCH --ntasks-per-node=2\n" in text, text
        result = cluster.run(["sbatch", "--parsable", script], cwd=workdir, timeout=left())
        job_id = result.stdout.strip().split(";")[0]
        state, exit_code = cluster.wait_job(job_id, timeout=left())
        log_path = os.path.join(exported, f"quickstart-{job_id}.out")
        with open(log_path) as f:
            log = f.read()
        sys.stdout.write(log)
        assert (state, exit_code) == ("COMPLETED", "0:0"), f"exported sbatch: job {job_id} ended {state} {exit_code}"
        # The spec's relative output directory, under the directory the script was exported in.
        assert_trained_like(reference, os.path.join(exported, "runs", "quickstart"), "exported sbatch", world_size=2)
        check_one_voice("exported sbatch", "Slurm", log)
        assert f"launch slurm-{job_id}.0 " in log, "the exported job did not run as one Slurm step"
        print(f"accelc export --to sbatch: job {job_id} trained on the spec's 2 processes")
        passed = True
    finally:
        cluster.stop()
        # A failed run keeps the daemons' logs for a look.
        if passed:
            cluster.remove()
        else:
            print(f"Slurm's configuration and logs: {cluster.dir}")
    print(f"real Slurm: all jobs passed in {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    main()
