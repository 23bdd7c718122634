#!/usr/bin/env python3
"""Trains a token tagger on ragged named columns through accelrun and checks padding end to end.

The data (written here) is a directory of .npy columns whose rows have 3 to 12 tokens:
`input_ids` and `labels` are stored as concatenated values plus `<name>.offsets.npy`. Each
batch pads `input_ids` with 0 and `labels` with -100 and adds an `attention_mask` built from
`input_ids` (`pad_values`, `attention_mask_from`). The TorchScript model (written here) tags
each token from its own embedding and the masked mean of its row, so its outputs do not depend
on how much padding a batch has, and returns a summed cross entropy that ignores -100.

  * On 2 processes (left padding to a multiple of 4) the loss falls.
  * Each evaluation's `token_accuracy` (per-token predictions padded across processes, then
    gathered) equals the accuracy PyTorch computes here, row by row without padding, from the
    saved weights over the held-out rows.
  * The same job on 1 process (right padding), with the learning rate doubled so that its
    summed gradients match the 2 processes' averaged ones, reports the same token accuracy.

Needs torch and numpy: run with the Python of .venv (python/requirements.txt).
Usage: ragged_batches_test.py ACCELRUN WORKDIR
"""
import os
import shutil
import sys
from typing import Dict

import numpy
import torch
import torch.nn.functional as F

from e2e_support import read_jsonl, read_safetensors, run

ROWS, HELD_OUT, VOCAB, CLASSES = 160, 32, 16, 4


class Tagger(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = torch.nn.Embedding(VOCAB, 16)
        self.head = torch.nn.Linear(16, CLASSES)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                labels: torch.Tensor) -> Dict[str, torch.Tensor]:
        mask = attention_mask.unsqueeze(-1).float()
        tokens = self.embedding(input_ids)
        context = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        logits = self.head(torch.tanh(tokens + context.unsqueeze(1)))
        # A sum, not a mean: batches of different token counts then add up to the same gradient
        # on 1 process as on 2 (where DDP averages the ranks' sums).
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1), ignore_index=-100,
                               reduction="sum") / 64.0
        return {"loss": loss, "logits": logits}


def write_data(directory):
    """ROWS rows of 3 to 12 ids in [1, VOCAB); a token's tag is its id mod CLASSES, a quarter of
    them replaced by a random tag."""
    generator = numpy.random.default_rng(7)
    lengths = generator.integers(3, 13, size=ROWS)
    ids = generator.integers(1, VOCAB, size=int(lengths.sum()))
    tags = ids % CLASSES
    noisy = generator.random(len(tags)) < 0.25
    tags[noisy] = generator.integers(0, CLASSES, size=int(noisy.sum()))
    offsets = numpy.concatenate([[0], numpy.cumsum(lengths)]).astype(numpy.int64)
    os.makedirs(directory)
    numpy.save(os.path.join(directory, "input_ids.npy"), ids.astype(numpy.int64))
    numpy.save(os.path.join(directory, "input_ids.offsets.npy"), offsets)
    numpy.save(os.path.join(directory, "labels.npy"), tags.astype(numpy.int64))
    numpy.save(os.path.join(directory, "labels.offsets.npy"), offsets)
    return ids, tags, offsets


SPEC = """job ragged {{
  compute {{
{compute}
  }}
  accelerator {{
    seed = 1
    init_process_group {{ timeout = 60s }}
  }}
  model = TorchScript {{ path = "tagger.pt" }}
  data = NpyColumns {{
    dir = "data"
    batch_size = {batch_size}
{padding}
    attention_mask_from = "input_ids"
    pad_values = {{ labels: -100 }}
    same_length = ["input_ids", "labels"]
  }}
  train {{
    steps = 60
    optimizer = SGD {{ lr = {lr} }}
    log_every = 10
    eval_samples = {held_out}
    eval_every = 30
  }}
  output {{ dir = "runs/{name}" }}
}}
"""


def train(accelrun, cwd, name, processes):
    if processes == 2:
        compute = "    distributed_type = MULTI_CPU\n    num_processes = 2"
        padding = "    padding_side = LEFT\n    pad_to_multiple_of = 4"
    else:
        compute = "    distributed_type = NO"
        padding = ""
    spec = os.path.join(cwd, name + ".accel")
    with open(spec, "w") as f:
        f.write(SPEC.format(compute=compute, padding=padding, batch_size=8 // processes, lr=0.1 * processes,
                            held_out=HELD_OUT, name=name))
    run([accelrun, spec], cwd=cwd)
    return os.path.join(cwd, "runs", name)


def reference_accuracy(model_path, weights_path, ids, tags, offsets):
    """Token accuracy of the saved weights over the held-out rows, one unpadded row at a time."""
    model = torch.jit.load(model_path)
    state = {name: torch.tensor(values, dtype=torch.float32).reshape(shape)
             for name, (dtype, shape, values) in read_safetensors(weights_path).items()}
    model.load_state_dict(state)
    model.eval()
    right = total = 0
    with torch.no_grad():
        for row in range(ROWS - HELD_OUT, ROWS):
            row_ids = torch.from_numpy(ids[offsets[row]:offsets[row + 1]]).unsqueeze(0)
            row_tags = torch.from_numpy(tags[offsets[row]:offsets[row + 1]]).unsqueeze(0)
            logits = model(row_ids, torch.ones_like(row_ids), row_tags)["logits"]
            right += int((logits.argmax(-1) == row_tags).sum())
            total += row_tags.numel()
    return right / total


def main():
    accelrun, workdir = sys.argv[1:3]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    torch.jit.save(torch.jit.script(Tagger()), os.path.join(workdir, "tagger.pt"))
    ids, tags, offsets = write_data(os.path.join(workdir, "data"))

    accuracies = {}
    for processes in (2, 1):
        out = train(accelrun, workdir, f"ragged{processes}", processes)
        records = read_jsonl(os.path.join(out, "metrics.jsonl"))
        losses = [r["loss"] for r in records if "loss" in r]
        evals = [r for r in records if "eval_loss" in r]
        assert [e["step"] for e in evals] == [30, 60], evals
        assert losses[-1] < 0.7 * losses[0], f"loss did not fall on {processes}: {losses}"
        reference = reference_accuracy(os.path.join(workdir, "tagger.pt"), os.path.join(out, "model.safetensors"),
                                       ids, tags, offsets)
        reported = evals[-1]["eval_token_accuracy"]
        assert abs(reported - reference) < 1e-12, (processes, reported, reference)
        # Better than the 1 in CLASSES of guessing: the tags were learnt.
        assert reported > 0.5, (processes, evals)
        accuracies[processes] = [e["eval_token_accuracy"] for e in evals]
        print(f"{processes} process(es): loss {losses[0]:.3f} -> {losses[-1]:.3f}, held-out token accuracy "
              f"{accuracies[processes]} (PyTorch: {reference:.4f})")
    assert accuracies[1] == accuracies[2], accuracies


if __name__ == "__main__":
    main()
