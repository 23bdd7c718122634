#!/usr/bin/env python3
"""`state_dict_type = sharded` checkpoints through accelrun: every rank writes its own slices, a
resume on any world size reads its own ranges back.

For stage 3 (Linear units) and stage 1, a run saved on 4 ranks, resumed on 2, then on 1 (each
leg resuming the previous leg's last checkpoint) is run twice: once with `full` checkpoints,
once with `sharded` ones. The two chains must agree bit for bit: the final weights of every leg,
and every checkpoint's contents: `accelrun consolidate` of a sharded checkpoint yields exactly
the full checkpoint's model.safetensors and optimizer.safetensors (the same names, shapes and
bits), and the small files (optimizer.json, scheduler.json, trainer_state.json,
dataloader_0.json, random_states_*.safetensors) are byte-identical.

Against a run that never stopped: on the same world size (4 ranks, stopped and resumed at steps
4 and 8) the final weights are bit-identical. Across world sizes the run that never stopped is
not a reference (the 12 steps wrap the 549-sample epoch, and the last batch of an epoch is
padded per process count, so the samples differ after the wrap); there the reference is the same
4 -> 2 -> 1 chain run with DDP and full checkpoints, which the sharded chain matches within
TOLERANCE: the sharded engine sums the gradients in another order than DDP's reducer (float32
reduction-order noise, not a checkpoint effect, since the full-state chain is bit-identical).

A sharded checkpoint also resumes a DDP (stage 0) run, bit-identical to DDP resuming the full
checkpoint of the same step. The mutation self-check: with the engine's test hook
ACCEL_TEST_FAULT=slice_offset (each range read from a sharded checkpoint lands one element off)
the resumed leg must differ from the full chain's.

Usage: sharded_checkpoint_test.py ACCELC ACCELRUN WORKDIR
"""
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from e2e_support import max_abs_difference, read_safetensors, run  # noqa: E402
from sharding_support import CHAIN_SPEC as SPEC, compile_plan  # noqa: E402

TOLERANCE = 1e-6
CHAIN = [(4, 4), (2, 8), (1, 12)]  # (processes, steps): each leg resumes the previous one's checkpoint
SAME_WORLD = [(4, 4), (4, 8), (4, 12)]
SMALL_FILES = ["optimizer.json", "scheduler.json", "trainer_state.json", "dataloader_0.json"]
STAGE3 = dict(stage=3, wrap_policy="transformer_based", transformer_layer_cls_to_wrap=["Linear"])
STAGE1 = dict(stage=1)


class Chain:
    """A run split into legs; the model after each leg and every checkpoint."""

    def __init__(self, root, legs, shardings, env=None):
        self.root, self.models, self.seconds = root, [], []
        os.makedirs(root)
        for leg, (procs, steps) in enumerate(legs):
            text = SPEC.format(dtype="MULTI_CPU" if procs > 1 else "NO", procs=procs, batch=64 // procs,
                               steps=steps, project=os.path.join(root, "project"), out=os.path.join(root, "out"))
            plan = compile_plan(ACCELC, text, os.path.join(root, f"leg{leg}"), **shardings[leg])
            started = time.monotonic()
            result = run([ACCELRUN, plan] + (["--resume", "auto"] if leg else []), env=env)
            self.seconds.append(time.monotonic() - started)
            self.stdout = result.stdout
            if leg:
                assert f"at step {legs[leg - 1][1]}" in result.stdout, f"{root}: leg {leg} did not resume"
            if shardings[leg].get("stage", 0):
                assert f"sharded data parallel, stage {shardings[leg]['stage']}" in result.stdout
            model = os.path.join(root, f"model_leg{leg}.safetensors")
            shutil.copy(os.path.join(root, "out", "model.safetensors"), model)
            self.models.append(read_safetensors(model))
        checkpoints = os.path.join(root, "project", "checkpoints")
        self.checkpoints = [os.path.join(checkpoints, c) for c in sorted(os.listdir(checkpoints))]


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def compare_checkpoint(sharded, full, failures, name):
    """`sharded` consolidates into exactly `full`'s tensors; the small files are the same bytes."""
    files = os.listdir(sharded)
    if "model.safetensors" in files or "sharded_state.index.json" not in files:
        failures.append(f"{name}: {sharded} is not a sharded checkpoint: {sorted(files)}")
        return
    model, optimizer = sharded + ".model.safetensors", sharded + ".optimizer.safetensors"
    run([ACCELRUN, "consolidate", sharded, "-o", model, "--optimizer", optimizer])
    for ours, theirs in ((model, "model.safetensors"), (optimizer, "optimizer.safetensors")):
        if read_safetensors(ours) != read_safetensors(os.path.join(full, theirs)):
            failures.append(f"{name}: consolidated {os.path.basename(sharded)} differs from the full {theirs}")
    smalls = SMALL_FILES + sorted(f for f in os.listdir(full) if f.startswith("random_states_"))
    for small in smalls:
        if read_bytes(os.path.join(sharded, small)) != read_bytes(os.path.join(full, small)):
            failures.append(f"{name}: {os.path.basename(sharded)}/{small} differs from the full checkpoint's")


