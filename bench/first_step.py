#!/usr/bin/env python3
"""Start to first step, side by side: `accelrun` of the quickstart, the same job as a Python
script on Accelerate started by `accelerate launch` and by `accelrun` (its script mode), and a
plain PyTorch DDP script as the anchor, all on 2 processes on the CPU over Gloo, measured in the
same run.

"First step" is the same event on every side: rank 0 has finished the first optimizer step and
printed the loss of that step averaged over the ranks (accelrun's `step 1` line; the scripts
print `step 1 loss X` after optimizer.step() and a reduce of the loss). The time runs from the
moment this script starts the launcher process to the moment that line reaches this script
through the launcher's stdout. The job is then stopped (SIGTERM to the launcher, which stops its
workers) and the next one starts only after every process of the last one has gone.

Sides (bench/quickstart_py/ holds the scripts, quickstart_job.py the shared model, data and
optimizer of specs/quickstart.accel):
  accelrun PLAN                  the quickstart compiled once by `accelc compile`, native workers
  accelrun + Accelerate script   `accelrun --multi_gpu --num_processes 2 ... accelerate_quickstart.py`:
                                 the script started as `accelerate launch` starts it
  accelerate launch              Accelerate's CLI, the same options and script (`--multi_gpu`: its
                                 one-machine multi-process path, torchrun in process)
  torchrun + Accelerate script   python -m torch.distributed.run and the same script
  anchor: torchrun + DDP         the same job without Accelerate (ddp_quickstart.py)
Runs alternate between sides, so that load on the machine falls on all of them alike. The
Python sides run the pinned torch and Accelerate of python/requirements.txt (the checkout's
.venv, or --python) and get the huge-page malloc tunable that accelrun gives its workers. Thread
counts are left to each launcher (each picks 1 per worker on 2 cores).

Usage: first_step.py BIN_DIR [--python PYTHON] [--repetitions N] [--before OLD_BIN_DIR]
  --python: the interpreter of the environment with the pinned torch and accelerate
    (default: the checkout's .venv/bin/python).
  --before: also time the accelrun of an older build (its bin folder) on the same plan.
Prints medians, each side's ratio to accelrun's, and when accelrun's workers had loaded LibTorch.
"""
import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "e2e"))
from e2e_support import free_port  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "quickstart_py")
SPEC = os.path.join(HERE, "..", "specs", "quickstart.accel")
HUGEPAGES = "glibc.malloc.hugetlb=1"
DEADLINE_S = 300


def python_env(python, home):
    """The Python sides' environment: the pinned environment's bin first (so that `python3` is
    its interpreter for accelrun's script mode), the scripts on PYTHONPATH, and an empty HF_HOME
    so that no `accelerate config` file of this machine's user changes the launch."""
    path = os.path.dirname(python) + os.pathsep + os.environ.get("PATH", "")
    return dict(os.environ, PATH=path, PYTHONPATH=SCRIPTS, GLIBC_TUNABLES=HUGEPAGES, HF_HOME=home)


def sides(args, work, plan):
    """name -> function(port, run_dir) giving (argv, env)."""
    env = python_env(args.python, os.path.join(work, "hf"))
    torchrun = [args.python, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_addr", "127.0.0.1"]
    launch_options = ["--multi_gpu", "--num_processes", "2", "--num_machines", "1", "--mixed_precision", "no",
                      "--dynamo_backend", "no"]
    accelerate = [args.python, "-m", "accelerate.commands.accelerate_cli", "launch"] + launch_options
    accelrun = os.path.join(args.bin_dir, "accelrun")
    script = os.path.join(SCRIPTS, "accelerate_quickstart.py")
    table = {
        "accelrun PLAN": lambda port, out: (
            [accelrun, plan, "--output-dir", out, "--master-port", str(port)], os.environ),
        "accelrun + Accelerate script": lambda port, out: (
            [accelrun] + launch_options + ["--main_process_port", str(port), script], env),
        "accelerate launch + Accelerate script": lambda port, out: (
            accelerate + ["--main_process_port", str(port), script], env),
        "torchrun + Accelerate script": lambda port, out: (torchrun + ["--master_port", str(port), script], env),
        "anchor: torchrun + plain DDP script": lambda port, out: (
            torchrun + ["--master_port", str(port), os.path.join(SCRIPTS, "ddp_quickstart.py")], env),
    }
    if args.before:
        table["before: accelrun PLAN"] = lambda port, out: (
            [os.path.join(args.before, "accelrun"), plan, "--output-dir", out, "--master-port", str(port)],
            os.environ)
    return table


def first_step(argv, env):
    """Seconds from starting `argv` to its first `step ` line, and (seconds, line) of each line
    before it. Stops the job and waits for all of its processes."""
    started = time.perf_counter()
    job = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           start_new_session=True)
    lines = []
    try:
        while True:
            line = job.stdout.readline()
            now = time.perf_counter() - started
            if not line:
                sys.exit(f"{argv[0]} ended before its first step:\n" + "".join(text for _, text in lines[-30:]))
            if line.startswith("step "):
                return now, lines
            lines.append((now, line))
            if now > DEADLINE_S:
                sys.exit(f"no first step within {DEADLINE_S} s: {' '.join(argv)}")
    finally:
        if job.poll() is None:
            job.send_signal(signal.SIGTERM)  # the launcher stops its workers
        try:
            job.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(job.pid, signal.SIGKILL)  # anything of the job's session still there
        except ProcessLookupError:
            pass
        job.wait()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bin_dir")
    parser.add_argument("--python", default=os.path.join(HERE, "..", ".venv", "bin", "python"),
                        help="the interpreter with the pinned torch and accelerate")
    parser.add_argument("--repetitions", type=int, default=7)
    parser.add_argument("--before", help="the bin folder of an older build, timed beside this one")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="accel-first-step-")
    plan = os.path.join(work, "plan.json")
    subprocess.run([os.path.join(args.bin_dir, "accelc"), "compile", SPEC, "-o", plan], check=True)
    table = sides(args, work, plan)
    times = {name: [] for name in table}
    accelrun_lines = []
    for repetition in range(args.repetitions):
        for name, make in table.items():
            seconds, lines = first_step(*make(free_port(), os.path.join(work, f"run-{repetition}-{len(times)}")))
            times[name].append(seconds)
            if name == "accelrun PLAN":
                accelrun_lines.append(lines)
            print(f"# {repetition + 1}/{args.repetitions} {name}: {seconds:.3f} s", file=sys.stderr, flush=True)
    medians = {name: statistics.median(values) for name, values in times.items()}
    ours = medians["accelrun PLAN"]
    print(f"start to first step, 2 processes, CPU, Gloo; median of {args.repetitions}, runs alternating\n")
    print("| side | median | min–max | vs accelrun |")
    print("|---|---|---|---|")
    for name, median in medians.items():
        print(f"| {name} | {median:.3f} s | {min(times[name]):.3f}–{max(times[name]):.3f} s | "
              f"{median / ours:.2f}× |")
    joins = [sorted(seconds for seconds, text in lines if " joins " in text) for lines in accelrun_lines]
    print(f"\naccelrun, median arrival of its lines: the launcher's first "
          f"{statistics.median(lines[0][0] for lines in accelrun_lines):.3f} s; the first worker's `joins` "
          f"(LibTorch loaded) {statistics.median(j[0] for j in joins):.3f} s, the last's "
          f"{statistics.median(j[-1] for j in joins):.3f} s; `step 1` {ours:.3f} s")


if __name__ == "__main__":
    main()
