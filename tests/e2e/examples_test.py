#!/usr/bin/env python3
"""Runs every example of specs/ (other than the quickstart, which e2e_quickstart runs) through
accelrun on 2 processes and checks what each promises:

  * torchscript.accel: the TorchScript classifier trains from the CSV file; the saved weights
    carry the Python model's state_dict names (parameters and batch-norm buffers); the
    learning rate follows Accelerate's wrapped linear schedule, which steps once per process
    per optimizer step (checked against values computed here); both replicas end identical.
  * bf16-accumulation.accel: the loss falls under bf16 autocast with 4 accumulation
    micro-batches; metrics.jsonl and the TensorBoard event file (read with the independent
    reader tests/runtime/tensorboard_reader.py) hold the same loss, lr and grad_norm series.
  * resume.accel: a run SIGKILLed after its checkpoint at step 50 and continued with
    `--resume auto` ends with weights identical to an uninterrupted run; checkpoints come every
    25 steps and at each epoch's end, and total_limit keeps the newest 3.

Each runs in its own working directory (the specs' output paths are relative to it).
Usage: examples_test.py ACCELRUN SPECS_DIR TENSORBOARD_READER WORKDIR
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

from e2e_support import rank_digests, read_jsonl, read_safetensors, run


def linear_lr(base, warmup, total, step):
    if step < warmup:
        return base * step / max(1, warmup)
    return base * max(0.0, (total - step) / max(1, total - warmup))


def check_torchscript(accelrun, specs, workdir):
    cwd = os.path.join(workdir, "torchscript")
    os.makedirs(cwd)
    run([accelrun, os.path.join(specs, "torchscript.accel")], cwd=cwd)
    out = os.path.join(cwd, "runs", "torchscript")
    records = read_jsonl(os.path.join(out, "metrics.jsonl"))
    lines = [r for r in records if "loss" in r]
    evals = [r for r in records if "eval_loss" in r]
    assert [l["step"] for l in lines] == [1, 10, 20, 30, 40, 50, 60], [l["step"] for l in lines]
    # 100 held-out rows on 2 processes in batches of 25: 2 rounds of 2 batches, nothing padded;
    # evaluated every 20 steps with loss and accuracy over all of them.
    assert [e["step"] for e in evals] == [20, 40, 60], evals
    assert evals[-1]["eval_accuracy"] >= 0.8 and evals[-1]["eval_loss"] < evals[0]["eval_loss"], evals
    assert all(round(e["eval_accuracy"] * 100) == e["eval_accuracy"] * 100 for e in evals), "not k/100"
    # 2 processes, batches not split: the scheduler steps twice per optimizer step, over a
    # schedule of 2 x 60 steps with 2 x 6 of warmup; step k trains with the rate after 2(k-1).
    for line in lines:
        expected = linear_lr(0.01, 12, 120, 2 * (line["step"] - 1))
        assert abs(line["lr"] - expected) < 1e-9, f"step {line['step']}: lr {line['lr']}, expected {expected}"
    assert lines[-1]["loss"] < lines[0]["loss"] / 3, f"loss did not fall: {lines[0]['loss']} -> {lines[-1]['loss']}"
    weights = read_safetensors(os.path.join(out, "model.safetensors"))
    expected_names = ["head.bias", "head.weight", "hidden.weight", "norm.bias",
                      "norm.num_batches_tracked", "norm.running_mean", "norm.running_var", "norm.weight"]
    assert sorted(weights) == expected_names, sorted(weights)
    assert weights["norm.num_batches_tracked"][2] == [60], weights["norm.num_batches_tracked"]
    digests = rank_digests(out, 2)
    assert digests[0] == digests[1], digests
    print(f"torchscript: loss {lines[0]['loss']:.4f} -> {lines[-1]['loss']:.4f}, schedule as Accelerate steps it, "
          f"held-out accuracy {evals[-1]['eval_accuracy']:.2f}")


def check_bf16_accumulation(accelrun, specs, reader, workdir):
    cwd = os.path.join(workdir, "bf16")
    os.makedirs(cwd)
    run([accelrun, os.path.join(specs, "bf16-accumulation.accel")], cwd=cwd)
    out = os.path.join(cwd, "runs", "bf16-accumulation")
    lines = read_jsonl(os.path.join(out, "metrics.jsonl"))
    assert lines[-1]["step"] == 80 and lines[-1]["loss"] < lines[0]["loss"] / 4, lines
    assert all("grad_norm" in l for l in lines), lines[0]
    events = os.path.join(out, "logs", "bf16_accumulation")
    decoded = subprocess.run([sys.executable, reader, events], capture_output=True, text=True, check=True).stdout
    series = {}
    for row in decoded.splitlines():
        tag, step, value = row.split("\t")[:3]
        series.setdefault(tag, []).append((int(step), float(value)))
    for tag in ("loss", "lr", "grad_norm"):
        from_jsonl = [(l["step"], l[tag]) for l in lines]
        from_events = series.get(tag, [])
        assert [s for s, _ in from_events] == [s for s, _ in from_jsonl], (tag, from_events)
        for (_, a), (_, b) in zip(from_events, from_jsonl):
            assert abs(a - b) <= 1e-6 * max(1.0, abs(b)), (tag, a, b)  # TensorBoard stores float32
    print(f"bf16-accumulation: loss {lines[0]['loss']:.4f} -> {lines[-1]['loss']:.4f}; TensorBoard = metrics.jsonl")


def check_resume(accelrun, specs, workdir):
    spec = os.path.join(specs, "resume.accel")
    straight = os.path.join(workdir, "resume-straight")
    os.makedirs(straight)
    run([accelrun, spec], cwd=straight)
    interrupted = os.path.join(workdir, "resume-killed")
    os.makedirs(interrupted)
    launcher = subprocess.Popen([accelrun, spec], cwd=interrupted, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, start_new_session=True)
    deadline = time.time() + 240
    for line in launcher.stdout:
        sys.stdout.write(line)
        if "saved at step 50" in line:
            os.killpg(launcher.pid, signal.SIGKILL)
            break
        assert time.time() < deadline, "no checkpoint at step 50"
    launcher.wait(timeout=60)
    assert launcher.returncode != 0, "the run finished before it was killed"
    resumed = run([accelrun, spec, "--resume", "auto"], cwd=interrupted)
    # The kill lands a few steps after the save; a later checkpoint may have completed by then.
    found = re.search(r"resumed from \S+ at step (\d+)", resumed.stdout)
    assert found and int(found.group(1)) >= 50, resumed.stdout
    a = read_safetensors(os.path.join(straight, "runs", "resume", "model.safetensors"))
    b = read_safetensors(os.path.join(interrupted, "runs", "resume", "model.safetensors"))
    assert a == b, "the resumed run's weights differ from the uninterrupted run's"
    # 1024 samples / (2 x 32) = 16 steps per epoch: saves at 16, 25, 32, 48, 50, 64, 75, 80, 96, 100
    # (checkpoint_0 .. checkpoint_9); total_limit = 3 keeps the newest three.
    kept = sorted(os.listdir(os.path.join(straight, "runs", "resume", "checkpoints")))
    assert kept == ["checkpoint_7", "checkpoint_8", "checkpoint_9"], kept
    with open(os.path.join(straight, "runs", "resume", "checkpoints", "checkpoint_8", "trainer_state.json")) as f:
        assert json.load(f)["step"] == 96
    print("resume: killed after step 50, resumed, weights identical; epoch and step checkpoints rotated")


def main():
    accelrun, specs, reader, workdir = sys.argv[1:5]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    check_torchscript(accelrun, specs, workdir)
    check_bf16_accumulation(accelrun, specs, reader, workdir)
    check_resume(accelrun, specs, workdir)


if __name__ == "__main__":
    main()
