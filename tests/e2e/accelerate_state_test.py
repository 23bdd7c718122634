#!/usr/bin/env python3
"""Training state moves between accelrun and the real Accelerate, both ways, and continues as if
it had never moved. The job is the TorchScript example on one process (Adam, a linear schedule
with warmup, batch norm, the seedable sampler), 60 steps, saved at step 30:

  * Accel -> Accelerate: `accelrun export-state` of accelrun's step-30 checkpoint, then
    `accelerator.load_state(folder)` (weights_only loads, as Accelerate does) in a script that
    continues with the same loop: steps 31-60 must give accelrun's losses, and the final
    weights accelrun's, within 1e-5. Torch's generator comes back as accelrun saved it,
    Python's and NumPy's as set_seed(seed) leaves them, and optimizer.bin and scheduler.bin hold
    exactly the keys PyTorch's own state_dict() has.
  * Accelerate -> Accel: a script trains 30 steps with Accelerate, `save_state`s, and trains on
    to step 60; `accelrun import-state` of the saved folder, then `accelrun --resume` of it must
    give the script's losses for steps 31-60 and its final weights, within 1e-5.
  * A pickle that would run code (os.system through __reduce__), saved by torch.save as
    optimizer.bin, is refused by name, and nothing of it runs.

Needs torch and accelerate: run with the Python of .venv (python/requirements.txt).
Usage: accelerate_state_test.py ACCELRUN SPECS_DIR WORKDIR
"""
import os
import random
import shutil
import sys

import numpy as np
import torch
from accelerate import Accelerator
from safetensors.torch import load_file

from e2e_support import load_blobs, read_jsonl, read_safetensors, run, seedable_rows

STEPS, SAVED_AT, BATCH, WARMUP, LR, SEED, HELD_OUT = 60, 30, 25, 6, 0.01, 3, 100
TOLERANCE = 1e-5


def linear(step):
    if step < WARMUP:
        return step / max(1, WARMUP)
    return max(0.0, (STEPS - step) / max(1, STEPS - WARMUP))


def accelerate_job(model_path):
    """The model, optimizer and scheduler of the spec, prepared by Accelerate on the CPU."""
    accelerator = Accelerator(cpu=True)
    model = torch.jit.load(model_path)
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, linear)
    model, optimizer, scheduler = accelerator.prepare(model, optimizer, scheduler)
    return accelerator, model, optimizer, scheduler


def train(job, features, labels, first, last):
    """Steps first..last-1 (0-based) of the spec's loop; their losses."""
    accelerator, model, optimizer, scheduler = job
    losses = []
    for step in range(first, last):
        rows = seedable_rows(step, features.shape[0], BATCH, SEED)
        loss = torch.nn.functional.cross_entropy(model(features[rows]).float(), labels[rows])
        accelerator.backward(loss)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses


def write_spec(specs, workdir, name, model_path):
    with open(os.path.join(specs, "torchscript.accel")) as f:
        text = f.read()
    text = text.replace("distributed_type = MULTI_CPU", "distributed_type = NO").replace("num_processes = 2", "num_processes = 1")
    text = text.replace("log_every = 10", f"log_every = 1\n    checkpoint_every = {SAVED_AT}")
    project = os.path.join(workdir, name, "project")
    text = text.replace("dataloader_config", f'project_config {{ project_dir = "{project}"; automatic_checkpoint_naming = true }}\n    dataloader_config')
    text = text.replace('"models/classifier.pt"', '"' + model_path + '"').replace('"data/', '"' + os.path.join(specs, "data") + "/")
    text = text.replace('"runs/torchscript"', '"' + os.path.join(workdir, name, "out") + '"')
    os.makedirs(os.path.join(workdir, name))
    spec = os.path.join(workdir, name, "job.accel")
    with open(spec, "w") as f:
        f.write(text)
    return spec, project, os.path.join(workdir, name, "out")


def our_losses(out):
    return {r["step"]: r["loss"] for r in read_jsonl(os.path.join(out, "metrics.jsonl")) if "loss" in r}


def worst(a, b):
    return max(abs(x - y) for x, y in zip(a, b))


def worst_weight(path, state):
    weights = read_safetensors(path)
    assert sorted(weights) == sorted(state), (sorted(weights), sorted(state))
    return max(worst(values, state[name].reshape(-1).tolist()) for name, (_, _, values) in weights.items())


def model_state(model):
    return {name: tensor.detach() for name, tensor in model.state_dict().items()}


