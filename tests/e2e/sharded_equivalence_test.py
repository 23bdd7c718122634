#!/usr/bin/env python3
"""The sharded engine (ZeRO stages 1-3, FSDP) against DDP, through accelrun on real processes.
Every run trains the same model on the same seeded data with the same global batch (64) per
step; a sharded run on N ranks must end within float32 reduction-order noise of DDP on N ranks:

  * stages 1, 2 and 3 (resharding after forward or not), on 2 and 4 ranks;
  * the wrap policies no_wrap, transformer_based (`Linear`, `TransformerEncoderLayer`) and
    size_based, which change how parameters are laid out and padded into shards;
  * hybrid sharding: two machines (two accelrun launchers on this host) of two processes;
  * plain SGD (no momentum), where the update is the gradient itself, and Adam;
  * reductions overlapped with backward and coalesced into buckets (one per unit, two, or all
    in one), prefetched gathers, and persistent (never freed) units at stage 3;
  * gradient accumulation (no_sync micro-batches) at stage 3;
  * bf16 autocast at stage 3, within BF16_TOLERANCE;
  * activation checkpointing of the transformer's encoder layers at stage 3;
  * cpu_ram_efficient_loading: only rank 0 builds the weights' values, the others their shapes
    (stage 3: each receives its shards alone; hybrid: every replica too; stages 1-2: the whole
    units), with the built-in models and with a TorchScript model loaded onto the meta device
    by the other ranks (its batch-norm buffers broadcast from rank 0).

Each stage also runs with the engine's test hook ACCEL_TEST_FAULT: `grad_scale` (the averaged
gradient x16) and `shard_offset` (each gathered shard lands one shard further on) must land far
outside the tolerance, so the tolerance is proven to catch a scale or an offset error. Adam is
blind to a gradient's scale (it divides by the gradient's own magnitude), so the scale fault is
run with SGD.

Usage: sharded_equivalence_test.py ACCELC ACCELRUN WORKDIR
"""
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(__file__))
from e2e_support import max_abs_difference, rank_digests, read_safetensors  # noqa: E402
from sharding_support import compile_plan, run_nodes  # noqa: E402

SPEC = """job sharded {{
  compute {{ distributed_type = MULTI_CPU; num_processes = {procs}{machines} }}
  accelerator {{
    seed = 5
    init_process_group {{ timeout = 60s }}
    dataloader_config {{ use_seedable_sampler = true }}
    {accumulation}
  }}
  model = {model}
  data = {data}
  train {{
    steps = 12{loss}
    optimizer = {optimizer} {{ lr = {lr} }}
    lr_schedule = linear
    warmup_steps = 2
    max_grad_norm = 5.0
    log_every = 12
  }}
  output {{ dir = "{out}" }}
}}
"""

SPECS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "specs")
TOLERANCE = 1e-6
BF16_TOLERANCE = 1e-5
# A fault must move the weights by far more than the tolerance.
FAULT_FLOOR = 1e-4

# 8*32+32 + 32*32+32 + 32*2+2 = 1410 parameters: no layer's size is a multiple of 4, so every
# unit's shards are padded.
MLP = "MLP { inputs = 8; hidden = [32, 31]; outputs = 2 }"
TRANSFORMER = "Transformer { inputs = 8; d_model = 16; heads = 2; layers = 2; feedforward = 32; outputs = 2 }"


