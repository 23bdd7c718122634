#!/usr/bin/env python3
"""`accelrun` script mode as a drop-in for `accelerate launch`, checked on real runs.

script_launch/train.py (a few steps of Accelerate on a tiny model, one JSON line per step per
process) runs once under `<venv>/bin/accelerate launch --config_file X` and once under
`accelrun X`, for each config in script_launch/. Per process and step the losses must be the
same floats, and the AcceleratorState (with its FSDP or DeepSpeed plugin) and the launch
variables the script sees must be the same. Then, under accelrun only, with two processes in
one Gloo group:
  - rank 1 exits 7 at step 2: accelrun exits non-zero, names rank 1, leaves no process behind,
    and takes well under the timeout;
  - the same with `--max-restarts 1` and --save/--resume: the job succeeds, the second attempt
    has TORCHELASTIC_RESTART_COUNT=1, loads the step-1 checkpoint and computes the losses of
    steps 2 and 3 that the uninterrupted `accelerate launch` run computed;
  - rank 1 returns 0 at once while rank 0 waits for it: accelrun stops the job within the
    straggler limit and names rank 1.

What Accelerate 1.15 does on a machine without CUDA, which these cases pin down:
  - MULTI_CPU with 2 processes and no mpirun_config starts one process (the simple launcher
    sets MASTER_ADDR/MASTER_PORT but no RANK or WORLD_SIZE), which trains alone;
  - MULTI_GPU and FSDP start 2 torchrun workers that each find no GPU and train alone
    (distributed_type NO, both process_index 0; the state keeps no FSDP plugin);
  - ACCELERATE_USE_CPU=true in the launcher's environment (REHEARSAL_ENV) makes those workers
    join one Gloo group instead (MULTI_CPU, world size 2);
  - DEEPSPEED builds its plugin (and DeepSpeed's shared-memory op, once per machine: a minute
    on 2 cores) but cannot prepare on CPU, so its case only compares the state; Accelerate's
    DeepSpeedPlugin also needs `transformers` installed.

Usage: script_launch_test.py <accelrun> <venv_python> <work_dir>
Exit 0 pass, 1 fail (also when <venv_python> lacks a pinned package: run scripts/setup.sh).
"""
import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(__file__))
from e2e_support import free_port  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT_DIR = os.path.join(HERE, "script_launch")
TRAIN = os.path.join(SCRIPT_DIR, "train.py")

# accelrun's own options this test uses, each in one place.
STRAGGLER_LIMIT_S = 5
STRAGGLER_FLAGS = ["--early-exit-timeout", str(STRAGGLER_LIMIT_S)]
# Accelerate's own option (`--max_restarts`, hyphens allowed): both tools read it.
RESTART_FLAGS = ["--max-restarts", "1"]

# How the 2-process GPU configs get one Gloo group on a machine without CUDA: `accelerate launch`
# needs ACCELERATE_USE_CPU=true in its environment (its torchrun workers inherit it). accelrun
# gets the same variable (ACCELRUN_REHEARSAL_GETS_ENV) and/or its own flags.
REHEARSAL_ENV = {"ACCELERATE_USE_CPU": "True"}  # as Accelerate spells its own --cpu
ACCELRUN_REHEARSAL_FLAGS = ["--device", "cpu"]
ACCELRUN_REHEARSAL_GETS_ENV = False

RUN_TIMEOUT_S = 120  # one launch; a hang fails the case, it does not block the suite
DEEPSPEED_TIMEOUT_S = 300  # its first run on a machine compiles DeepSpeed's shared-memory op

# Launch variables the script reports that may differ between the two tools, and why.
ENV_MAY_DIFFER = {
    "TORCHELASTIC_ERROR_FILE": "a temporary file of torchrun's agent",
    "TORCHELASTIC_USE_AGENT_STORE": "accelrun runs no agent store (launch_plan.h)",
}