def check_continued(direction, losses, out, model):
    """The other side's losses for steps SAVED_AT+1..STEPS and its final model against accelrun's
    (metrics.jsonl and model.safetensors of `out`)."""
    ours = our_losses(out)
    loss_gap = worst(losses, [ours[step] for step in range(SAVED_AT + 1, STEPS + 1)])
    weight_gap = worst_weight(os.path.join(out, "model.safetensors"), model_state(model))
    print(f"{direction}: steps {SAVED_AT + 1}-{STEPS} max |loss diff| {loss_gap:.2g}, "
          f"final weights max |diff| {weight_gap:.2g}")
    assert loss_gap < TOLERANCE, f"{direction}: the losses differ by {loss_gap}"
    assert weight_gap < TOLERANCE, f"{direction}: the final weights differ by {weight_gap}"


def accel_to_accelerate(accelrun, specs, workdir, model_path, features, labels):
    spec, project, out = write_spec(specs, workdir, "to_accelerate", model_path)
    run([accelrun, spec], cwd=workdir)
    checkpoint = os.path.join(project, "checkpoints", "checkpoint_0")
    folder = os.path.join(workdir, "to_accelerate", "exported")
    run([accelrun, "export-state", checkpoint, "-o", folder])

    job = accelerate_job(model_path)
    job[0].load_state(folder)
    # Torch's generator as accelrun saved it; Python's and NumPy's as set_seed(data seed) leaves them.
    saved_rng = load_file(os.path.join(checkpoint, "random_states_0.safetensors"))["torch_manual_seed"]
    assert torch.equal(torch.get_rng_state(), saved_rng), "torch's generator state differs from the checkpoint's"
    expected_python, expected_numpy = random.Random(SEED).getstate(), np.random.RandomState(SEED).get_state()
    assert random.getstate() == expected_python, "Python's generator is not set_seed's"
    got_numpy = np.random.get_state()
    assert got_numpy[0] == expected_numpy[0] and (got_numpy[1] == expected_numpy[1]).all() and got_numpy[2:] == expected_numpy[2:]

    # The files hold what PyTorch's own state_dict() holds, key for key.
    reference_model = torch.jit.load(model_path)
    reference_optimizer = torch.optim.Adam(reference_model.parameters(), lr=LR)
    reference_scheduler = torch.optim.lr_scheduler.LambdaLR(reference_optimizer, linear)
    exported_optimizer = torch.load(os.path.join(folder, "optimizer.bin"), weights_only=True)
    exported_scheduler = torch.load(os.path.join(folder, "scheduler.bin"), weights_only=True)
    assert set(exported_optimizer["param_groups"][0]) == set(reference_optimizer.state_dict()["param_groups"][0])
    assert set(exported_scheduler) == set(reference_scheduler.state_dict()), sorted(exported_scheduler)
    assert set(exported_optimizer["state"][0]) == {"step", "exp_avg", "exp_avg_sq"}

    check_continued("accelrun -> Accelerate", train(job, features, labels, SAVED_AT, STEPS), out, job[1])


def accelerate_to_accel(accelrun, specs, workdir, model_path, features, labels):
    spec, project, out = write_spec(specs, workdir, "to_accel", model_path)
    folder = os.path.join(workdir, "to_accel", "saved")
    torch.manual_seed(1234)
    job = accelerate_job(model_path)
    train(job, features, labels, 0, SAVED_AT)
    job[0].save_state(folder)
    theirs = train(job, features, labels, SAVED_AT, STEPS)

    imported = os.path.join(workdir, "to_accel", "imported")
    run([accelrun, "import-state", folder, spec, "-o", imported])
    resumed = run([accelrun, spec, "--resume", imported], cwd=workdir)
    assert f"resumed from {imported} at step {SAVED_AT}" in resumed.stdout + resumed.stderr
    check_continued("Accelerate -> accelrun", theirs, out, job[1])
    return folder, spec


class RunsCode:
    """What an attacker saves: unpickling it calls os.system."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def refuses_code(accelrun, workdir, folder, spec):
    hostile = os.path.join(workdir, "hostile")
    shutil.copytree(folder, hostile)
    marker = os.path.join(workdir, "pwned")
    torch.save({"state": RunsCode(marker), "param_groups": []}, os.path.join(hostile, "optimizer.bin"))
    refused = run([accelrun, "import-state", hostile, spec, "-o", os.path.join(workdir, "never")], check=False)
    assert refused.returncode == 1 and "names `posix.system`, which could run code" in refused.stderr, refused
    assert not os.path.exists(marker) and not os.path.exists(os.path.join(workdir, "never")), "the pickle ran"


def main():
    accelrun, specs, workdir = sys.argv[1:4]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    model_path = os.path.join(specs, "models", "classifier.pt")
    features, labels = load_blobs(specs)
    features, labels = features[:-HELD_OUT], labels[:-HELD_OUT]
    accel_to_accelerate(accelrun, specs, workdir, model_path, features, labels)
    folder, spec = accelerate_to_accel(accelrun, specs, workdir, model_path, features, labels)
    refuses_code(accelrun, workdir, folder, spec)


if __name__ == "__main__":
    main()
