#!/usr/bin/env python3
"""Tensor parallelism (parallelism_config's tp_size) through accelrun on real processes, against
runs without it. Every run trains the same MLP (8 -> 32 -> 30 -> 16 -> 12 -> 2: two
column/row-parallel Linear pairs, then a head every rank holds whole) on the same seeded data with the same global
batch (32) per step, plain SGD in float32. Tensor-parallel ranks read the same batches, so the
data-parallel degree, not the process count, decides the reference:

  * tp 2 alone (2 processes) against 1 process;
  * tp 2 x DDP 2 (stage 0, 4 processes) and tp 2 x dp_shard 2 (FSDP2, 4 processes) against DDP
    on 2 processes;
  * the built-in Transformer's feed-forward blocks, tp 2 against 1 process;
  * Accelerate's tp_hsdp mesh, dp_replicate 2 x dp_shard 2 x tp 2 (8 processes), against DDP on
    4 processes.

The final weights must match within TOLERANCE: the split only changes the order in which
float32 sums are taken (a row-parallel Linear sums two partial products). `model.safetensors`
has the names and shapes of the run without tensor parallelism, and every rank's digest of the
gathered weights is the same. A full-state checkpoint of the 4-process mesh resumes to the same
final weights, on the same mesh and as a DDP run. The test hook ACCEL_TEST_FAULT breaks tensor
parallelism on purpose: `tp_backward` (no all-reduce of the input gradient before a
column-parallel Linear: the second pair's input gradient is then wrong) and `tp_offset` (each
rank keeps the next rank's row-parallel slice) must land far outside the tolerance.

Usage: tensor_parallel_test.py ACCELC ACCELRUN WORKDIR
"""
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(__file__))
from e2e_support import max_abs_difference, rank_digests, read_safetensors, run  # noqa: E402
from sharding_support import compile_plan, run_nodes  # noqa: E402

SPEC = """job tp {{
  compute {{
    distributed_type = {dtype}
    num_processes = {procs}
    use_cpu = true
{compute}  }}
  accelerator {{
    seed = 5
    init_process_group {{ timeout = 60s }}
    dataloader_config {{ use_seedable_sampler = true }}
{accelerator}  }}
  model = {model}
  data = SyntheticRegression {{ samples = 549; features = 8; batch_size = {batch}; seed = 9 }}
  train {{
    steps = 10
    optimizer = SGD {{ lr = 0.05 }}
    lr_schedule = linear
    warmup_steps = 2
    log_every = 10
{train}  }}
  output {{ dir = "{out}" }}
}}
"""

MESH = """    fsdp_config {{
      fsdp_version = 2
      auto_wrap_policy = TRANSFORMER_BASED_WRAP
      transformer_cls_names_to_wrap = ["Linear"]
      state_dict_type = FULL_STATE_DICT
    }}
    parallelism_config {{ dp_replicate_size = {replicate}; dp_shard_size = {shard}; tp_size = {tp} }}
"""

MLP = "MLP { inputs = 8; hidden = [32, 30, 16, 12]; outputs = 2 }"
# Each encoder layer's feed-forward block (16 -> 32 -> 16) split; attention whole on every rank.
TRANSFORMER = "Transformer { inputs = 8; d_model = 16; heads = 2; layers = 2; feedforward = 32; outputs = 2 }"
TOLERANCE = 1e-6
FAULT_FLOOR = 1e-4
GLOBAL_BATCH = 32


def spec_text(out, procs, dp, mesh=None, checkpoints=None, model=MLP):
    compute = accelerator = train = ""
    dtype = "NO" if procs == 1 else "MULTI_CPU"
    if mesh:
        dtype = "FSDP"
        compute = MESH.format(**mesh)
    if checkpoints:
        accelerator = (f'    project_config {{ project_dir = "{out}/project"; automatic_checkpoint_naming = true }}\n')
        train = f"    checkpoint_every = {checkpoints}\n"
    return SPEC.format(dtype=dtype, procs=procs, batch=GLOBAL_BATCH // dp, out=out, compute=compute,
                       accelerator=accelerator, train=train, model=model)


def train(accelc, accelrun, workdir, name, procs, dp, mesh=None, fault=None, checkpoints=None, model=MLP,
          **sharding):
    out = os.path.join(workdir, name)
    plan = compile_plan(accelc, spec_text(out, procs, dp, mesh, checkpoints, model), out, **sharding)
    env = dict(os.environ)
    env.pop("ACCEL_TEST_FAULT", None)
    if fault:
        env["ACCEL_TEST_FAULT"] = fault
    output = run_nodes(accelrun, plan, out, 1, env=env)
    tp = (mesh or {}).get("tp", sharding.get("tensor_parallel", 1))
    if tp > 1:
        assert f"tensor parallel over {tp} ranks" in output, f"{name}: tensor parallelism did not run:\n{output}"
    # A fault may leave the ranks' copies of a whole parameter apart: only the weights rank 0
    # wrote are compared then.
    digests = rank_digests(out, procs)
    assert fault or len(set(digests)) == 1, f"{name}: the ranks' gathered weights differ: {digests}"
    return read_safetensors(os.path.join(out, "model.safetensors")), plan, out