# Variables of the caller's shell that would change the launch: both tools start without them.
_CLEARED_PREFIXES = ("ACCELERATE_", "ACCEL_", "FSDP_", "TORCHELASTIC_", "TORCH_ELASTIC_", "PET_",
                     "OMP_", "KMP_", "MKL_", "MASTER_", "SLURM_", "OMPI_", "PMI_", "PMIX_", "MV2_",
                     "MPI_", "DEEPSPEED_")
_CLEARED_NAMES = {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "ROLE_RANK",
                  "ROLE_NAME", "GROUP_WORLD_SIZE", "ROLE_WORLD_SIZE", "CUDA_VISIBLE_DEVICES",
                  "HF_HOME", "XDG_CACHE_HOME"}


# The most processes one case starts: `num_processes: auto` counts this machine's CPUs.
MAX_PROCESSES = 8


@dataclasses.dataclass
class Case:
    name: str
    config: str  # in script_launch/
    processes: int  # what `accelerate launch` starts on this machine (checked)
    world_size: int  # what each process's Accelerator reports (checked)
    rehearsal: bool = False  # with REHEARSAL_ENV: one Gloo group
    train: bool = True
    needs: tuple = ()  # modules it needs beyond accelerate and torch (python/requirements.txt pins them)
    timeout: int = RUN_TIMEOUT_S


CASES = [
    Case("NO", "no.yaml", processes=1, world_size=1),
    Case("MULTI_CPU", "multi_cpu.yaml", processes=1, world_size=1),
    Case("MULTI_GPU", "multi_gpu.yaml", processes=2, world_size=1),
    Case("MULTI_GPU rehearsed on CPU", "multi_gpu.yaml", processes=2, world_size=2, rehearsal=True),
    Case("FSDP", "fsdp.yaml", processes=2, world_size=1),
    # torchrun's `--nproc_per_node auto` without CUDA: os.cpu_count() processes.
    Case("MULTI_GPU with num_processes auto", "multi_gpu_auto.yaml", processes=os.cpu_count() or 1,
         world_size=1),
    Case("DEEPSPEED", "deepspeed.yaml", processes=2, world_size=1, train=False,
         needs=("deepspeed", "transformers"), timeout=DEEPSPEED_TIMEOUT_S),
]
# The failure cases run the script on this config, as one Gloo group of 2.
FAILURE_CONFIG = "multi_gpu.yaml"


# ---------------------------------------------------------------------------------------------
# The two command lines.

def accelerate_launch_command(venv_bin, config, launch_flags, script_args):
    return [os.path.join(venv_bin, "accelerate"), "launch", "--config_file", config, *launch_flags, TRAIN,
            *script_args]


def accelrun_command(accelrun, config, launch_flags, own_flags, script_args):
    """The one place accelrun's command line is built: `accelrun cfg.yaml [accelerate launch
    options] [accelrun options] train.py [script args]`."""
    return [accelrun, config, *launch_flags, *own_flags, TRAIN, *script_args]


# ---------------------------------------------------------------------------------------------
# Running a launch and reading what it printed.

@dataclasses.dataclass
class Run:
    command: list
    returncode: int
    stdout: str
    stderr: str
    elapsed: float
    timed_out: bool
    leftovers: list  # pids of processes with the run's marker still alive after it ended
    records: list  # the JSON objects train.py printed, in order


def marked_pids(marker):
    """Live processes (not zombies) whose command line holds `marker`."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{entry}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in argv and state != "Z":
            pids.append(int(entry))
    return pids


def kill_pids(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def parse_records(text):
    """Every JSON object of `text`: a line may start with a launcher's label (`[rank 1] `)."""
    decoder = json.JSONDecoder()
    records = []
    for line in text.splitlines():
        at = line.find("{")
        while at >= 0:
            try:
                record, end = decoder.raw_decode(line, at)
            except json.JSONDecodeError:
                break
            if isinstance(record, dict) and "launched_as" in record:
                records.append(record)
            at = line.find("{", end)
    return records


# Every marker handed out so far: what is stopped when this test is interrupted.
_MARKERS = []


def new_marker():
    marker = f"script-launch-{uuid.uuid4().hex[:12]}"
    _MARKERS.append(marker)
    return marker


def stop_everything(signum, frame):
    for marker in _MARKERS:
        kill_pids(marked_pids(marker))
    sys.exit(128 + signum)