def same_bits(a, b):
    return a == b


def main():
    global ACCELC, ACCELRUN
    ACCELC, ACCELRUN, workdir = sys.argv[1:4]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    failures = []
    report = []
    for name, sharding in {"stage 3": STAGE3, "stage 1": STAGE1}.items():
        tag = name.replace(" ", "")
        full = Chain(os.path.join(workdir, tag + "_full"), CHAIN, [dict(sharding, state_dict_type="full")] * 3)
        sharded = Chain(os.path.join(workdir, tag + "_sharded"), CHAIN,
                        [dict(sharding, state_dict_type="sharded")] * 3)
        for leg in range(len(CHAIN)):
            if not same_bits(full.models[leg], sharded.models[leg]):
                difference = max_abs_difference(full.models[leg], sharded.models[leg])
                failures.append(f"{name}: leg {leg} ends {difference:.3g} away from the full-state chain")
        assert len(sharded.checkpoints) == len(full.checkpoints) == 3, sharded.checkpoints
        for ours, theirs in zip(sharded.checkpoints, full.checkpoints):
            compare_checkpoint(ours, theirs, failures, name)
        report.append(f"{name}: 4 -> 2 -> 1 with sharded checkpoints = full-state chain, bit for bit "
                      f"(legs {', '.join(f'{s:.1f}' for s in sharded.seconds)} s; full "
                      f"{', '.join(f'{s:.1f}' for s in full.seconds)} s)")

        if name == "stage 3":
            # Against a run that never stopped: same world size exactly, another within noise.
            never = Chain(os.path.join(workdir, "never_stopped"), [(4, 12)], [dict(sharding, state_dict_type="sharded")])
            same = Chain(os.path.join(workdir, "same_world"), SAME_WORLD, [dict(sharding, state_dict_type="sharded")] * 3)
            if not same_bits(never.models[0], same.models[-1]):
                failures.append(f"{name}: 4 -> 4 -> 4 ends {max_abs_difference(never.models[0], same.models[-1]):.3g} "
                                "away from the run that never stopped")
            ddp = Chain(os.path.join(workdir, "ddp_chain"), CHAIN, [{}] * 3)
            difference = max_abs_difference(ddp.models[-1], sharded.models[-1])
            report.append(f"{name}: 4 -> 4 -> 4 = never stopped, bit for bit; 4 -> 2 -> 1: max |w - w_ddp chain| "
                          f"= {difference:.3g} (tolerance {TOLERANCE})")
            if difference > TOLERANCE:
                failures.append(f"{name}: 4 -> 2 -> 1 ends {difference:.3g} from the DDP chain")

            # A DDP run resumes the sharded checkpoint as it resumes the full one.
            legs = CHAIN[:2]
            ddp_from_full = Chain(os.path.join(workdir, "ddp_from_full"), legs,
                                  [dict(sharding, state_dict_type="full"), {}])
            ddp_from_sharded = Chain(os.path.join(workdir, "ddp_from_sharded"), legs,
                                     [dict(sharding, state_dict_type="sharded"), {}])
            if not same_bits(ddp_from_full.models[1], ddp_from_sharded.models[1]):
                failures.append("a DDP run resumed from the sharded checkpoint differs from one resumed from the "
                                "full checkpoint")
            report.append("stage 3 -> DDP: resuming the sharded checkpoint = resuming the full one, bit for bit")

            # Mutation self-check: a wrong slice offset on load must show.
            env = dict(os.environ, ACCEL_TEST_FAULT="slice_offset")
            broken = Chain(os.path.join(workdir, "slice_offset"), legs,
                           [dict(sharding, state_dict_type="sharded")] * 2, env=env)
            if same_bits(broken.models[1], full.models[1]):
                failures.append("ACCEL_TEST_FAULT=slice_offset went unnoticed: the comparison cannot catch a "
                                "wrong slice offset")
            else:
                report.append("slice_offset fault: resumed leg differs by "
                              f"{max_abs_difference(broken.models[1], full.models[1]):.3g} (caught)")

    print("\n".join(report))
    assert not failures, "\n".join(failures)
    print("sharded checkpoints: written by every rank, resumed on 4, 2 and 1 ranks and by DDP, "
          "consolidated into the full checkpoint")


if __name__ == "__main__":
    main()
