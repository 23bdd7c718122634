#!/usr/bin/env python3
"""What a user notices while running jobs, end to end through accelc and accelrun:

1. tensorboard: the event file fills while the run is live (a timer flushes it), and a run
   stopped by SIGTERM keeps its curve up to its last logged step.
2. moved_plan: a plan built with `accelc build -o` runs, with its model and data, after the
   folder holding them is moved, from another working directory.
3. missing_model: `accelc check` warns at the path's place in the spec (A3011); accelrun says
   the file does not exist (no torch.jit.save hint, which stays for a file that is not
   TorchScript), once, and its verdict points at the error instead of repeating it.
4. output_dir: `--output-dir` moves the checkpoints the plan keeps in its output directory.
5. resume: resuming a finished run says it was complete; resuming with more `train.steps` is
   refused without `--allow-schedule-change` and warns with it; metrics.json then covers the
   whole run and metrics.jsonl holds a resume marker; another process count resumes with a warning
   that says what changes.
6. pty: under a pseudo-terminal rank 0's progress line is redrawn in place, with elapsed time
   and ETA.
7. rehearsal_report: `accelrun report` of a GPU job rehearsed on CPU processes says so.

Usage: runtime_behaviour_test.py ACCELC ACCELRUN TENSORBOARD_READER WORKDIR
"""
import json
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_support import read_jsonl, run  # noqa: E402

ACCELC, ACCELRUN, READER, WORKDIR = sys.argv[1:5]
sys.path.insert(0, os.path.dirname(os.path.abspath(READER)))
from tensorboard_reader import read_scalars  # noqa: E402

SPECS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "specs")

JOB = """job {name} {{
  compute {{
    distributed_type = MULTI_CPU
    num_processes = {processes}
  }}
  accelerator {{
    seed = 42
    init_process_group {{ timeout = 60s }}
{accelerator}
  }}
  model = {model}
  data = SyntheticRegression {{ samples = 512; features = 16; batch_size = 16; seed = 7 }}
  train {{
    steps = {steps}
    optimizer = AdamW {{ lr = 0.003 }}
    lr_schedule = linear
    log_every = {log_every}
{train}
  }}
  output {{ dir = "{out}" }}
}}
"""
MLP = "MLP { inputs = 16; hidden = [32]; outputs = 1 }"


def write_job(path, name, out, steps=20, log_every=5, processes=2, accelerator="", train="", model=MLP):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(JOB.format(name=name, out=out, steps=steps, log_every=log_every, processes=processes,
                           accelerator=accelerator, train=train, model=model))
    return path


# What the section being run found wrong; each section reports every check that failed, so a
# broken behaviour does not hide the next one.
FOUND = []


def check(condition, message):
    if not condition:
        FOUND.append(message)
        print(f"  check failed: {message}", flush=True)
    return condition


def output_of(result):
    return result.stdout + result.stderr


def tensorboard(root):
    """A live run's events reach the file within seconds; SIGTERM keeps the curve to its end."""
    out = os.path.join(root, "out")
    spec = write_job(os.path.join(root, "tb.accel"), "tb", out, steps=1_000_000, log_every=100,
                     accelerator="    log_with = [TENSORBOARD]")
    log = open(os.path.join(root, "run.log"), "w")
    process = subprocess.Popen([ACCELRUN, spec], stdout=log, stderr=subprocess.STDOUT)
    metrics = os.path.join(out, "metrics.jsonl")
    events = os.path.join(out, "tb")
    try:
        deadline = time.time() + 120
        while time.time() < deadline and not (os.path.exists(metrics) and len(read_jsonl(metrics)) >= 3):
            assert process.poll() is None, "the run ended early; see run.log"
            time.sleep(0.1)
        assert len(read_jsonl(metrics)) >= 3, "no metrics after 120 s"
        # 3+ logged steps are ~1 KiB of events, far below the 64 KiB that used to flush them.
        deadline = time.time() + 8
        while time.time() < deadline and not [s for s in read_scalars(events) if s[0] == "loss"]:
            time.sleep(0.2)
        live = [s for s in read_scalars(events) if s[0] == "loss"]
        assert live, "tensorboard: a live run's events did not reach the file within 8 s"
        time.sleep(1)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
        log.close()
    logged = max(r["step"] for r in read_jsonl(metrics) if "loss" in r)
    curve = max(s[1] for s in read_scalars(events) if s[0] == "loss")
    # The one step whose metrics line was written as the signal came may miss its scalars.
    assert curve >= logged - 100, f"tensorboard: the curve ends at step {curve}, metrics.jsonl at {logged}"
    print(f"tensorboard: live after {len(live)} points; SIGTERM kept the curve to step {curve} "
          f"(metrics.jsonl: {logged})")