def launch(command, env, cwd, timeout, marker):
    """Runs `command` to its end or for `timeout` seconds; then stops every process with `marker`
    on its command line (by pid) and says which were still alive. Output goes to files, which a
    process that outlives the launcher cannot hold open the way it could a pipe."""
    out_path, err_path = (os.path.join(cwd, f"{marker}.{name}") for name in ("stdout", "stderr"))
    started = time.monotonic()
    with open(out_path, "w") as out, open(err_path, "w") as err:
        process = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                   start_new_session=True)
    timed_out = False
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_pids(marked_pids(marker))
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait(timeout=30)
    elapsed = time.monotonic() - started
    # A process that outlives its launcher may take a moment to act on the launcher's SIGTERM.
    deadline = time.monotonic() + 3
    leftovers = marked_pids(marker)
    while leftovers and time.monotonic() < deadline:
        time.sleep(0.1)
        leftovers = marked_pids(marker)
    kill_pids(leftovers)
    with open(out_path, errors="replace") as f:
        stdout = f.read()
    with open(err_path, errors="replace") as f:
        stderr = f.read()
    return Run(command, process.returncode, stdout, stderr, elapsed, timed_out, leftovers, parse_records(stdout))


def verdict(run):
    """accelrun's first error line: whom it names as the failure."""
    match = re.search(r"^accelrun: error: .*$", run.stderr, re.M)
    return match.group(0) if match else ""


def names_rank(line, rank):
    return re.search(rf"\brank {rank}\b", line) is not None


def tail(text, lines=25):
    return "\n".join("    | " + line for line in text.splitlines()[-lines:])


def describe(run):
    how = "timed out" if run.timed_out else f"exited {run.returncode}"
    return (f"`{' '.join(run.command)}` {how} after {run.elapsed:.1f} s\n  stdout:\n{tail(run.stdout)}\n"
            f"  stderr:\n{tail(run.stderr)}")


# ---------------------------------------------------------------------------------------------
# What a run computed, per process.

def processes_of(run):
    """{launched_as: {"start", "env", "state", "losses": {(rank, step): loss}, "events"}} of the
    run's first attempt (restart_count 0)."""
    out = {}
    for record in run.records:
        who = out.setdefault(record["launched_as"], {"losses": {}, "events": []})
        if record.get("event") == "start":
            if record["restart_count"] == 0:
                who["start"] = {k: v for k, v in record.items() if k != "pid"}
        elif "env" in record:
            who.setdefault("env", record["env"])
        elif "state" in record:
            who.setdefault("state", record["state"])
        elif "loss" in record:
            who["losses"].setdefault((record["rank"], record["step"]), record["loss"])
        else:
            who["events"].append(record)
    return out


def compare(name, reference, candidate):
    """Differences between what `accelerate launch` (reference) and accelrun (candidate) ran."""
    problems = []
    ref, cand = processes_of(reference), processes_of(candidate)
    if sorted(ref) != sorted(cand):
        return [f"{name}: processes (by RANK) {sorted(cand)}, accelerate launch started {sorted(ref)}"]
    for who in sorted(ref):
        a, b = ref[who], cand[who]
        label = f"{name}: process {who}"
        if a.get("start") != b.get("start"):
            problems.append(f"{label}: started as {b.get('start')}, under accelerate launch as {a.get('start')}")
        if a.get("state") != b.get("state"):
            problems.append(f"{label}: state\n      accelrun:          {json.dumps(b.get('state'), sort_keys=True)}"
                            f"\n      accelerate launch: {json.dumps(a.get('state'), sort_keys=True)}")
        env_a, env_b = a.get("env") or {}, b.get("env") or {}
        for key in sorted(set(env_a) | set(env_b)):
            if key not in ENV_MAY_DIFFER and env_a.get(key) != env_b.get(key):
                problems.append(f"{label}: {key}={env_b.get(key)!r}, under accelerate launch {env_a.get(key)!r}")
        if a["losses"] != b["losses"]:
            rows = []
            for key in sorted(set(a["losses"]) | set(b["losses"])):
                x, y = a["losses"].get(key), b["losses"].get(key)
                rows.append(f"      rank {key[0]} step {key[1]}: accelerate launch {x!r}, accelrun {y!r}"
                            + ("" if x == y else "   <--"))
            problems.append(f"{label}: losses differ\n" + "\n".join(rows))
    return problems