def main():
    accelc, accelrun, workdir = sys.argv[1:4]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    failures = []

    def t(*args, **kwargs):
        return train(accelc, accelrun, workdir, *args, **kwargs)

    def compare(name, reference, weights, far=False):
        assert {k: v[:2] for k, v in reference.items()} == {k: v[:2] for k, v in weights.items()}, \
            f"{name}: model.safetensors differs in names or shapes from the run without tensor parallelism"
        difference = max_abs_difference(reference, weights)
        print(f"{name:48s} max |w - w_ref| = {difference:.3g}", flush=True)
        if far and difference < FAULT_FLOOR:
            failures.append(f"{name}: the fault moved the weights by only {difference:.3g}: the test is blind to it")
        if not far and difference > TOLERANCE:
            failures.append(f"{name}: {difference:.3g} > {TOLERANCE}")

    one, _, _ = t("one", procs=1, dp=1)
    ddp2, _, _ = t("ddp2", procs=2, dp=2)
    ddp4, _, _ = t("ddp4", procs=4, dp=4)

    tp2 = dict(replicate=1, shard=1, tp=2)
    compare("tp 2 (FSDP2 mesh), 2 processes", one, t("tp2", procs=2, dp=1, mesh=tp2)[0])
    compare("tp 2 x DDP 2 (stage 0), 4 processes", ddp2,
            t("tp2-ddp2", procs=4, dp=2, tensor_parallel=2)[0])
    tp_fsdp, plan, out = t("tp2-shard2", procs=4, dp=2, mesh=dict(replicate=1, shard=2, tp=2), checkpoints=5)
    compare("tp 2 x dp_shard 2 (FSDP2), 4 processes", ddp2, tp_fsdp)
    compare("tp_hsdp: dp_replicate 2 x dp_shard 2 x tp 2, 8 processes", ddp4,
            t("tp-hsdp", procs=8, dp=4, mesh=dict(replicate=2, shard=2, tp=2))[0])

    compare("Transformer tp 2 (feed-forward split), 2 processes", t("tf-one", procs=1, dp=1, model=TRANSFORMER)[0],
            t("tf-tp2", procs=2, dp=1, mesh=tp2, model=TRANSFORMER)[0])

    # The full-state checkpoint holds whole tensors: drop the last one, resume from step 5, and
    # end where the straight run ended.
    base = os.path.join(out, "project", "checkpoints")
    saved = sorted(int(m.group(1)) for n in os.listdir(base) if (m := re.fullmatch(r"checkpoint_(\d+)", n)))
    assert len(saved) == 2, f"expected checkpoints at steps 5 and 10, found {saved}"
    shapes = read_safetensors(os.path.join(base, f"checkpoint_{saved[0]}", "model.safetensors"))
    assert {k: v[:2] for k, v in shapes.items()} == {k: v[:2] for k, v in ddp2.items()}, \
        "the checkpoint's weights are not whole"
    shutil.rmtree(os.path.join(base, f"checkpoint_{saved[-1]}"))
    output = run([accelrun, plan, "--output-dir", out, "--resume", "auto"]).stdout
    assert "at step 5" in output, f"the resume did not load step 5:\n{output}"
    compare("tp 2 x dp_shard 2 resumed at step 5", tp_fsdp, read_safetensors(os.path.join(out, "model.safetensors")))

    # The checkpoint does not depend on the mesh: DDP on 2 processes (the same data-parallel
    # ranks, so the same samples) resumes it and ends where DDP ends.
    cross = os.path.join(workdir, "cross")
    cross_plan = compile_plan(accelc, spec_text(cross, 2, 2, checkpoints=5), cross)
    output = run([accelrun, cross_plan, "--output-dir", cross, "--resume",
                  os.path.join(base, f"checkpoint_{saved[0]}")]).stdout
    assert "at step 5" in output, f"DDP did not resume the tensor-parallel checkpoint at step 5:\n{output}"
    compare("DDP 2 resumed from the tp 2 x dp_shard 2 checkpoint", ddp2,
            read_safetensors(os.path.join(cross, "model.safetensors")))

    compare("tp 2 without the backward all-reduce (must fail)", one,
            t("fault-backward", procs=2, dp=1, mesh=tp2, fault="tp_backward")[0], far=True)
    compare("tp 2 with row slices misplaced (must fail)", one,
            t("fault-offset", procs=2, dp=1, mesh=tp2, fault="tp_offset")[0], far=True)

    assert not failures, "\n".join(failures)
    print("tensor parallelism: every mesh matches the run without it; every fault is caught")


if __name__ == "__main__":
    main()
