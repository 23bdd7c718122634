#!/usr/bin/env python3
"""fp16 loss scaling against the real tools, on the CPU (PyTorch 2 has fp16 autocast and a
GradScaler there; the runtime's scaler does not care which device it scales on).

1. Accelerate's native fp16 (torch.amp.GradScaler). A one-process fp16 job is compiled for a GPU,
   its plan moved to the CPU (device cpu, Gloo, no rehearsal: fp16 stays fp16) and rehashed, and
   trained by accelrun. PyTorch's own loop is the reference:

       with torch.autocast("cpu", torch.float16): out = model(x)
       loss = F.cross_entropy(out.float(), y)
       scaler.scale(loss).backward(); scaler.unscale_(opt); clip_grad_norm_(...)
       scaler.step(opt); scaler.update(); opt.zero_grad()
       if the step was not skipped: sched.step()      (Accelerate's AcceleratedScheduler)

   The first scale (2^30) overflows fp16 and the growth interval is short, so the scale backs
   off, grows and overflows again. Every step's scale, every skipped step, every loss and the
   final weights must match PyTorch's. Then the run resumes from its step-20 checkpoint in another
   folder and must end with the same weights: the scale is part of the checkpoint.
2. DeepSpeed's fp16 (DynamicLossScaler: hysteresis, a window, a minimum). A DEEPSPEED job with
   an fp16 section is moved to the CPU the same way; the overflow of each step, as the run
   reported it, is fed to DeepSpeed's own DynamicLossScaler, whose scale after each step must be
   the run's.

Needs torch and deepspeed: run with the Python of .venv (python/requirements.txt).
Usage: loss_scaling_test.py ACCELC ACCELRUN SPECS_DIR WORKDIR
"""
import json
import os
import shutil
import sys

import torch

from e2e_support import load_blobs, read_jsonl, read_safetensors, run, seedable_rows
from sharding_support import rehash

STEPS, BATCH, LR, SEED, INIT_SCALE, GROWTH_INTERVAL, CLIP = 40, 25, 0.01, 3, 2.0**30, 4, 1.0

SPEC = """job fp16 {{
  compute {{ distributed_type = {dtype}; num_processes = 1{precision} }}
  accelerator {{
    seed = {seed}
    init_process_group {{ timeout = 60s }}
    dataloader_config {{ use_seedable_sampler = true }}
    project_dir = "{out}"
    project_config {{ automatic_checkpoint_naming = true }}
    grad_scaler {{ init_scale = {init_scale}; growth_interval = {growth} }}
  }}
  model = TorchScript {{ path = "{model}" }}
  data = CsvDataset {{ path = "{data}"; target_columns = ["label"]; batch_size = {batch} }}
  train {{
    steps = {steps}
    loss = cross_entropy
    optimizer = Adam {{ lr = {lr} }}
    max_grad_norm = {clip}
    log_every = 1
    checkpoint_every = 10
  }}
  output {{ dir = "{out}" }}
}}
"""

DEEPSPEED_JSON = {
    "train_micro_batch_size_per_gpu": "auto",
    "gradient_accumulation_steps": "auto",
    "gradient_clipping": CLIP,
    "zero_optimization": {"stage": 1},
    "fp16": {"enabled": True, "initial_scale_power": 30, "loss_scale_window": 3, "hysteresis": 2,
             "min_loss_scale": 1},
}


