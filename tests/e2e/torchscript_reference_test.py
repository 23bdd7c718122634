#!/usr/bin/env python3
"""accelrun against PyTorch itself: the TorchScript example trained by accelrun on one process
must follow, step by step, the loop an Accelerate user writes in Python (issue #8):

    model = torch.jit.load("classifier.pt"); model.train()
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    sched = LambdaLR(opt, transformers' linear schedule with warmup)
    for step in range(60):
        x, y = next batch of SeedableRandomSampler(data_seed + epoch) over blobs.csv
        loss = F.cross_entropy(model(x).float(), y); loss.backward()
        opt.step(); sched.step(); opt.zero_grad()

Every step's loss (metrics.jsonl with log_every = 1) must match to 1e-5 and the final
weights and batch-norm buffers to 1e-5. Needs python3-torch (Debian), run with /usr/bin/python3.
Usage: torchscript_reference_test.py ACCELRUN SPECS_DIR WORKDIR
"""
import os
import shutil
import sys

import numpy as np
import torch

from e2e_support import read_jsonl, read_safetensors, run

STEPS, BATCH, WARMUP, LR, SEED = 60, 25, 6, 0.01, 3


def reference(specs):
    model = torch.jit.load(os.path.join(specs, "models", "classifier.pt"))
    model.train()
    table = np.loadtxt(os.path.join(specs, "data", "blobs.csv"), delimiter=",", skiprows=1, dtype=np.float64)
    features = torch.tensor(table[:, :4], dtype=torch.float32)
    labels = torch.tensor(table[:, 4], dtype=torch.int64)
    opt = torch.optim.Adam(model.parameters(), lr=LR)

    def linear(step):
        if step < WARMUP:
            return step / max(1, WARMUP)
        return max(0.0, (STEPS - step) / max(1, STEPS - WARMUP))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, linear)
    losses = []
    n = features.shape[0]
    per_epoch = (n + BATCH - 1) // BATCH
    for step in range(STEPS):
        epoch, index = divmod(step, per_epoch)
        order = torch.randperm(n, generator=torch.Generator().manual_seed(SEED + epoch))
        rows = order[index * BATCH : (index + 1) * BATCH]
        loss = torch.nn.functional.cross_entropy(model(features[rows]).float(), labels[rows])
        loss.backward()
        opt.step()
        sched.step()
        opt.zero_grad()
        losses.append(loss.item())
    state = {name: tensor.detach() for name, tensor in model.state_dict().items()}
    return losses, state


def main():
    accelrun, specs, workdir = sys.argv[1:4]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    with open(os.path.join(specs, "torchscript.accel")) as f:
        text = f.read()
    # One process, every step logged, data paths absolute (the copy lives elsewhere).
    text = text.replace("distributed_type = MULTI_CPU", "distributed_type = NO").replace("num_processes = 2", "num_processes = 1")
    text = text.replace("log_every = 10", "log_every = 1")
    text = text.replace('"models/', '"' + os.path.join(specs, "models") + "/").replace('"data/', '"' + os.path.join(specs, "data") + "/")
    spec = os.path.join(workdir, "torchscript-1proc.accel")
    with open(spec, "w") as f:
        f.write(text)
    run([accelrun, spec], cwd=workdir)
    out = os.path.join(workdir, "runs", "torchscript")
    ours = [line["loss"] for line in read_jsonl(os.path.join(out, "metrics.jsonl"))]
    losses, state = reference(specs)
    assert len(ours) == STEPS, len(ours)
    worst_loss = max(abs(a - b) for a, b in zip(ours, losses))
    weights = read_safetensors(os.path.join(out, "model.safetensors"))
    assert sorted(weights) == sorted(state), (sorted(weights), sorted(state))
    worst_weight = 0.0
    for name, (_, shape, values) in weights.items():
        expected = state[name].reshape(-1).tolist()
        assert list(state[name].shape) == shape, name
        worst_weight = max([worst_weight] + [abs(a - b) for a, b in zip(values, expected)])
    print(f"losses {ours[0]:.6f} -> {ours[-1]:.6f}; max |loss - torch| = {worst_loss:.2g}, "
          f"max |weight - torch| = {worst_weight:.2g}")
    assert worst_loss < 1e-5, f"losses differ from PyTorch's by {worst_loss}"
    assert worst_weight < 1e-5, f"weights differ from PyTorch's by {worst_weight}"


if __name__ == "__main__":
    main()