# ---------------------------------------------------------------------------------------------
# The checks.

class Test:
    def __init__(self, accelrun, venv_python, work_dir):
        self.accelrun = accelrun
        # The folder as the venv's own scripts name it: `accelerate`'s shebang holds the resolved
        # path where the venv was made, so `python3` found on PATH is then the same interpreter,
        # by the same name (a venv reached through a symbolic link would otherwise run the script
        # as another sys.executable, and DeepSpeed would rebuild its ops for each tool).
        self.venv_bin = os.path.realpath(os.path.dirname(venv_python))
        self.work_dir = work_dir
        self.failures = []
        self.references = {}  # case name -> the accelerate launch Run

    def env(self, rehearsal=False, for_accelrun=False):
        env = {k: v for k, v in os.environ.items()
               if k not in _CLEARED_NAMES and not k.startswith(_CLEARED_PREFIXES)}
        env["PATH"] = self.venv_bin + os.pathsep + env.get("PATH", "")
        hf_home = tempfile.mkdtemp(prefix="hf-", dir=self.work_dir)  # empty: no default config
        env["HF_HOME"] = hf_home
        env["PYTHONUNBUFFERED"] = "1"
        if rehearsal and (not for_accelrun or ACCELRUN_REHEARSAL_GETS_ENV):
            env.update(REHEARSAL_ENV)
        return env

    def run_dir(self, name):
        """The working directory of a case, the same for both tools (DeepSpeed's launch puts it on
        PYTHONPATH)."""
        path = os.path.join(self.work_dir, name.replace(" ", "_"))
        os.makedirs(path, exist_ok=True)
        return path

    def fail(self, message):
        print(f"FAIL {message}", flush=True)
        self.failures.append(message)

    def accelerate_launch(self, case_name, config, launch_flags, script_args, rehearsal, timeout):
        marker = new_marker()
        command = accelerate_launch_command(self.venv_bin, os.path.join(SCRIPT_DIR, config), launch_flags,
                                            [*script_args, "--marker", marker])
        return launch(command, self.env(rehearsal), self.run_dir(case_name), timeout, marker)

    def accelrun_launch(self, case_name, config, launch_flags, own_flags, script_args, rehearsal, timeout):
        marker = new_marker()
        own = [*(ACCELRUN_REHEARSAL_FLAGS if rehearsal else []), *own_flags]
        command = accelrun_command(self.accelrun, os.path.join(SCRIPT_DIR, config), launch_flags, own,
                                   [*script_args, "--marker", marker])
        return launch(command, self.env(rehearsal, for_accelrun=True), self.run_dir(case_name),
                      timeout, marker)

    # Equivalence ----------------------------------------------------------------------------

    def equivalence(self, case):
        port = free_port()
        flags = ["--main_process_port", str(port)]
        script_args = ["--print-state", "--print-env"] + ([] if case.train else ["--no-train"])
        reference = self.accelerate_launch(case.name, case.config, flags, script_args, case.rehearsal,
                                           case.timeout)
        if reference.returncode != 0 or reference.timed_out:
            self.fail(f"{case.name}: the reference run failed: {describe(reference)}")
            return
        ref = processes_of(reference)
        if len(ref) != case.processes or any(p.get("start", {}).get("world_size") != case.world_size
                                             for p in ref.values()):
            self.fail(f"{case.name}: accelerate launch no longer starts {case.processes} process(es) of world "
                      f"size {case.world_size}: {[p.get('start') for p in ref.values()]}")
            return
        if case.train and any(len(p["losses"]) == 0 for p in ref.values()):
            self.fail(f"{case.name}: a reference process printed no loss: {describe(reference)}")
            return
        self.references[case.name] = reference
        print(f"{case.name}: accelerate launch {reference.elapsed:.1f} s, {len(ref)} process(es)", flush=True)

        candidate = self.accelrun_launch(case.name, case.config, flags, [], script_args, case.rehearsal,
                                         case.timeout)
        if candidate.returncode != 0 or candidate.timed_out:
            self.fail(f"{case.name}: accelrun failed: {describe(candidate)}")
            return
        print(f"{case.name}: accelrun {candidate.elapsed:.1f} s", flush=True)
        problems = compare(case.name, reference, candidate)
        for problem in problems:
            self.fail(problem)
        if not problems:
            losses = sum(len(p["losses"]) for p in ref.values())
            print(f"ok {case.name}: {losses} losses, states and launch variables identical", flush=True)

    # Failures (accelrun only) -----------------------------------------------------------------

    def killed_rank(self):
        name = "rank 1 dies"
        run = self.accelrun_launch(name, FAILURE_CONFIG, ["--main_process_port", str(free_port())], [],
                                   ["--die-at-step", "2", "--die-rank", "1"], rehearsal=True,
                                   timeout=RUN_TIMEOUT_S)
        problems = []
        if run.timed_out or run.returncode == 0:
            problems.append("accelrun did not exit non-zero")
        if not names_rank(verdict(run), 1):
            problems.append(f"its first error line does not name rank 1: {verdict(run)!r}")
        if not any(r.get("event") == "dying" for r in run.records):
            problems.append("rank 1 never reached step 2")
        if run.leftovers:
            problems.append(f"processes of the job outlived accelrun: {run.leftovers}")
        if run.elapsed > RUN_TIMEOUT_S / 4:
            problems.append(f"it took {run.elapsed:.1f} s")
        self.report(name, run, problems, f"rank 1 named, nothing left, {run.elapsed:.1f} s")

    def restarted(self):
        name = "rank 1 dies, restarted"
        checkpoints = os.path.join(self.run_dir(name + " checkpoints"), "ckpt")
        os.makedirs(checkpoints)
        run = self.accelrun_launch(name, FAILURE_CONFIG, ["--main_process_port", str(free_port()), *RESTART_FLAGS],
                                   [], ["--die-at-step", "2", "--die-rank", "1", "--save", checkpoints,
                                        "--resume", checkpoints], rehearsal=True, timeout=RUN_TIMEOUT_S)
        problems = []
        if run.timed_out or run.returncode != 0:
            problems.append("the restarted job did not succeed")
        second = [r for r in run.records if r.get("event") == "start" and r["restart_count"] == 1]
        if sorted(r["launched_as"] for r in second) != [0, 1]:
            problems.append(f"ranks with TORCHELASTIC_RESTART_COUNT=1: {[r['launched_as'] for r in second]}")
        loaded = [r for r in run.records if r.get("event") == "loaded"]
        if sorted((r["launched_as"], r["step"], r["restart_count"]) for r in loaded) != [(0, 1, 1), (1, 1, 1)]:
            problems.append(f"expected both ranks to load the step-1 checkpoint on the restart, got {loaded}")
        reference = self.references.get("MULTI_GPU rehearsed on CPU")
        if reference is not None:
            # The losses after the resume are those of the uninterrupted run.
            expected = {(r["rank"], r["step"]): r["loss"] for r in reference.records if "loss" in r and r["step"] >= 2}
            resumed = {}
            seen_restart = set()
            for r in run.records:
                if r.get("event") == "start" and r["restart_count"] == 1:
                    seen_restart.add(r["launched_as"])
                if "loss" in r and r["launched_as"] in seen_restart:
                    resumed[(r["rank"], r["step"])] = r["loss"]
            if resumed != expected:
                problems.append(f"losses after the resume {sorted(resumed.items())}, the uninterrupted run's "
                                f"{sorted(expected.items())}")
        self.report(name, run, problems, f"restarted once, resumed from step 1, same losses, {run.elapsed:.1f} s")

    def left_early(self, where):
        name = f"rank 1 leaves early ({where})"
        run = self.accelrun_launch(name, FAILURE_CONFIG, ["--main_process_port", str(free_port())], STRAGGLER_FLAGS,
                                   ["--exit-early-rank", "1", "--exit-early-at", where], rehearsal=True,
                                   timeout=RUN_TIMEOUT_S)
        problems = []
        if run.timed_out or run.returncode == 0:
            problems.append("accelrun did not stop the job with a failure")
        if not any(r.get("event") == "exit_early" for r in run.records):
            problems.append("rank 1 did not leave")
        if not names_rank(verdict(run), 1):
            problems.append(f"its first error line does not name rank 1: {verdict(run)!r}")
        if run.leftovers:
            problems.append(f"processes of the job outlived accelrun: {run.leftovers}")
        # Starting takes a few seconds of imports; the limit runs from rank 1's exit. Rank 0
        # blocks (start) until the limit stops it; over Gloo it fails by itself (barrier).
        if run.elapsed > STRAGGLER_LIMIT_S + 30:
            problems.append(f"it took {run.elapsed:.1f} s (limit {STRAGGLER_LIMIT_S} s)")
        if where == "start" and run.elapsed < STRAGGLER_LIMIT_S:
            problems.append(f"the job was stopped after {run.elapsed:.1f} s, before the {STRAGGLER_LIMIT_S} s limit")
        self.report(name, run, problems, f"rank 1 named, job stopped in {run.elapsed:.1f} s")

    def report(self, name, run, problems, success):
        if problems:
            self.fail(f"{name}: " + "; ".join(problems) + "\n  " + describe(run))
        else:
            print(f"ok {name}: {success}", flush=True)