def cpu_plan(accelc, workdir, name, model_path, specs, dtype, ds_config=None):
    out = os.path.join(workdir, name)
    os.makedirs(out)
    spec = os.path.join(out, "job.accel")
    with open(spec, "w") as f:
        # With a DeepSpeed JSON the file's fp16 section owns the precision.
        precision = f"; deepspeed_config {{ hf_ds_config = \"{ds_config}\" }}" if ds_config else "; mixed_precision = fp16"
        f.write(SPEC.format(dtype=dtype, precision=precision, seed=SEED, init_scale=INIT_SCALE, growth=GROWTH_INTERVAL,
                            model=model_path, data=os.path.join(specs, "data", "blobs.csv"),
                            batch=BATCH, steps=STEPS, lr=LR, clip=CLIP, out=os.path.join(out, "run")))
    plan = os.path.join(out, "job.plan.json")
    run([accelc, "build", spec, "-o", plan])
    with open(plan) as f:
        text = f.read()
    assert rehash(text) == text, "the plan's hash does not reproduce; the test cannot edit it"
    data = json.loads(text)
    loop = next(step for step in data["steps"] if step["op"] == "train")
    assert loop["mixed_precision"] == "fp16" and loop["loss_scaling"]["enabled"], loop
    for device, cpu in (('"device": "cuda"', '"device": "cpu"'), ('"backend": "nccl"', '"backend": "gloo"')):
        assert text.count(device) == 1, device
        text = text.replace(device, cpu)
    with open(plan, "w") as f:
        f.write(rehash(text))
    return plan, os.path.join(out, "run"), loop["loss_scaling"]


def our_steps(out):
    records = read_jsonl(os.path.join(out, "metrics.jsonl"))
    losses = {r["step"]: r["loss"] for r in records if "loss" in r}
    scales = {r["step"]: r["loss_scale"] for r in records if "loss_scale" in r}
    skipped = [r["step"] for r in records if r.get("event") == "overflow"]
    return losses, scales, skipped


def reference(model_path, specs):
    model = torch.jit.load(model_path)
    model.train()
    features, labels = load_blobs(specs)
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    scaler = torch.amp.GradScaler("cpu", init_scale=INIT_SCALE, growth_interval=GROWTH_INTERVAL)
    losses, scales, skipped = {}, {}, []
    for step in range(STEPS):
        rows = seedable_rows(step, features.shape[0], BATCH, SEED)
        with torch.autocast("cpu", dtype=torch.float16):
            out = model(features[rows])
        loss = torch.nn.functional.cross_entropy(out.float(), labels[rows])
        scales[step + 1] = scaler.get_scale()
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        scaler.step(opt)
        scaler.update()
        if scaler.get_scale() < scales[step + 1]:
            skipped.append(step + 1)
        opt.zero_grad()
        losses[step + 1] = loss.item()
    state = {name: tensor.detach() for name, tensor in model.state_dict().items()}
    return losses, scales, skipped, state


def worst_weight_difference(path, state):
    weights = read_safetensors(path)
    assert sorted(weights) == sorted(state), (sorted(weights), sorted(state))
    worst = 0.0
    for name, (_, shape, values) in weights.items():
        assert list(state[name].shape) == shape, name
        worst = max([worst] + [abs(a - b) for a, b in zip(values, state[name].reshape(-1).tolist())])
    return worst


