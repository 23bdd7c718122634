#!/usr/bin/env python3
"""save_model's sharding end to end: `output.max_shard_size` smaller than the weights writes
`model-0000k-of-0000n.safetensors` shards and `model.safetensors.index.json`, as Hugging Face
loaders read them, and read back (with this file's own reader) bit-identical to a one-file save
of the same run. Saving again with the default limit into the same folder leaves one
`model.safetensors` and removes the shards and the index.

Usage: sharded_model_test.py ACCELC ACCELRUN SPEC WORKDIR
"""
import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(__file__))
from e2e_support import read_safetensors, run  # noqa: E402


def build_and_run(accelc, accelrun, spec, workdir, name, out, *overrides):
    plan = os.path.join(workdir, f"{name}.plan.json")
    sets = [item for override in ("train.steps=3",) + overrides for item in ("--set", override)]
    run([accelc, "build", spec, *sets, "-o", plan])
    run([accelrun, plan, "--output-dir", out, "--nproc-per-node", "1"])
    with open(os.path.join(out, "metrics.json")) as f:
        return json.load(f)


def main():
    accelc, accelrun, spec, workdir = sys.argv[1:5]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    single = os.path.join(workdir, "single")
    sharded = os.path.join(workdir, "sharded")
    build_and_run(accelc, accelrun, spec, workdir, "single", single)
    # The quickstart MLP's weights are ~21 KB; its 16 KiB layer gets a shard of its own.
    metrics = build_and_run(accelc, accelrun, spec, workdir, "sharded", sharded, "output.max_shard_size=8KB")

    files = sorted(os.listdir(sharded))
    shards = [f for f in files if re.fullmatch(r"model-\d{5}-of-\d{5}\.safetensors", f)]
    assert len(shards) >= 2, f"expected several shards, found {files}"
    assert all(f.endswith(f"-of-{len(shards):05d}.safetensors") for f in shards), shards
    assert "model.safetensors" not in files, "a sharded save also wrote model.safetensors"
    index_path = os.path.join(sharded, "model.safetensors.index.json")
    assert metrics["model_file"] == index_path, f"metrics.json names {metrics['model_file']}"
    with open(index_path) as f:
        index = json.load(f)

    reference = read_safetensors(os.path.join(single, "model.safetensors"))
    assert sorted(index["weight_map"]) == sorted(reference), "the index does not list every tensor"
    assert sorted(set(index["weight_map"].values())) == shards, "the index names other files"
    total = 0
    for shard in shards:
        tensors = read_safetensors(os.path.join(sharded, shard))
        assert len(tensors) > 0, f"{shard} is empty"
        for name, tensor in tensors.items():
            assert index["weight_map"][name] == shard, f"{name} is in {shard}, the index says elsewhere"
            assert tensor == reference[name], f"{name} differs from the one-file save"
            total += 4 * len(tensor[2])
    assert index["metadata"]["total_size"] == total, f"total_size {index['metadata']['total_size']} != {total}"
    print(f"sharded save: {len(shards)} shards and an index, bit-identical to one file ({total} bytes)")

    # The default limit in the same folder: one file again, and nothing of the sharded save left.
    build_and_run(accelc, accelrun, spec, workdir, "again", sharded)
    left = sorted(os.listdir(sharded))
    assert "model.safetensors" in left, left
    assert not [f for f in left if f.startswith("model-") or f.endswith(".index.json")], f"stale files: {left}"
    assert read_safetensors(os.path.join(sharded, "model.safetensors")) == reference
    print("saved again unsharded: the shards and the index are gone")


if __name__ == "__main__":
    main()
