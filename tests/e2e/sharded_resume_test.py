#!/usr/bin/env python3
"""Checkpoints of the sharded engine (`state_dict_type = full`) through accelrun: a run saved on
4 ranks, resumed on 2, then on 1, ends within float32 noise of the same chain run with DDP, and
every checkpoint holds the same files, tensor names and shapes as DDP's (the whole model and the
whole AdamW state by parameter name): the engine gathers on save and takes its shards on load,
whatever the world size. (`state_dict_type = sharded` checkpoints: sharded_checkpoint_test.py.)

Usage: sharded_resume_test.py ACCELC ACCELRUN WORKDIR
"""
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(__file__))
from e2e_support import max_abs_difference, read_safetensors, run  # noqa: E402
from sharding_support import CHAIN_SPEC as SPEC, compile_plan  # noqa: E402

TOLERANCE = 1e-6
LEGS = [(4, 4), (2, 8), (1, 12)]  # (processes, steps): each leg resumes the previous one's checkpoint


def chain(accelc, accelrun, root, **sharding):
    os.makedirs(root)
    for leg, (procs, steps) in enumerate(LEGS):
        text = SPEC.format(dtype="MULTI_CPU" if procs > 1 else "NO", procs=procs, batch=64 // procs, steps=steps,
                           project=os.path.join(root, "project"), out=os.path.join(root, "out"))
        plan = compile_plan(accelc, text, os.path.join(root, f"leg{leg}"), **sharding)
        result = run([accelrun, plan] + (["--resume", "auto"] if leg else []))
        if leg:
            assert f"at step {LEGS[leg - 1][1]}" in result.stdout, f"leg {leg} did not resume"
            assert f"written by {LEGS[leg - 1][0]} processes, this run has {procs}" in result.stderr
        if sharding:
            assert f"sharded data parallel, stage {sharding['stage']}" in result.stdout
    checkpoints = os.path.join(root, "project", "checkpoints")
    return os.path.join(root, "out", "model.safetensors"), [os.path.join(checkpoints, c)
                                                           for c in sorted(os.listdir(checkpoints))]


def layout(checkpoint):
    files = sorted(os.listdir(checkpoint))
    tensors = {}
    for name in ("model.safetensors", "optimizer.safetensors"):
        tensors[name] = {k: (v[0], v[1]) for k, v in read_safetensors(os.path.join(checkpoint, name)).items()}
    with open(os.path.join(checkpoint, "optimizer.json")) as f:
        optimizer = f.read()
    return files, tensors, optimizer


def main():
    accelc, accelrun, workdir = sys.argv[1:4]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    ddp_model, ddp_checkpoints = chain(accelc, accelrun, os.path.join(workdir, "ddp"))
    failures = []
    for name, sharding in {"stage 2": dict(stage=2),
                           "stage 3, Linear units": dict(stage=3, wrap_policy="transformer_based",
                                                         transformer_layer_cls_to_wrap=["Linear"])}.items():
        model, checkpoints = chain(accelc, accelrun, os.path.join(workdir, name.replace(" ", "").replace(",", "")),
                                   **sharding)
        difference = max_abs_difference(read_safetensors(ddp_model), read_safetensors(model))
        print(f"{name}, 4 -> 2 -> 1 ranks: max |w - w_ddp| = {difference:.3g}")
        if difference > TOLERANCE:
            failures.append(f"{name}: {difference:.3g} > {TOLERANCE}")
        assert len(checkpoints) == len(ddp_checkpoints) == 3, checkpoints
        for ours, theirs in zip(checkpoints, ddp_checkpoints):
            a, b = layout(ours), layout(theirs)
            if a[:2] != b[:2]:
                failures.append(f"{name}: {ours} holds other files or tensors than DDP's {theirs}")
            if a[2].count('"step"') != b[2].count('"step"'):
                failures.append(f"{name}: {ours}/optimizer.json has other counters than DDP's")
            optimizer = read_safetensors(os.path.join(ours, "optimizer.safetensors"))
            reference = read_safetensors(os.path.join(theirs, "optimizer.safetensors"))
            worst = max_abs_difference(reference, optimizer)
            if worst > 1e-5:
                failures.append(f"{name}: {ours}: optimizer state differs from DDP's by {worst:.3g}")

    assert not failures, "\n".join(failures)
    print("sharded resume: 4 -> 2 -> 1 ranks matches DDP; checkpoints have DDP's layout")


if __name__ == "__main__":
    main()