def importable(venv_python, modules):
    """{module: whether venv_python can find it} (found, not imported: cheap)."""
    code = ("import importlib.util, json, sys; "
            "print(json.dumps({m: importlib.util.find_spec(m) is not None for m in sys.argv[1:]}))")
    result = subprocess.run([venv_python, "-c", code, *modules], capture_output=True, text=True, timeout=60)
    return json.loads(result.stdout) if result.returncode == 0 else {m: False for m in modules}


def main():
    if len(sys.argv) != 4:
        print("usage: script_launch_test.py <accelrun> <venv_python> <work_dir>", file=sys.stderr)
        return 2
    accelrun, venv_python, work_dir = sys.argv[1:4]
    accelrun, venv_python = os.path.abspath(accelrun), os.path.abspath(venv_python)
    # Imports Accelerate as train.py does (and torch with it). python/requirements.txt pins them,
    # so an environment without them is not set up (scripts/setup.sh): a failure, not a skip.
    versions = "import accelerate, torch; print(accelerate.__version__, torch.__version__)"
    probe = subprocess.run([venv_python, "-c", versions], capture_output=True, text=True, timeout=120)
    if probe.returncode != 0:
        print(f"FAIL: {venv_python} cannot import accelerate and torch (run scripts/setup.sh):\n"
              f"{tail(probe.stderr, 5)}", flush=True)
        return 1
    print(f"accelerate, torch: {probe.stdout.strip()}", flush=True)
    shutil.rmtree(work_dir, ignore_errors=True)
    os.makedirs(work_dir)
    work_dir = os.path.abspath(work_dir)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, stop_everything)
    test = Test(accelrun, venv_python, work_dir)
    found = importable(venv_python, sorted({m for case in CASES for m in case.needs}))
    started = time.monotonic()
    for case in CASES:
        if case.processes > MAX_PROCESSES:
            print(f"skipped: {case.name}: it would start {case.processes} processes (one per CPU), "
                  f"more than the {MAX_PROCESSES} this test runs", flush=True)
            continue
        missing = [m for m in case.needs if not found.get(m)]
        if missing:
            test.fail(f"{case.name}: {', '.join(missing)} cannot be imported by {venv_python} (run scripts/setup.sh)")
            continue
        test.equivalence(case)
    test.killed_rank()
    test.restarted()
    test.left_early("start")
    test.left_early("barrier")
    print(f"{time.monotonic() - started:.0f} s in all", flush=True)
    if test.failures:
        print(f"{len(test.failures)} failure(s)", flush=True)
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