def check_torch_rule(accelc, accelrun, specs, workdir):
    model_path = os.path.join(specs, "models", "classifier.pt")
    plan, out, scaling = cpu_plan(accelc, workdir, "torch", model_path, specs, "MULTI_GPU")
    assert scaling["rule"] == "torch" and scaling["init_scale"] == INIT_SCALE, scaling
    run([accelrun, plan], cwd=workdir)
    losses, scales, skipped = our_steps(out)
    ref_losses, ref_scales, ref_skipped, state = reference(model_path, specs)
    assert scales == ref_scales, f"loss scales differ from GradScaler's:\n{scales}\n{ref_scales}"
    assert skipped == ref_skipped, f"skipped steps {skipped}, GradScaler skipped {ref_skipped}"
    assert len(skipped) >= 3 and max(scales.values()) > min(scales.values()) * 2, \
        f"the test's scale never moved enough to test anything: {scales}"
    grown = [s for s in range(2, STEPS + 1) if scales[s] > scales[s - 1]]
    assert grown, f"the scale never grew: {scales}"
    worst_loss = max(abs(losses[s] - ref_losses[s]) for s in ref_losses)
    worst_weight = worst_weight_difference(os.path.join(out, "model.safetensors"), state)
    with open(os.path.join(out, "metrics.json")) as f:
        summary = json.load(f)
    assert summary["skipped_steps"] == len(ref_skipped), summary
    print(f"torch rule: {len(skipped)} skipped steps {skipped}, scale {INIT_SCALE:g} -> {scales[STEPS]:g} "
          f"(grew at {grown}); max |loss - torch| = {worst_loss:.2g}, max |weight - torch| = {worst_weight:.2g}")
    assert worst_loss < 1e-5, f"losses differ from PyTorch's by {worst_loss}"
    assert worst_weight < 1e-5, f"weights differ from PyTorch's by {worst_weight}"

    # Resume from step 20 elsewhere: the scale and the skipped count come back with it.
    checkpoint = os.path.join(out, "checkpoints", "checkpoint_1")
    with open(os.path.join(checkpoint, "scaler.json")) as f:
        saved = json.load(f)
    assert saved["scale"] == ref_scales[21], (saved, ref_scales[21])
    resumed = os.path.join(workdir, "torch-resumed")
    run([accelrun, plan, "--output-dir", resumed, "--resume", checkpoint], cwd=workdir)
    with open(os.path.join(resumed, "model.safetensors"), "rb") as a, open(os.path.join(out, "model.safetensors"), "rb") as b:
        assert a.read() == b.read(), "the run resumed at step 20 ends with other weights than the one that never stopped"
    with open(os.path.join(resumed, "metrics.json")) as f:
        assert json.load(f)["skipped_steps"] == len(ref_skipped)
    print("torch rule: resumed from step 20, bit-identical weights")


def check_deepspeed_rule(accelc, accelrun, specs, workdir):
    os.environ.setdefault("DS_ACCELERATOR", "cpu")
    import deepspeed.runtime.fp16.loss_scaler as ds_scaler

    ds_scaler.dist.get_rank = lambda: 0  # it only decides who logs
    config = os.path.join(workdir, "ds_config.json")
    os.makedirs(workdir, exist_ok=True)
    with open(config, "w") as f:
        json.dump(DEEPSPEED_JSON, f)
    model_path = os.path.join(specs, "models", "classifier.pt")
    plan, out, scaling = cpu_plan(accelc, workdir, "deepspeed", model_path, specs, "DEEPSPEED", config)
    assert scaling["rule"] == "deepspeed" and scaling["hysteresis"] == 2 and scaling["growth_interval"] == 3, scaling
    run([accelrun, plan], cwd=workdir)
    losses, scales, skipped = our_steps(out)
    theirs = ds_scaler.DynamicLossScaler(init_scale=2.0**30, scale_window=3, min_scale=1, delayed_shift=2,
                                         consecutive_hysteresis=False)
    for step in range(1, STEPS + 1):
        assert scales[step] == theirs.cur_scale, \
            f"step {step}: the run scaled by {scales[step]}, DeepSpeed's DynamicLossScaler by {theirs.cur_scale}"
        theirs.update_scale(step in skipped)
    hysteresis_held = [s for s in skipped if scales.get(s + 1) == scales[s]]
    assert skipped and hysteresis_held, f"no overflow was held by the hysteresis: {skipped}, {scales}"
    print(f"deepspeed rule: {len(skipped)} skipped steps {skipped} ({len(hysteresis_held)} held by the "
          f"hysteresis), scale 2^30 -> {scales[STEPS]:g}, DynamicLossScaler agrees on all {STEPS}")


def main():
    accelc, accelrun, specs, workdir = sys.argv[1:5]
    specs = os.path.abspath(specs)
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    check_torch_rule(accelc, accelrun, specs, workdir)
    check_deepspeed_rule(accelc, accelrun, specs, workdir)


if __name__ == "__main__":
    main()