def moved_plan(root):
    """A plan and its inputs move together and run from anywhere."""
    built = os.path.join(root, "built")
    os.makedirs(os.path.join(built, "models"))
    os.makedirs(os.path.join(built, "data"))
    shutil.copy(os.path.join(SPECS, "torchscript.accel"), built)
    shutil.copy(os.path.join(SPECS, "models", "classifier.pt"), os.path.join(built, "models"))
    shutil.copy(os.path.join(SPECS, "data", "blobs.csv"), os.path.join(built, "data"))
    os.makedirs(os.path.join(built, "plans"))
    # Compiled from `root`, written to another folder than the spec's.
    run([ACCELC, "build", "built/torchscript.accel", "-o", "built/plans/plan.json"], cwd=root)
    with open(os.path.join(built, "plans", "plan.json")) as f:
        text = f.read()
    check('"../models/classifier.pt"' in text, "moved_plan: the model path is not relative to the plan")
    moved = os.path.join(root, "moved")
    os.rename(built, moved)
    elsewhere = os.path.join(root, "elsewhere")
    os.makedirs(elsewhere)
    ran = run([ACCELRUN, os.path.join(moved, "plans", "plan.json"), "--output-dir", "out"], cwd=elsewhere,
              check=False)
    check(ran.returncode == 0 and os.path.exists(os.path.join(elsewhere, "out", "model.safetensors")),
          "moved_plan: the moved plan did not run")
    if not FOUND:
        print("moved_plan: the plan ran after its folder moved, from another working directory")


def missing_model(root):
    spec = write_job(os.path.join(root, "missing.accel"), "missing", os.path.join(root, "out"),
                     model='TorchScript { path = "models/absent.pt" }')
    checked = run([ACCELC, "check", spec], check=False)
    check(checked.returncode == 0, "missing_model: a missing model file must not fail `check`")
    check(re.search(r"missing\.accel:11:32: warning: the TorchScript model `models/absent.pt` does not exist",
                    output_of(checked)), "missing_model: no warning at the path's place")
    built = run([ACCELC, "build", spec, "-o", os.path.join(root, "plan.json")], check=False)
    check(built.returncode == 0 and "[A3011]" in output_of(built), "missing_model: build must warn, not fail")

    failed = run([ACCELRUN, spec], check=False)
    # A rank's line, `[rank 1] `-prefixed unless it is rank 0's.
    lines = failed.stdout.splitlines() + failed.stderr.splitlines()
    errors = [re.sub(r"^\[rank \d+\] ", "", line) for line in lines
              if re.match(r"^(\[rank \d+\] )?accelrun: error: rank \d: cannot load the TorchScript model", line)]
    # Both ranks fail the same way; the worker's line is relayed once.
    check(len(errors) == 1, f"missing_model: the error is relayed {len(errors)} times:\n{output_of(failed)}")
    check(errors and "the file does not exist" in errors[0], f"missing_model: not said to be missing: {errors}")
    check("torch.jit.save" not in output_of(failed), "missing_model: torch.jit.save suggested for a missing file")
    # The verdict names the rank whose line came first, the other as failing alike, and ends with the cause.
    first = re.match(r"accelrun: error: rank (\d): ", errors[0]) if errors else None
    verdict = failed.stderr.rstrip("\n").splitlines()
    named = first.group(1) if first else "?"
    check(re.search(rf"accelrun: error: rank {named} \(pid \d+\) failed", failed.stderr),
          f"missing_model: the verdict names another rank than the one whose error came first:\n{failed.stderr}")
    check(f"rank {1 - int(named) if named != '?' else '?'} failed with the same error" in failed.stderr,
          f"missing_model: the other rank is not named as failing alike:\n{failed.stderr}")
    check(verdict and verdict[-1].startswith(f"rank {named}'s error: cannot load the TorchScript model")
          and "the file does not exist" in verdict[-1],
          f"missing_model: the output does not end with the cause:\n{failed.stderr}")

    os.makedirs(os.path.join(root, "models"))
    with open(os.path.join(root, "models", "absent.pt"), "w") as f:
        f.write("not a TorchScript archive\n")
    wrong = output_of(run([ACCELRUN, spec], check=False))
    check("torch.jit.save" in wrong, "missing_model: no torch.jit.save hint for a file that is not TorchScript")
    if not FOUND:
        print("missing_model: warned at compile time, named once at run time")


