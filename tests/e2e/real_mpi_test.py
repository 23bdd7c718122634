#!/usr/bin/env python3
"""accelrun under a real MPI launcher, two tasks on this machine: `mpirun -np 2` of OpenMPI
(`mpirun.openmpi`) or `mpiexec.hydra -n 2` of MPICH. Each task's launcher reads the placement the
MPI launcher gave it (OMPI_COMM_WORLD_*, or PMI_* and MPI_LOCAL*), starts one worker, and the job
trains on 2 ranks with weights bit-identical to a local 2-process `accelrun` run; only rank 0's
launcher prints the job's lines.

Exits 77 (ctest: skipped) when the MPI launcher is not installed or cannot start two tasks here.

Usage: real_mpi_test.py openmpi|mpich ACCELC ACCELRUN SPEC WORKDIR
"""
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from e2e_support import assert_trained_like, check_one_voice, free_port, run, scheduler_free_env, skip  # noqa: E402

STEPS = 40


def launcher(flavor):
    """The MPI launcher's argv prefix for 2 tasks, the placement accelrun must report, and the
    Debian package. Both packages install an `mpirun` alternative: call each by its own name."""
    if flavor == "openmpi":
        argv = ["mpirun.openmpi", "-np", "2", "--oversubscribe"]
        # OpenMPI refuses root unless told; a container's tests often run as root.
        if os.geteuid() == 0:
            argv.append("--allow-run-as-root")
        return argv, "OpenMPI", "openmpi-bin"
    if flavor == "mpich":
        return ["mpiexec.hydra", "-n", "2"], "MPI (PMI)", "mpich"
    raise SystemExit(f"unknown MPI flavor `{flavor}`; expected openmpi or mpich")


def run_launcher(argv, env, timeout):
    """Runs an MPI launcher in a process group of its own; past `timeout` seconds the whole group
    (launcher and the tasks it forked) is killed, and the output so far is returned with code
    None."""
    process = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout)
        return process.returncode, output
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        return None, output


def main():
    flavor, accelc, accelrun, spec, workdir = sys.argv[1:6]
    prefix, scheduler, package = launcher(flavor)
    if shutil.which(prefix[0]) is None:
        skip(f"{prefix[0]} not installed (Debian: {package}; scripts/setup.sh)")
    accelc, accelrun, workdir = map(os.path.abspath, (accelc, accelrun, workdir))
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    started = time.monotonic()
    env = scheduler_free_env()

    # Whether this machine can run two MPI tasks at all, apart from accelrun.
    code, output = run_launcher(prefix + ["true"], env, timeout=60)
    if code is None:
        skip(f"`{' '.join(prefix)} true` did not end within 60 s")
    if code != 0:
        skip(f"`{' '.join(prefix)} true` exited {code}: {output.strip()[-500:]}")

    plan = os.path.join(workdir, "plan.json")
    run([accelc, "build", spec, "--set", f"train.steps={STEPS}", "-o", plan])
    reference = os.path.join(workdir, "local")
    run([accelrun, plan, "--output-dir", reference], env=env, timeout=120)

    out = os.path.join(workdir, flavor)
    # A port of its own: the plan's fixed one may be held by another test.
    code, output = run_launcher(prefix + [accelrun, plan, "--output-dir", out, "--master-port", str(free_port())],
                                env, timeout=120)
    sys.stdout.write(output)
    name = " ".join(prefix[:3])
    assert code is not None, f"{name}: did not end within 120 s"
    assert code == 0, f"{name}: exited {code}"
    assert_trained_like(reference, out, name)
    check_one_voice(name, scheduler, output)
    print(f"{name}: passed in {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    main()
