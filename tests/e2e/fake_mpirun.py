#!/usr/bin/python3
"""A stand-in for `mpirun`, installed on PATH under that name by mpirun_launch_test.py.

`mpirun --version` prints Open MPI's banner, or Intel MPI's when FAKE_MPI_FLAVOR=hydra. Any other
call appends its arguments (one JSON list per line) to $FAKE_MPIRUN_LOG, reads the task count
(`-n`), the tasks per machine (`--npernode` or `-ppn`) and the host file (`--hostfile` or `-f`,
which must exist), then starts the command that follows on this machine once per task, with the
placement variables the real one gives: OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE (Open
MPI) or PMI_RANK/PMI_SIZE/MPI_LOCALRANKID/MPI_LOCALNRANKS (Hydra), machine by machine in blocks of
the tasks per machine. Exits with the first nonzero exit code of a task, else 0.
"""
import json
import os
import subprocess
import sys

HYDRA = os.environ.get("FAKE_MPI_FLAVOR") == "hydra"


def main(argv):
    if argv == ["--version"]:
        print("Intel(R) MPI Library for Linux* OS, Version 2021.10" if HYDRA else "mpirun (Open MPI) 4.1.4")
        return 0
    with open(os.environ["FAKE_MPIRUN_LOG"], "a") as log:
        log.write(json.dumps(argv) + "\n")
    options = {"-n": None, "--npernode": None, "-ppn": None, "--hostfile": None, "-f": None, "--bind-to": None}
    i = 0
    while i < len(argv) and argv[i] in options:
        options[argv[i]] = argv[i + 1]
        i += 2
    command = argv[i:]
    hostfile = options["--hostfile"] or options["-f"]
    if hostfile is None or not os.path.exists(hostfile):
        print(f"fake mpirun: no host file `{hostfile}`", file=sys.stderr)
        return 1
    tasks = int(options["-n"])
    per_machine = int(options["--npernode"] or options["-ppn"])
    children = []
    for rank in range(tasks):
        env = dict(os.environ)
        if HYDRA:
            env.update(PMI_RANK=str(rank), PMI_SIZE=str(tasks), MPI_LOCALRANKID=str(rank % per_machine),
                       MPI_LOCALNRANKS=str(per_machine))
        else:
            env.update(OMPI_COMM_WORLD_RANK=str(rank), OMPI_COMM_WORLD_SIZE=str(tasks),
                       OMPI_COMM_WORLD_LOCAL_RANK=str(rank % per_machine),
                       OMPI_COMM_WORLD_LOCAL_SIZE=str(per_machine))
        children.append(subprocess.Popen(command, env=env))
    codes = [child.wait() for child in children]
    return next((code for code in codes if code != 0), 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
