#!/usr/bin/env python3
"""Per-rank model-state memory and step time of the sharded engine (ZeRO stages 1-3) against
DDP, on one MLP of about 54M parameters (1024 -> 4 x 4096 -> 16, AdamW, fp32), at N = 2 and 4
processes of this machine.

Model state per rank, from the tensors each stage keeps (fp32: 4 bytes a parameter, AdamW two
state tensors), with Ψ parameters and N ranks: DDP 16Ψ; ZeRO-1 8Ψ + 8Ψ/N; ZeRO-2 4Ψ + 12Ψ/N;
ZeRO-3 16Ψ/N + the live gathered units (at most the two largest units, here 2 x 4096² x 4 B
during a layer's forward or backward). The table prints these bytes for this model (Ψ counted
exactly, shards padded as the engine pads them) next to each run's measured peak RSS per worker
(VmHWM, which also counts activations, LibTorch and the allocator's slack) and its median step
time (from metrics.jsonl, steps after the first), with the ratio to DDP at the same N. Each
sharded stage runs twice: reductions after backward, one collective per unit, no prefetch (the
engine's plain schedule), and "overlapped" (reductions started in backward's hooks, all units in
one bucket, stage 3 gathering one block ahead both ways), so the two schedules are compared in
the same run. A last row per N runs the overlapped stage 3 with cpu_ram_efficient_loading: only
rank 0 builds the weights' values, the others their shapes, and each receives its shards alone.
Peak RSS is given for rank 0 and for the largest of the other ranks, which that row lowers.
Usage: sharding_memory.py ACCELC ACCELRUN [STEPS] [N,...]
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "e2e"))
from sharding_support import compile_plan  # noqa: E402

IN, HIDDEN, LAYERS, OUT, BATCH = 1024, 4096, 4, 16, 32
SPEC = """job memory {{
  compute {{ distributed_type = MULTI_CPU; num_processes = {procs} }}
  accelerator {{ seed = 1; init_process_group {{ timeout = 300s }} }}
  model = MLP {{ inputs = {inp}; hidden = [{hidden}]; outputs = {out} }}
  data = SyntheticRegression {{ samples = 4096; features = {inp}; batch_size = {batch}; seed = 7 }}
  train {{ steps = {steps}; optimizer = AdamW {{ lr = 0.0001 }}; log_every = 1 }}
  output {{ dir = "{dir}" }}
}}
"""


def layers():
    widths = [IN] + [HIDDEN] * LAYERS + [OUT]
    return [(a * b + b) for a, b in zip(widths, widths[1:])]


def model_state(stage, n):
    """Bytes of parameters, gradients and optimizer state one rank keeps (one unit per Linear)."""
    units = layers()
    psi = sum(units)
    shard = sum(-(-u // n) for u in units)  # padded shard elements
    if stage == 0:
        return 16 * psi
    if stage == 1:
        return 4 * psi + 4 * psi + 8 * shard
    if stage == 2:
        return 4 * psi + 12 * shard
    return 16 * shard + 2 * 4 * max(units)


def worker_peaks(out):
    """{rank: VmHWM bytes} of the workers of the run writing to `out`."""
    peaks = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            if not argv[0].endswith(b"accelrun-worker") or not any(out.encode() in a for a in argv):
                continue
            with open(f"/proc/{entry}/environ", "rb") as f:
                env = dict(v.split(b"=", 1) for v in f.read().split(b"\0") if b"=" in v)
            with open(f"/proc/{entry}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        peaks[int(env[b"RANK"])] = int(line.split()[1]) * 1024
        except OSError:
            continue
    return peaks


PLAIN = dict(overlap_comm=False, reduce_bucket_size=1, allgather_bucket_size=1, forward_prefetch=False,
             backward_prefetch="none")
OVERLAPPED = dict(overlap_comm=True, forward_prefetch=True, backward_prefetch="backward_pre")


def run(accelc, accelrun, workdir, procs, stage, steps, schedule, rank0_loads=False):
    out = os.path.join(workdir, f"n{procs}-stage{stage}-{'overlapped' if schedule is OVERLAPPED else 'plain'}"
                                f"{'-rank0' if rank0_loads else ''}")
    text = SPEC.format(procs=procs, inp=IN, hidden=", ".join([str(HIDDEN)] * LAYERS), out=OUT, batch=BATCH,
                       steps=steps, dir=out)
    sharding = dict(stage=stage, wrap_policy="transformer_based", transformer_layer_cls_to_wrap=["Linear"],
                    cpu_ram_efficient_loading=rank0_loads, **schedule) if stage else {}
    plan = compile_plan(accelc, text, out, **sharding)
    process = subprocess.Popen([accelrun, plan], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peaks = {}
    while process.poll() is None:
        for rank, peak in worker_peaks(out).items():
            peaks[rank] = max(peak, peaks.get(rank, 0))
        time.sleep(0.05)
    assert process.returncode == 0, process.stderr.read()
    with open(os.path.join(out, "metrics.jsonl")) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    times = [b["time"] - a["time"] for a, b in zip(rows, rows[1:]) if "loss" in a and "loss" in b and a["step"] > 1]
    others = max(peak for rank, peak in peaks.items() if rank != 0)
    return peaks[0], others, statistics.median(times)


def main():
    accelc, accelrun = sys.argv[1:3]
    steps = int(sys.argv[3]) if len(sys.argv) > 3 else 6
    sizes = [int(n) for n in sys.argv[4].split(",")] if len(sys.argv) > 4 else [2, 4]
    psi = sum(layers())
    print(f"MLP {IN} -> {LAYERS} x {HIDDEN} -> {OUT}: Ψ = {psi / 1e6:.1f}M parameters, AdamW, fp32, batch {BATCH}/rank")
    print("| N | stage | model state per rank (formula) | peak RSS rank 0 | peak RSS other ranks | median step "
          "| step vs DDP |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as workdir:
        for procs in sizes:
            ddp_time = None
            rows = [(0, PLAIN, False)] + [(st, sc, False) for st in (1, 2, 3) for sc in (PLAIN, OVERLAPPED)]
            for stage, schedule, rank0_loads in rows + [(3, OVERLAPPED, True)]:
                rank0, others, step = run(accelc, accelrun, workdir, procs, stage, steps, schedule, rank0_loads)
                ddp_time = ddp_time or step
                label = "DDP" if stage == 0 else f"{stage}{', overlapped' if schedule is OVERLAPPED else ''}"
                label += ", rank 0 loads" if rank0_loads else ""
                print(f"| {procs} | {label} | {model_state(stage, procs) / 2**20:.0f} MiB | "
                      f"{rank0 / 2**20:.0f} MiB | {others / 2**20:.0f} MiB | {step:.3f} s | {step / ddp_time:.2f} |",
                      flush=True)


if __name__ == "__main__":
    main()
