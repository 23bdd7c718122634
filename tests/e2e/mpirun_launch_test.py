#!/usr/bin/env python3
"""A MULTI_CPU job with `mpirun_config.mpirun_hostfile` (the published 0_28_0_mpi.yaml, imported
as tests/corpus/build_published.sh does) started as `accelerate launch` starts it: `accelrun
plan.json` runs mpirun with the host file, the processes per machine and in all, and each task
runs accelrun again, which finds its rank in MPI's variables and runs one worker.

  * with a fake `mpirun` on PATH (fake_mpirun.py: it records its arguments and starts the tasks
    here with Open MPI's or Intel MPI's variables), the exact command line for each flavour, as
    a dry run on the config's 4 machines x 4 processes and as a run of 2 machines x 1 process
    that saves a valid model.safetensors;
  * without mpirun or mpiexec on PATH: a clear error, exit 2;
  * with the real Open MPI and MPICH (scripts/setup.sh installs both), on this machine: 2 tasks
    train and save. A real one that is missing is reported as not run.

Usage: mpirun_launch_test.py ACCELC ACCELRUN CONFIG WORKDIR
"""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from e2e_support import free_port, read_safetensors, scheduler_free_env  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def sh(command, cwd, env, timeout=180):
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    return result, result.stdout + result.stderr


def build(accelc, cwd, env, plan, machines, processes, hostfile):
    result, output = sh([accelc, "build", "mpi.accel", "-o", plan, "--set", "train.steps=2",
                         "--set", f"compute.num_machines={machines}", "--set", f"compute.num_processes={processes}",
                         "--set", f"compute.main_process_port={free_port()}",
                         "--set", f'compute.mpirun_config.mpirun_hostfile="{hostfile}"'], cwd, env)
    assert result.returncode == 0, output


def bin_dir(workdir, name, target):
    """A folder holding only `mpirun`, a script that runs `target` (not a link: Hydra looks for its
    proxy beside the path it was started as)."""
    folder = os.path.join(workdir, name)
    os.makedirs(folder, exist_ok=True)
    script = os.path.join(folder, "mpirun")
    with open(script, "w") as f:
        f.write(f'#!/bin/sh\nexec {target} "$@"\n')
    os.chmod(script, 0o755)
    return folder


def check_trained(name, result, output, out_dir, scheduler):
    assert result.returncode == 0, f"{name}: exit {result.returncode}:\n{output[-3000:]}"
    assert f"accelrun: launched by {scheduler}: rank 0 of 2" in output, f"{name}: no MPI placement:\n{output}"
    assert output.count("accelrun: job `") == 2, f"{name}: expected the mpirun line and one job line:\n{output}"
    with open(os.path.join(out_dir, "metrics.json")) as f:
        assert json.load(f)["world_size"] == 2, f"{name}: not trained on 2 ranks"
    tensors = read_safetensors(os.path.join(out_dir, "model.safetensors"))
    assert tensors, f"{name}: no tensor saved"
    print(f"{name}: 2 tasks trained and saved {len(tensors)} tensors")