def output_dir(root):
    spec = write_job(os.path.join(root, "ckpt.accel"), "ckpt", "runs/ckpt", steps=10,
                     accelerator='    project_config { project_dir = "runs/ckpt/project"; '
                                 'automatic_checkpoint_naming = true }',
                     train="    checkpoint_every = 5")
    run([ACCELRUN, spec, "--output-dir", "moved"], cwd=root)
    check(os.path.isdir(os.path.join(root, "moved", "project", "checkpoints", "checkpoint_0")),
          "output_dir: the checkpoints did not move with --output-dir")
    check(not os.path.exists(os.path.join(root, "runs")), "output_dir: something was written to the plan's dir")
    if not FOUND:
        print("output_dir: checkpoints went to moved/project/checkpoints")


def resume_settings(out):
    return dict(accelerator=f'    project_config {{ project_dir = "{out}"; automatic_checkpoint_naming = true }}',
                train="    checkpoint_every = 10")


def resume_finished(root):
    """A finished run, then resumed as is, longer, and on another process count."""
    out = os.path.join(root, "out")
    spec = write_job(os.path.join(root, "job.accel"), "job", out, steps=20, **resume_settings(out))
    run([ACCELRUN, spec])

    again = output_of(run([ACCELRUN, spec, "--resume", "auto"]))
    check("loss 0.000000 -> 0.000000" not in again, "resume: a finished run reports a loss of 0")
    check("the run was already complete (resumed at step 20 of 20)" in again, f"resume: not said:\n{again}")
    check("raise `train.steps`" in again, "resume: no way to train more")

    longer = write_job(os.path.join(root, "job.accel"), "job", out, steps=40, log_every=1, **resume_settings(out))
    refused = run([ACCELRUN, longer, "--resume", "auto"], check=False)
    check(refused.returncode != 0, "resume: a longer schedule was resumed silently")
    check("cannot resume at step 20: the checkpoint's learning-rate schedule is `linear` over 20 steps with 0 "
          "warmup steps, this plan's is `linear` over 40 steps with 0 warmup steps" in output_of(refused),
          "resume: the schedule change is not named")
    check("--allow-schedule-change" in output_of(refused), "resume: the way forward is not named")

    allowed = run([ACCELRUN, longer, "--resume", "auto", "--allow-schedule-change"], check=False)
    check(allowed.returncode == 0, "resume: --allow-schedule-change did not resume")
    check("from step 21 on the rates follow this plan's schedule" in output_of(allowed), "resume: no warning")
    # Linear over 40 steps from 0.003: step 21 trains at half the rate (the checkpoint's 20-step
    # schedule had reached 0 there).
    rates = {r["step"]: r["lr"] for r in read_jsonl(os.path.join(out, "metrics.jsonl")) if "lr" in r}
    check(abs(rates.get(21, -1) - 0.0015) < 1e-9,
          f"resume: step 21 did not train at this plan's rate: {rates.get(21)}")

    # Another process count resumes (the checkpoint's whole tensors are resharded), saying what changes.
    other = run([ACCELRUN, longer, "--resume", "auto", "--nproc-per-node", "1"], check=False)
    check(other.returncode == 0 and "the checkpoint was written by 2 processes, this run has 1" in output_of(other),
          f"resume: another process count was not resumed with a warning:\n{output_of(other)}")
    if not FOUND:
        print("resume_finished: complete run named, schedule change refused then warned, process count resumed")


