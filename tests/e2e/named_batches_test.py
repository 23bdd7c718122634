#!/usr/bin/env python3
"""Trains the examples of models that compute their own loss from named batches, through
accelrun on 2 processes, and checks what each promises:

  * causal_lm: a byte-level causal language model (examples/causal_lm/make_model.py, scripted
    and saved here) on the bytes of a text Debian ships (/usr/share/common-licenses/GPL-3,
    tokenized here to a uint16 token stream). The training loss and the held-out perplexity
    fall; each evaluation's perplexity is exp of its loss; and the last evaluation matches the
    loss PyTorch computes here from the saved weights over the held-out windows, which checks
    the token windows, the shifted targets and the gathering across processes together.
  * named_classifier: a classifier whose forward takes one dict (input_ids, attention_mask and
    labels, fed by the data's `label` column through `model.inputs`) learns from a directory of
    .npy columns; its loss falls and its own `accuracy` metric is evaluated. With the mapping
    removed, the run stops before the first step with an error naming the signature and the
    columns.

Needs torch and numpy: run with the Python of .venv (python/requirements.txt).
Usage: named_batches_test.py ACCELRUN EXAMPLES_DIR WORKDIR
"""
import math
import os
import shutil
import sys

import numpy
import torch
import torch.nn.functional as F

from e2e_support import rank_digests, read_jsonl, read_safetensors, run

CORPUS = "/usr/share/common-licenses/GPL-3"
BLOCK, HELD_OUT = 32, 64


def prepare(examples, name, workdir):
    source = os.path.join(examples, name)
    cwd = os.path.join(workdir, name)
    os.makedirs(cwd)
    shutil.copy(os.path.join(source, name + ".accel"), cwd)
    return source, cwd


def held_out_loss(model_path, weights_path, tokens_path):
    """The mean next-byte cross entropy of the saved weights over the held-out windows."""
    model = torch.jit.load(model_path)
    state = {name: torch.tensor(values, dtype=torch.float32).reshape(shape)
             for name, (dtype, shape, values) in read_safetensors(weights_path).items()}
    model.load_state_dict(state)
    model.eval()
    ids = torch.from_numpy(numpy.fromfile(tokens_path, dtype=numpy.uint16).astype(numpy.int64))
    windows = (len(ids) - 1) // BLOCK
    inputs = ids[: windows * BLOCK].reshape(windows, BLOCK)[-HELD_OUT:]
    targets = ids[1 : windows * BLOCK + 1].reshape(windows, BLOCK)[-HELD_OUT:]
    with torch.no_grad():
        logits = model(inputs)["logits"]
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1)).item()


def check_causal_lm(accelrun, examples, workdir):
    source, cwd = prepare(examples, "causal_lm", workdir)
    run([sys.executable, os.path.join(source, "make_model.py"), os.path.join(cwd, "lm.pt"), "--block-size", str(BLOCK)])
    run([sys.executable, os.path.join(source, "tokenize_bytes.py"), CORPUS, os.path.join(cwd, "tokens.bin")])
    run([accelrun, os.path.join(cwd, "causal_lm.accel")], cwd=cwd)
    out = os.path.join(cwd, "runs", "causal_lm")
    records = read_jsonl(os.path.join(out, "metrics.jsonl"))
    losses = [r for r in records if "loss" in r]
    evals = [r for r in records if "eval_loss" in r]
    assert [e["step"] for e in evals] == [50, 100, 150], evals
    assert losses[-1]["loss"] < 0.7 * losses[0]["loss"], f"loss did not fall: {losses[0]} -> {losses[-1]}"
    for e in evals:
        assert abs(e["eval_perplexity"] - math.exp(e["eval_loss"])) <= 1e-9 * e["eval_perplexity"], e
        assert 0 <= e["eval_accuracy"] <= 1, e
    # Uniform guessing over 256 bytes has perplexity 256.
    assert evals[0]["eval_perplexity"] < 256, evals[0]
    perplexities = [e["eval_perplexity"] for e in evals]
    assert perplexities == sorted(perplexities, reverse=True), f"perplexity rose: {perplexities}"
    assert perplexities[-1] < 0.9 * perplexities[0], f"perplexity did not fall: {perplexities}"
    assert evals[-1]["eval_accuracy"] > evals[0]["eval_accuracy"], evals
    reference = held_out_loss(os.path.join(cwd, "lm.pt"), os.path.join(out, "model.safetensors"),
                              os.path.join(cwd, "tokens.bin"))
    assert abs(reference - evals[-1]["eval_loss"]) < 1e-4 * reference, (reference, evals[-1])
    digests = rank_digests(out, 2)
    assert digests[0] == digests[1], digests
    print(f"causal_lm: loss {losses[0]['loss']:.3f} -> {losses[-1]['loss']:.3f}, held-out perplexity "
          f"{evals[0]['eval_perplexity']:.2f} -> {evals[-1]['eval_perplexity']:.2f} (PyTorch: "
          f"{math.exp(reference):.2f})")


def check_named_classifier(accelrun, examples, workdir):
    source, cwd = prepare(examples, "named_classifier", workdir)
    run([sys.executable, os.path.join(source, "make_model.py"), os.path.join(cwd, "classifier.pt")])
    run([sys.executable, os.path.join(source, "make_data.py"), os.path.join(cwd, "data")])
    run([accelrun, os.path.join(cwd, "named_classifier.accel")], cwd=cwd)
    out = os.path.join(cwd, "runs", "named_classifier")
    records = read_jsonl(os.path.join(out, "metrics.jsonl"))
    losses = [r for r in records if "loss" in r]
    evals = [r for r in records if "eval_loss" in r]
    assert [e["step"] for e in evals] == [40, 80], evals
    assert losses[-1]["loss"] < 0.5 * losses[0]["loss"], f"loss did not fall: {losses[0]} -> {losses[-1]}"
    assert evals[-1]["eval_accuracy"] >= 0.9, evals
    print(f"named_classifier: loss {losses[0]['loss']:.3f} -> {losses[-1]['loss']:.3f}, held-out accuracy "
          f"{evals[-1]['eval_accuracy']:.3f}")

    # Without the mapping, the model's dict lacks `labels`: refused before the first step.
    spec = os.path.join(cwd, "named_classifier.accel")
    with open(spec) as f:
        text = f.read()
    unmapped = os.path.join(cwd, "unmapped.accel")
    with open(unmapped, "w") as f:
        f.write(text.replace('inputs = { label: "labels" }', "").replace("runs/named_classifier", "runs/unmapped"))
    result = run([accelrun, unmapped], cwd=cwd, check=False)
    assert result.returncode != 0, "a model missing its labels trained"
    output = result.stdout + result.stderr
    expected = ("forward(batch: Dict[str, Tensor]) fails on the first 32 samples (columns `attention_mask` "
                "uint8 [32, 16], `input_ids` int64 [32, 16], `label` int64 [32])")
    assert expected in output, output
    assert "labels" in output, output
    assert not os.path.exists(os.path.join(cwd, "runs", "unmapped", "metrics.jsonl")) or not any(
        "loss" in r for r in read_jsonl(os.path.join(cwd, "runs", "unmapped", "metrics.jsonl"))), "it trained"


def main():
    accelrun, examples, workdir = sys.argv[1:4]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    torch.set_num_threads(1)
    check_causal_lm(accelrun, examples, workdir)
    check_named_classifier(accelrun, examples, workdir)


if __name__ == "__main__":
    main()