def train(accelc, accelrun, workdir, name, procs=2, nodes=1, model=MLP, optimizer="SGD", lr=0.05, fault=None,
          accumulate=1, bf16=False, says=None, data=None, **sharding):
    """`data`: a CSV file of features and a `label` column to classify, else synthetic regression."""
    out = os.path.join(workdir, name)
    machines = ""
    if nodes > 1:
        machines = f"; num_machines = {nodes}; main_process_ip = \"127.0.0.1\"; main_process_port = 29500"
    accumulation = ""
    if accumulate > 1:
        accumulation = f"gradient_accumulation_plugin = GradientAccumulationPlugin {{ num_steps = {accumulate} }}"
    if bf16:
        accumulation += "\n    mixed_precision = bf16"
    batch = 64 // procs // accumulate
    loss = ""
    if data:
        loss = "\n    loss = cross_entropy"
        data = f'CsvDataset {{ path = "{data}"; target_columns = ["label"]; batch_size = {batch} }}'
    else:
        data = f"SyntheticRegression {{ samples = 549; features = 8; batch_size = {batch}; seed = 9 }}"
    text = SPEC.format(procs=procs, machines=machines, model=model, data=data, loss=loss,
                       optimizer=optimizer, lr=lr, out=out, accumulation=accumulation)
    plan = compile_plan(accelc, text, out, **sharding)
    env = dict(os.environ)
    env.pop("ACCEL_TEST_FAULT", None)
    if fault:
        env["ACCEL_TEST_FAULT"] = fault
    output = run_nodes(accelrun, plan, out, nodes, env=env)
    if sharding.get("stage", 0) > 0:
        assert f"sharded data parallel, stage {sharding['stage']}" in output, f"{name}: the engine did not run"
    if says:
        assert says in output, f"{name}: the run does not say `{says}`:\n{output[-3000:]}"
    digests = rank_digests(out, procs // nodes) if nodes > 1 else rank_digests(out, procs)
    assert len(set(digests)) == 1, f"{name}: the ranks' weights differ: {digests}"
    return read_safetensors(os.path.join(out, "model.safetensors"))


def main():
    accelc, accelrun, workdir = sys.argv[1:4]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)

    def t(*args, **kwargs):
        return train(accelc, accelrun, workdir, *args, **kwargs)

    ddp = {
        ("SGD", 2): t("ddp-sgd-2"),
        ("SGD", 4): t("ddp-sgd-4", procs=4),
        ("Adam", 2): t("ddp-adam-2", optimizer="Adam", lr=0.01),
        ("Adam", 4): t("ddp-adam-4", procs=4, optimizer="Adam", lr=0.01),
    }
    # name: (optimizer, ranks, machines, sharding)
    cases = {
        "stage 1, 2 ranks, no_wrap": ("SGD", 2, 1, dict(stage=1)),
        "stage 2, 2 ranks, size_based": ("SGD", 2, 1, dict(stage=2, wrap_policy="size_based", min_num_params=500)),
        "stage 3, 2 ranks, Linear units, prefetched": ("SGD", 2, 1, dict(stage=3, wrap_policy="transformer_based",
                                                                        transformer_layer_cls_to_wrap=["Linear"],
                                                                        overlap_comm=True, forward_prefetch=True)),
        "stage 1, 4 ranks, Linear units, overlapped": ("SGD", 4, 1, dict(stage=1, wrap_policy="transformer_based",
                                                                        transformer_layer_cls_to_wrap=["Linear"],
                                                                        overlap_comm=True, reduce_bucket_size=1)),
        # Units of 288, 1024 and 64 elements: the first and last persist, the middle one is freed.
        "stage 3 persistent, 2 ranks, Linear units": ("SGD", 2, 1, dict(stage=3, wrap_policy="transformer_based",
                                                                       transformer_layer_cls_to_wrap=["Linear"],
                                                                       param_persistence_threshold=300,
                                                                       overlap_comm=True, forward_prefetch=True)),
        "stage 2, 4 ranks, no_wrap": ("SGD", 4, 1, dict(stage=2)),
        "stage 3 keep, 4 ranks, size_based": ("SGD", 4, 1, dict(stage=3, reshard_after_forward=False,
                                                               wrap_policy="size_based", min_num_params=100)),
        "stage 3, 2x2 hybrid, Linear units": ("SGD", 4, 2, dict(stage=3, hybrid=True, wrap_policy="transformer_based",
                                                               transformer_layer_cls_to_wrap=["Linear"])),
        "Adam stage 1, 2 ranks": ("Adam", 2, 1, dict(stage=1)),
        "Adam stage 2, 4 ranks, Linear units, 2 buckets": ("Adam", 4, 1, dict(stage=2, wrap_policy="transformer_based",
                                                                             transformer_layer_cls_to_wrap=["Linear"],
                                                                             overlap_comm=True, reduce_bucket_size=1100,
                                                                             allgather_bucket_size=1100)),
        "Adam stage 3, 2 ranks, size_based": ("Adam", 2, 1, dict(stage=3, wrap_policy="size_based",
                                                                min_num_params=100)),
        "Adam stage 3 keep, 2x2 hybrid": ("Adam", 4, 2, dict(stage=3, reshard_after_forward=False, hybrid=True)),
        "stage 3, 4 ranks, rank 0 loads, Linear units": ("SGD", 4, 1, dict(stage=3, cpu_ram_efficient_loading=True,
                                                                         wrap_policy="transformer_based",
                                                                         transformer_layer_cls_to_wrap=["Linear"])),
        "stage 3, 2x2 hybrid, rank 0 loads, persistent": ("SGD", 4, 2, dict(stage=3, hybrid=True,
                                                                          cpu_ram_efficient_loading=True,
                                                                          wrap_policy="transformer_based",
                                                                          transformer_layer_cls_to_wrap=["Linear"],
                                                                          param_persistence_threshold=300)),
        "Adam stage 2, 2 ranks, rank 0 loads": ("Adam", 2, 1, dict(stage=2, cpu_ram_efficient_loading=True)),
    }
    failures = []

    def compare(name, reference, weights, far=False, tolerance=TOLERANCE):
        difference = max_abs_difference(reference, weights)
        print(f"{name:50s} max |w - w_ddp| = {difference:.3g}", flush=True)
        if far and difference < FAULT_FLOOR:
            failures.append(f"{name}: the fault moved the weights by only {difference:.3g}: the test is blind to it")
        if not far and difference > tolerance:
            failures.append(f"{name}: {difference:.3g} > {tolerance}")

    for i, (name, (optimizer, procs, nodes, sharding)) in enumerate(cases.items()):
        lr = 0.01 if optimizer == "Adam" else 0.05
        compare(name, ddp[(optimizer, procs)],
                t(f"case{i}", procs=procs, nodes=nodes, optimizer=optimizer, lr=lr, **sharding))

    # The built-in transformer, one unit per encoder layer (20 parameter tensors, attention's
    # packed projections): SGD, for the reason equivalence_test.py gives.
    transformer_ddp = t("ddp-transformer", model=TRANSFORMER)
    compare("transformer stage 3, encoder layer units", transformer_ddp,
            t("transformer3", model=TRANSFORMER, stage=3, wrap_policy="transformer_based",
              transformer_layer_cls_to_wrap=["TransformerEncoderLayer"]))
    # The same with each encoder layer recomputed in backward (activation checkpointing).
    compare("transformer stage 3, encoder layers recomputed", transformer_ddp,
            t("transformer3-recomputed", model=TRANSFORMER, stage=3, wrap_policy="transformer_based",
              transformer_layer_cls_to_wrap=["TransformerEncoderLayer"], activation_checkpointing=True,
              says="activation checkpointing: 2 of 4 forward blocks recomputed in backward "
                   "(encoder.layers.0, encoder.layers.1)"))

    # Rank 0 alone builds the transformer's values; the others receive their encoder layers' shards.
    compare("transformer stage 3, rank 0 loads", transformer_ddp,
            t("transformer3-rank0", model=TRANSFORMER, stage=3, wrap_policy="transformer_based",
              transformer_layer_cls_to_wrap=["TransformerEncoderLayer"], cpu_ram_efficient_loading=True,
              says="cpu_ram_efficient_loading: only rank 0 holds the model's values; the other ranks built "
                   "its shapes and receive only their shards of rank 0's weights"))
    # A TorchScript classifier with batch norm (specs/models): the other ranks load it onto the
    # meta device, so its parameters and its buffers come from rank 0.
    classifier = (f'TorchScript {{ path = "{os.path.join(SPECS, "models", "classifier.pt")}" }}')
    blobs = os.path.join(SPECS, "data", "blobs.csv")
    compare("TorchScript stage 3, 4 ranks, rank 0 loads",
            t("ddp-torchscript", procs=4, model=classifier, optimizer="Adam", lr=0.01, data=blobs),
            t("torchscript3-rank0", procs=4, model=classifier, optimizer="Adam", lr=0.01, data=blobs, stage=3,
              cpu_ram_efficient_loading=True))

    # Gradient accumulation: 4 micro-batches of 8 per rank, the first 3 under no_sync (whole
    # gradients accumulate locally; stage 3 releases its units after each backward).
    compare("stage 3, 4 x 8 accumulated", t("ddp-accumulated", accumulate=4),
            t("accumulated3", accumulate=4, stage=3, wrap_policy="transformer_based",
              transformer_layer_cls_to_wrap=["Linear"]))

    # bf16 autocast: the forward runs the same bf16 operations on the same gathered weights, the
    # gradients and the update stay fp32, so the fp32 bound holds; BF16_TOLERANCE leaves room
    # for a bf16 rounding step should a reduction order ever differ.
    compare("bf16, stage 3, 4 ranks, Linear units", t("ddp-bf16", procs=4, bf16=True),
            t("bf16-3", procs=4, bf16=True, stage=3, wrap_policy="transformer_based",
              transformer_layer_cls_to_wrap=["Linear"]), tolerance=BF16_TOLERANCE)

    # The faults: each stage's gradient scale and shard placement.
    for stage in (1, 2, 3):
        compare(f"stage {stage} with a x16 gradient (must fail)", ddp[("SGD", 2)],
                t(f"scale{stage}", stage=stage, fault="grad_scale"), far=True)
        compare(f"stage {stage} with shards misplaced (must fail)", ddp[("SGD", 2)],
                t(f"offset{stage}", stage=stage, fault="shard_offset"), far=True)
    compare("Adam stage 3 with shards misplaced (must fail)", ddp[("Adam", 2)],
            t("offset-adam", optimizer="Adam", lr=0.01, stage=3, fault="shard_offset"), far=True)

    assert not failures, "\n".join(failures)
    print("sharded equivalence: every stage matches DDP; every fault is caught")


if __name__ == "__main__":
    main()