def main():
    accelc, accelrun, config, workdir = (os.path.abspath(a) for a in sys.argv[1:5])
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    shutil.copy(config, os.path.join(workdir, "mpi.yaml"))
    env = scheduler_free_env()
    env["NO_COLOR"] = "1"
    result, output = sh([accelc, "import", "mpi.yaml", "-o", "mpi.accel"], workdir, env)
    assert result.returncode == 0, output
    result, output = sh([accelc, "build", "mpi.accel", "-o", "mpi.plan.json"], workdir, env)
    assert result.returncode == 0, output
    with open(os.path.join(workdir, "mpi.plan.json")) as f:
        init = next(s for s in json.load(f)["steps"] if s["op"] == "init_process_group")
    assert init["mpirun_hostfile"] == "/home/user/hostfile", init
    assert (init["num_machines"], init["processes_per_machine"]) == (4, 4), init

    fake = bin_dir(workdir, "fake-bin", os.path.join(HERE, "fake_mpirun.py"))
    log = os.path.join(workdir, "mpirun.log")
    fake_env = dict(env, PATH=fake + os.pathsep + env["PATH"], FAKE_MPIRUN_LOG=log)
    flavours = {"openmpi": (["--hostfile", "{hosts}", "--npernode", "{ppn}", "-n", "{n}", "--bind-to", "socket"],
                            "OpenMPI", "Open MPI"),
                "hydra": (["-f", "{hosts}", "-ppn", "{ppn}", "-n", "{n}"], "MPI (PMI)", "Intel MPI/MPICH")}
    for flavour, (flags, scheduler, name) in flavours.items():
        flavour_env = dict(fake_env, FAKE_MPI_FLAVOR=flavour)
        # The config's own placement, as a dry run: what accelerate launch would start.
        result, output = sh([accelrun, "mpi.plan.json", "--dry-run"], workdir, flavour_env)
        assert result.returncode == 0, output
        expected = " ".join([os.path.join(fake, "mpirun")] + [f.format(hosts="/home/user/hostfile", ppn=4, n=16)
                                                              for f in flags])
        assert f"accelrun: MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 {expected} " in output, \
            f"{flavour}: dry run:\n{output}"
        assert f"starting it through mpirun ({name})" in output and "4 machines x 4 processes" in output, output
        assert not os.path.exists(log), f"{flavour}: a dry run started mpirun"

        # Two machines of one process, run: the tasks train together.
        hosts = os.path.join(workdir, "hosts")
        with open(hosts, "w") as f:
            f.write("localhost\n")
        build(accelc, workdir, env, "small.plan.json", 2, 2, "hosts")
        out_dir = os.path.join(workdir, f"out-{flavour}")
        result, output = sh([accelrun, "small.plan.json", "--output-dir", out_dir], workdir, flavour_env)
        with open(log) as f:
            recorded = [json.loads(line) for line in f]
        os.remove(log)
        expected_args = [f.format(hosts=hosts, ppn=1, n=2) for f in flags] + [
            accelrun, "small.plan.json", "--output-dir", out_dir, "--launcher", "mpi"]
        assert recorded == [expected_args], f"{flavour}: mpirun got {recorded}, expected {[expected_args]}"
        check_trained(f"fake {flavour} mpirun", result, output, out_dir, scheduler)

    # Neither mpirun nor mpiexec on PATH.
    empty = os.path.join(workdir, "empty-bin")
    os.makedirs(empty)
    result, output = sh([accelrun, "small.plan.json"], workdir, dict(env, PATH=empty))
    assert result.returncode == 2, f"missing mpirun: exit {result.returncode}\n{output}"
    assert "neither mpirun nor mpiexec is on PATH" in result.stderr and "--launcher local" in result.stderr, output
    print("without mpirun: refused, exit 2")

    # The real ones, on this machine: 2 tasks from a host file of localhost.
    real = {"openmpi": ("mpirun.openmpi", "localhost slots=2\n", "OpenMPI",
                        {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}),
            "mpich": ("mpiexec.hydra", "localhost:2\n", "MPI (PMI)", {})}
    for flavour, (program, hostfile, scheduler, extra) in real.items():
        path = shutil.which(program)
        if path is None:
            print(f"real {flavour}: not run, `{program}` is not installed")
            continue
        hosts = os.path.join(workdir, f"hosts-{flavour}")
        with open(hosts, "w") as f:
            f.write(hostfile)
        build(accelc, workdir, env, f"real-{flavour}.plan.json", 1, 2, os.path.basename(hosts))
        folder = bin_dir(workdir, f"{flavour}-bin", path)
        out_dir = os.path.join(workdir, f"out-real-{flavour}")
        result, output = sh([accelrun, f"real-{flavour}.plan.json", "--output-dir", out_dir], workdir,
                            dict(env, PATH=folder + os.pathsep + env["PATH"], **extra))
        check_trained(f"real {flavour}", result, output, out_dir, scheduler)


if __name__ == "__main__":
    main()
