#!/usr/bin/env python3
"""Prints the GPU check's table (scripts/gpu-check.sh) from the folder it wrote: one row per
run, what it shows, and its figures. Exits 1 when a run failed.

Usage: check_table.py OUT DEVICES
"""
import json
import os
import re
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import transformer_eager  # noqa: E402  (the throughput job's sizes and FLOPs)

# Dense bf16 tensor-core peaks (FLOP/s) by device name, from NVIDIA's data sheets: MFU's
# denominator. A device not listed gets no MFU.
PEAK_BF16 = [("H200", 989.4e12), ("H100 PCIe", 756.0e12), ("H100 NVL", 835.0e12), ("H100", 989.4e12),
             ("A100", 312.0e12), ("L40S", 362.0e12), ("L40", 181.0e12), ("L4", 121.0e12)]


def metrics(out, name):
    path = os.path.join(out, name, "metrics.json")
    return json.load(open(path)) if os.path.exists(path) else None


def logged(out, name, key):
    """(step, value) of every metrics.jsonl line with `key`, in order."""
    path = os.path.join(out, name, "metrics.jsonl")
    rows = []
    if os.path.exists(path):
        for line in open(path):
            record = json.loads(line)
            if key in record and record.get("event") is None:
                rows.append((record["step"], record[key]))
    return rows


def weights(path):
    """name -> list of float32 values of a safetensors file (the check's models are small)."""
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        data = f.read()
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "F32":
            continue
        begin, end = info["data_offsets"]
        tensors[name] = struct.unpack(f"<{(end - begin) // 4}f", data[begin:end])
    return tensors


def peak(device_names):
    for key, flops in PEAK_BF16:
        if re.search(r"\b" + re.escape(key) + r"\b", device_names):
            return flops
    return None


def main():
    out, devices = sys.argv[1], int(sys.argv[2])
    status = {}
    for line in open(os.path.join(out, "cases.tsv")):
        name, code, seconds = line.rstrip("\n").split("\t")
        status[name] = (int(code), int(seconds))
    env = json.load(open(os.path.join(out, "env.json")))
    versions = f"LibTorch {env['libtorch_version']}; CUDA {env['cuda']}; NCCL {env['nccl']}"
    rows = [("accelrun env", "ok", versions)]

    def row(name, what, detail):
        code, seconds = status.get(name, (None, 0))
        verdict = "ok" if code == 0 else ("not run" if code is None else f"FAILED (exit {code})")
        rows.append((what, verdict, f"{detail} ({seconds} s)" if code == 0 else f"see {name}.log"))

    def losses(name):
        m = metrics(out, name)
        if not m:
            return ""
        return (f"loss {m['first_loss']:.4f} → {m['final_loss']:.4f}, {m['steps']} steps, "
                f"world {m['world_size']}")

    row("quickstart-1gpu", "quickstart on 1 GPU", losses("quickstart-1gpu"))
    gpu, cpu = logged(out, "quickstart-1gpu", "loss"), logged(out, "quickstart-cpu", "loss")
    detail = ""
    if gpu and cpu and len(gpu) == len(cpu):
        loss_diff = max(abs(a[1] - b[1]) for a, b in zip(gpu, cpu))
        wg = weights(os.path.join(out, "quickstart-1gpu", "model.safetensors"))
        wc = weights(os.path.join(out, "quickstart-cpu", "model.safetensors"))
        weight_diff = max(abs(x - y) for name in wg for x, y in zip(wg[name], wc[name]))
        detail = (f"largest loss difference over {len(gpu)} steps {loss_diff:.2e}; "
                  f"largest weight difference {weight_diff:.2e}")
    row("quickstart-cpu", "the same plan, 1 GPU against the CPU", detail)
    # NCCL needs a GPU per rank: with one GPU these rows run one process, with no process group.
    where = (f"over NCCL on {devices} GPUs" if devices > 1
             else "on 1 GPU, no process group (NCCL needs 2 GPUs)")
    row("ddp", f"DDP {where}", losses("ddp"))
    row("test", f"every data operation {where} (accelrun test)", "each rank checked its results")
    row("bf16", f"bf16 autocast, DDP {where}", losses("bf16"))
    scales = logged(out, "fp16", "loss_scale")
    m = metrics(out, "fp16")
    detail = losses("fp16")
    if scales and m:
        path = []  # the scale each time it changed, over the logged steps
        for step, scale in scales:
            if not path or path[-1][1] != scale:
                path.append((step, scale))
        moved = " → ".join(f"{scale:g} (step {step})" for step, scale in path[:6])
        detail += f"; loss scale {moved}; {m.get('skipped_steps')} skipped steps"
    row("fp16", f"fp16 with dynamic loss scaling {where}", detail)
    row("zero3", f"ZeRO-3 spec (DeepSpeed JSON, bf16) {where}", losses("zero3"))
    row("fsdp", f"FSDP FULL_SHARD spec (Transformer, bf16) {where}", losses("fsdp"))

    t = metrics(out, "throughput")
    eager_path = os.path.join(out, "eager.json")
    has_eager = os.path.exists(eager_path) and os.path.getsize(eager_path) > 0
    eager = json.load(open(eager_path)) if has_eager else None
    detail = ""
    if t:
        tokens = t["steps"] * transformer_eager.BATCH * transformer_eager.TOKENS / t["wall_seconds"]
        flops = transformer_eager.step_flops()
        p = peak(env["cuda"])

        def mfu(tokens_per_second):
            steps = tokens_per_second / (transformer_eager.BATCH * transformer_eager.TOKENS)
            return f", MFU {100 * steps * flops / p:.1f}%" if p else ""

        detail = f"accelrun {tokens:,.0f} tokens/s{mfu(tokens)}"
        if eager:
            e = eager["tokens_per_second"]
            detail += (f"; PyTorch eager {e:,.0f} tokens/s{mfu(e)}; ratio accelrun/eager {tokens / e:.2f} "
                       "(eager's encoder layers take PyTorch's fused attention, the C++ layers compute "
                       "the attention weights)")
    row("throughput", "built-in Transformer training throughput, 1 GPU, bf16", detail)

    print("\n| check | result | figures |\n|---|---|---|")
    for what, verdict, detail in rows:
        print(f"| {what} | {verdict} | {detail} |")
    failed = [name for name, (code, _) in status.items() if code != 0]
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