def resume_killed(root):
    """A run killed after a checkpoint and resumed: metrics.json covers both launches."""
    out = os.path.join(root, "out")
    spec = write_job(os.path.join(root, "job.accel"), "job", out, steps=2000, log_every=10,
                     model="MLP { inputs = 16; hidden = [256, 256]; outputs = 1 }",
                     accelerator=resume_settings(out)["accelerator"], train="    checkpoint_every = 100")
    process = subprocess.Popen([ACCELRUN, spec], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in process.stdout:
        if line.startswith("checkpoint "):
            process.send_signal(signal.SIGKILL)
            break
    process.stdout.close()
    assert process.wait() == -signal.SIGKILL, "resume_killed: the run ended before the kill"
    with open(os.path.join(out, "metrics.jsonl")) as f:
        complete_lines = f.read().count("\n")  # a kill may leave a partial last line
    run([ACCELRUN, spec, "--resume", "auto"])
    with open(os.path.join(out, "metrics.json")) as f:
        whole = json.load(f)
    records = read_jsonl(os.path.join(out, "metrics.jsonl"))
    first_logged = next(r["loss"] for r in records if "loss" in r)
    check(whole["first_loss"] == first_logged,
          f"resume_killed: first_loss {whole['first_loss']} is not the run's first, {first_logged}")
    markers = [r for r in records if r.get("event") == "resume"]
    check(len(markers) == 1, f"resume_killed: {len(markers)} resume markers in metrics.jsonl")
    if markers:
        marker = markers[0]
        check(marker["step"] % 100 == 0 and re.search(r"checkpoint_\d+$", marker["checkpoint"]),
              f"resume_killed: the marker does not name the checkpoint: {marker}")
        check(marker["elapsed_seconds"] > 0, "resume_killed: the marker carries no time")
        check(whole["wall_seconds"] > marker["elapsed_seconds"],
              "resume_killed: wall_seconds covers only the resumed part")
        check(records.index(marker) == complete_lines, "resume_killed: the marker is not where the resume began")
    check(whole.get("resumed_at_step") is not None, "resume_killed: metrics.json does not say where it resumed")
    if not FOUND:
        print("resume_killed: metrics.json covers the whole run, metrics.jsonl marks the resume")


def progress_under_pty(root):
    spec = write_job(os.path.join(root, "pty.accel"), "pty", os.path.join(root, "out"), steps=400, log_every=100)
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(ACCELRUN, [ACCELRUN, spec])
    chunks = []
    deadline = time.time() + 240
    while time.time() < deadline:
        ready, _, _ = select.select([fd], [], [], 1)
        if not ready:
            continue
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    _, status = os.waitpid(pid, 0)
    text = b"".join(chunks).decode(errors="replace")
    check(os.waitstatus_to_exitcode(status) == 0, f"pty: accelrun failed:\n{text}")
    redraws = re.findall(r"\r\[[#-]{20}\]\s+\d+/400 .*? elapsed \d+:\d\d:\d\d  ETA (?:\d+:\d\d:\d\d|--:--:--)", text)
    check(len(redraws) >= 2, f"pty: the progress line is not redrawn in place:\n{text!r}")
    check(not re.search(r"^step +\d+/400", text, re.M), "pty: plain progress lines on a terminal")
    check("accelrun: done in" in text, "pty: no done line")
    if not FOUND:
        print(f"pty: {len(redraws)} redraws of the progress line")


def rehearsal_report(root):
    """The report of a GPU job rehearsed on CPU processes says so; a CPU job's does not."""
    out = os.path.join(root, "out")
    spec = write_job(os.path.join(root, "gpu.accel"), "gpu", out, steps=4)
    with open(spec) as f:
        text = f.read()
    with open(spec, "w") as f:
        f.write(text.replace("distributed_type = MULTI_CPU", "distributed_type = MULTI_GPU"))
    run([ACCELRUN, spec, "--device", "cpu"])
    page = run([ACCELRUN, "report", out, "-o", "-"]).stdout
    check("rehearsal on the CPU of an accelerator job" in page and "not on its accelerators" in page,
          "rehearsal_report: the page of a CPU rehearsal does not say so")
    cpu_out = os.path.join(root, "cpu")
    run([ACCELRUN, write_job(os.path.join(root, "cpu.accel"), "cpu", cpu_out, steps=4)])
    check("rehearsal on the CPU" not in run([ACCELRUN, "report", cpu_out, "-o", "-"]).stdout,
          "rehearsal_report: a CPU job's page speaks of a rehearsal")
    if not FOUND:
        print("rehearsal_report: the rehearsal's page says it was one")


def main():
    shutil.rmtree(WORKDIR, ignore_errors=True)
    failures = []
    for test in (tensorboard, moved_plan, missing_model, output_dir, resume_finished, resume_killed,
                 progress_under_pty, rehearsal_report):
        root = os.path.join(WORKDIR, test.__name__)
        os.makedirs(root)
        FOUND.clear()
        try:
            test(root)
        except AssertionError as error:
            FOUND.append(str(error))
        for problem in FOUND:
            failures.append(f"{test.__name__}: {problem}")
            print(f"FAILED {test.__name__}: {problem}", flush=True)
    if failures:
        sys.exit("\n".join(failures))


if __name__ == "__main__":
    main()
