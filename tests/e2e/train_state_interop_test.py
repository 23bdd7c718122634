#!/usr/bin/env python3
"""Everything a training checkpoint holds, read by the independent reader.

accelrun trains a small job on 2 processes with checkpoints; then every file of the newest
checkpoint is read without Accel: safetensors with the reader of checkpoint_interop_test.py
(Debian's python3 + json + numpy, written from the published format), JSON with `json`, each
file's size and SHA-256 against accel_manifest.json, and the cross-file facts a user of these
files relies on: optimizer tensors are named after the parameters they belong to and have their
shapes, and every rank's RNG state is there.

Usage: train_state_interop_test.py ACCELRUN WORKDIR
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "runtime"))
from checkpoint_interop_test import read_safetensors  # noqa: E402  (the independent reader)

SPEC = """job interop {{
  compute {{
    distributed_type = MULTI_CPU
    num_processes = 2
  }}
  accelerator {{
    seed = 3
    init_process_group {{ timeout = 60s }}
    project_config {{ project_dir = "{project}"; automatic_checkpoint_naming = true; total_limit = 2 }}
  }}
  model = MLP {{ inputs = 8; hidden = [16]; outputs = 2 }}
  data = SyntheticRegression {{ samples = 256; features = 8; batch_size = 8; seed = 1 }}
  train {{
    steps = 12
    optimizer = AdamW {{ lr = 0.01 }}
    checkpoint_every = 5
  }}
  output {{ dir = "{out}" }}
}}
"""


def main():
    accelrun, workdir = sys.argv[1:3]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    spec = os.path.join(workdir, "job.accel")
    with open(spec, "w") as f:
        f.write(SPEC.format(project=os.path.join(workdir, "project"), out=os.path.join(workdir, "out")))
    done = subprocess.run([accelrun, spec], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr

    root = os.path.join(workdir, "project", "checkpoints")
    numbers = sorted(int(n.split("_")[1]) for n in os.listdir(root) if n.startswith("checkpoint_") and "." not in n)
    assert len(numbers) == 2, f"total_limit 2 should leave 2 checkpoints, found {numbers}"
    newest = os.path.join(root, f"checkpoint_{numbers[-1]}")

    with open(os.path.join(newest, "accel_manifest.json")) as f:
        manifest = json.load(f)
    listed = manifest["files"]
    present = sorted(n for n in os.listdir(newest) if n != "accel_manifest.json")
    assert sorted(listed) == present, f"manifest lists {sorted(listed)}, folder holds {present}"

    tensors = {}
    for name in present:
        path = os.path.join(newest, name)
        with open(path, "rb") as f:
            data = f.read()
        assert len(data) == listed[name]["size"], f"{name}: size differs from the manifest"
        # Manifest version 2: one SHA-256 per `chunk_size` piece (an empty file has the empty one).
        chunk = manifest["chunk_size"]
        pieces = [data[i:i + chunk] for i in range(0, len(data), chunk)] or [b""]
        digests = [hashlib.sha256(piece).hexdigest() for piece in pieces]
        assert digests == listed[name]["sha256"], f"{name}: SHA-256 of a piece differs"
        if name.endswith(".safetensors"):
            _, arrays, _ = read_safetensors(path, strict_layout=True)
            tensors[name] = arrays
        elif name.endswith(".json"):
            json.loads(data.decode("utf-8"))
        else:
            raise AssertionError(f"{name}: neither safetensors nor JSON (a pickle?)")

    model = tensors["model.safetensors"]
    optimizer = tensors["optimizer.safetensors"]
    for key, value in optimizer.items():
        assert key.startswith("state."), key
        parameter, _, slot = key[len("state."):].rpartition(".")
        assert parameter in model, f"{key}: no parameter `{parameter}` in model.safetensors"
        assert value.shape == model[parameter].shape, f"{key}: shape {value.shape} vs {model[parameter].shape}"
    slots = {key.rpartition(".")[2] for key in optimizer}
    assert {"exp_avg", "exp_avg_sq"} <= slots, f"AdamW slots missing: {slots}"
    for rank in range(2):
        states = tensors[f"random_states_{rank}.safetensors"]
        assert any(array.dtype.name == "uint8" and array.size > 0 for array in states.values()), states.keys()
    print(f"train_state_interop: {len(present)} files of {os.path.basename(newest)} read independently; "
          f"{len(optimizer)} optimizer tensors match {len(model)} parameters")


if __name__ == "__main__":
    main()
