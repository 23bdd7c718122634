#!/usr/bin/env python3
"""accelrun against PyTorch itself: the TorchScript example trained by accelrun on one process
must follow, step by step, the loop an Accelerate user writes in Python:

    model = torch.jit.load("classifier.pt"); model.train()
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    sched = LambdaLR(opt, transformers' linear schedule with warmup)
    for step in range(60):
        x, y = next batch of SeedableRandomSampler(data_seed + epoch) over blobs.csv[:500]
        loss = F.cross_entropy(model(x).float(), y); loss.backward()
        opt.step(); sched.step(); opt.zero_grad()
        every 20 steps: model.eval(); loss and accuracy over blobs.csv[500:]; model.train()

Every step's loss (metrics.jsonl with log_every = 1) must match to 1e-5, every evaluation's
loss to 1e-5 and its accuracy exactly, and the final weights and batch-norm buffers to 1e-5. Needs torch: run with the Python of .venv (python/requirements.txt).
Usage: torchscript_reference_test.py ACCELRUN SPECS_DIR WORKDIR
"""
import os
import shutil
import sys

import torch

from e2e_support import load_blobs, read_jsonl, read_safetensors, run, seedable_rows

STEPS, BATCH, WARMUP, LR, SEED, HELD_OUT, EVAL_EVERY = 60, 25, 6, 0.01, 3, 100, 20


class AttentionClassifier(torch.nn.Module):
    def __init__(self, features: int = 4, tokens: int = 4, width: int = 8, classes: int = 3):
        super().__init__()
        self.tokens, self.width = tokens, width
        self.embed = torch.nn.Linear(features, tokens * width)
        # No bias: attention ignores the key's, so its gradient is rounding noise that Adam would
        # turn into full-size steps, differently in each implementation.
        self.qkv = torch.nn.Linear(width, 3 * width, bias=False)
        self.mlp = torch.nn.Linear(width, width)
        self.head = torch.nn.Linear(width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.embed(x).view(x.shape[0], self.tokens, self.width)
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        h = h + torch.nn.functional.scaled_dot_product_attention(q, k, v)
        h = h + torch.nn.functional.gelu(self.mlp(h), approximate="tanh")
        return self.head(h.mean(dim=1))


def script_attention_model(path):
    torch.manual_seed(4321)
    torch.jit.save(torch.jit.script(AttentionClassifier()), path)


def reference(model_path, specs):
    model = torch.jit.load(model_path)
    model.train()
    features, labels = load_blobs(specs)
    eval_features, eval_labels = features[-HELD_OUT:], labels[-HELD_OUT:]
    features, labels = features[:-HELD_OUT], labels[:-HELD_OUT]
    opt = torch.optim.Adam(model.parameters(), lr=LR)

    def linear(step):
        if step < WARMUP:
            return step / max(1, WARMUP)
        return max(0.0, (STEPS - step) / max(1, STEPS - WARMUP))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, linear)
    losses, evals = [], []
    for step in range(STEPS):
        rows = seedable_rows(step, features.shape[0], BATCH, SEED)
        loss = torch.nn.functional.cross_entropy(model(features[rows]).float(), labels[rows])
        loss.backward()
        opt.step()
        sched.step()
        opt.zero_grad()
        losses.append(loss.item())
        if (step + 1) % EVAL_EVERY == 0:
            model.eval()
            with torch.no_grad():
                out = model(eval_features).float()
                evals.append((torch.nn.functional.cross_entropy(out, eval_labels).item(),
                              out.argmax(1).eq(eval_labels).double().mean().item()))
            model.train()
    state = {name: tensor.detach() for name, tensor in model.state_dict().items()}
    return losses, evals, state


def main():
    accelrun, specs, workdir = sys.argv[1:4]
    attention = sys.argv[4:] == ["attention"]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    model_path = os.path.join(specs, "models", "classifier.pt")
    if attention:
        model_path = os.path.join(workdir, "attention.pt")
        script_attention_model(model_path)
    with open(os.path.join(specs, "torchscript.accel")) as f:
        text = f.read()
    # One process, every step logged, data paths absolute (the copy lives elsewhere).
    text = text.replace("distributed_type = MULTI_CPU", "distributed_type = NO").replace("num_processes = 2", "num_processes = 1")
    text = text.replace("log_every = 10", "log_every = 1")
    text = text.replace('"models/classifier.pt"', '"' + model_path + '"').replace('"data/', '"' + os.path.join(specs, "data") + "/")
    spec = os.path.join(workdir, "torchscript-1proc.accel")
    with open(spec, "w") as f:
        f.write(text)
    run([accelrun, spec], cwd=workdir)
    out = os.path.join(workdir, "runs", "torchscript")
    records = read_jsonl(os.path.join(out, "metrics.jsonl"))
    ours = [r["loss"] for r in records if "loss" in r]
    our_evals = [(r["eval_loss"], r["eval_accuracy"]) for r in records if "eval_loss" in r]
    losses, evals, state = reference(model_path, specs)
    assert len(our_evals) == len(evals) == STEPS // EVAL_EVERY, (our_evals, evals)
    for (a_loss, a_accuracy), (b_loss, b_accuracy) in zip(our_evals, evals):
        assert abs(a_loss - b_loss) < 1e-5, f"eval loss {a_loss} vs PyTorch's {b_loss}"
        assert abs(a_accuracy - b_accuracy) < 1e-12, f"eval accuracy {a_accuracy} vs PyTorch's {b_accuracy}"
    assert len(ours) == STEPS, len(ours)
    worst_loss = max(abs(a - b) for a, b in zip(ours, losses))
    weights = read_safetensors(os.path.join(out, "model.safetensors"))
    assert sorted(weights) == sorted(state), (sorted(weights), sorted(state))
    worst_weight = 0.0
    for name, (_, shape, values) in weights.items():
        expected = state[name].reshape(-1).tolist()
        assert list(state[name].shape) == shape, name
        worst_weight = max([worst_weight] + [abs(a - b) for a, b in zip(values, expected)])
    print(f"losses {ours[0]:.6f} -> {ours[-1]:.6f}, held-out accuracy {our_evals[-1][1]:.2f}; "
          f"max |loss - torch| = {worst_loss:.2g}, "
          f"max |weight - torch| = {worst_weight:.2g}")
    assert worst_loss < 1e-5, f"losses differ from PyTorch's by {worst_loss}"
    assert worst_weight < 1e-5, f"weights differ from PyTorch's by {worst_weight}"


if __name__ == "__main__":
    main()
