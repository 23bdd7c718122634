#!/usr/bin/env python3
"""2-rank scaling of the training executor, side by side with PyTorch DDP (what Accelerate's
`prepare` wraps a model in; raw DDP without Accelerate's wrappers is a lower bound on its time).

Both train the same MLP (256 -> 1024 -> 1024 -> 16, AdamW, MSE) with the same per-process
batch on 1 and on 2 processes over Gloo, one thread per process, and time STEPS steady steps
after WARMUP (accelrun: the metrics.jsonl timestamps of those two steps; DDP: perf_counter).
The Python processes get the same huge-page malloc tunable accelrun gives its workers (without
it, page faults make Python ~3x slower on these VMs, which would flatter accelrun).
Scaling efficiency = samples/s on 2 processes / (2 x samples/s on 1). Two vCPUs of a shared
host do not give twice one vCPU's compute, so the run also measures the ceiling: two
independent 1-process accelrun jobs at the same time (no communication). Medians of
REPETITIONS runs, alternating. Needs Debian's python3-torch (run with /usr/bin/python3).
Usage: train_scaling.py ACCELRUN [REPETITIONS]
"""
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

WARMUP, STEPS, BATCH, SAMPLES, IN, HIDDEN, OUT = 10, 60, 64, 8192, 256, 1024, 16
HUGEPAGES = "glibc.malloc.hugetlb=1"

SPEC = """job scaling {{
  compute {{ distributed_type = {dtype}; num_processes = {procs} }}
  accelerator {{ seed = 1; init_process_group {{ timeout = 120s }} }}
  model = MLP {{ inputs = {inp}; hidden = [{hidden}, {hidden}]; outputs = {out} }}
  data = SyntheticRegression {{ samples = {samples}; features = {inp}; batch_size = {batch}; seed = 7 }}
  train {{ steps = {steps}; optimizer = AdamW {{ lr = 0.001 }}; log_every = {log_every} }}
  output {{ dir = "{dir}" }}
}}
"""


def accelrun_job(accelrun, workdir, procs, name):
    out = os.path.join(workdir, name)
    spec = os.path.join(workdir, f"{name}.accel")
    with open(spec, "w") as f:
        f.write(
            SPEC.format(dtype="MULTI_CPU" if procs > 1 else "NO", procs=procs, inp=IN, hidden=HIDDEN, out=OUT,
                        samples=SAMPLES, batch=BATCH, steps=WARMUP + STEPS, log_every=WARMUP, dir=out)
        )
    command = [accelrun, spec, "--num-cpu-threads-per-process", "1"]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), out


def steady_seconds(out):
    """Seconds of the STEPS steps after the warm-up, from the metrics.jsonl timestamps."""
    with open(os.path.join(out, "metrics.jsonl")) as f:
        times = {line["step"]: line["time"] for line in map(json.loads, f)}
    return times[WARMUP + STEPS] - times[WARMUP]


def accelrun_seconds(accelrun, workdir, procs):
    job, out = accelrun_job(accelrun, workdir, procs, f"accel-{procs}")
    assert job.wait(timeout=600) == 0, "accelrun failed"
    return steady_seconds(out)


def ceiling_seconds(accelrun, workdir):
    """Two independent 1-process jobs at once: what 2 vCPUs give without any communication."""
    jobs = [accelrun_job(accelrun, workdir, 1, f"ceiling-{i}") for i in range(2)]
    for job, _ in jobs:
        assert job.wait(timeout=600) == 0, "accelrun failed"
    return statistics.mean(steady_seconds(out) for _, out in jobs)


def ddp_worker(rank, world, port, result_path):
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(IN, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, HIDDEN),
                                torch.nn.ReLU(), torch.nn.Linear(HIDDEN, OUT))
    ddp = torch.nn.parallel.DistributedDataParallel(model) if world > 1 else model
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(7)
    features = torch.randn(SAMPLES, IN, generator=generator)
    targets = torch.randn(SAMPLES, OUT, generator=generator)
    order = torch.randperm(SAMPLES, generator=torch.Generator().manual_seed(1))

    def step(i):
        rows = order[(i * world + rank) * BATCH % SAMPLES :][:BATCH]
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(ddp(features[rows]), targets[rows])
        loss.backward()
        optimizer.step()
        return loss.item()

    for i in range(WARMUP):
        step(i)
    dist.barrier()
    started = time.perf_counter()
    for i in range(STEPS):
        step(i)
    dist.barrier()
    seconds = time.perf_counter() - started
    if rank == 0:
        with open(result_path, "w") as f:
            f.write(str(seconds))
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ddp_seconds(workdir, procs):
    result = os.path.join(workdir, f"ddp-{procs}.txt")
    port = free_port()
    env = dict(os.environ, OMP_NUM_THREADS="1", GLIBC_TUNABLES=HUGEPAGES)
    workers = [subprocess.Popen([sys.executable, __file__, "--ddp-worker", str(r), str(procs), str(port), result],
                                env=env) for r in range(procs)]
    for w in workers:
        assert w.wait(timeout=600) == 0, "a DDP worker failed"
    with open(result) as f:
        return float(f.read())


def main():
    if sys.argv[1] == "--ddp-worker":
        rank, world, port, path = sys.argv[2:6]
        ddp_worker(int(rank), int(world), int(port), path)
        return
    accelrun = sys.argv[1]
    repetitions = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    times = {key: [] for key in ("accel-1", "accel-2", "ddp-1", "ddp-2", "ceiling")}
    with tempfile.TemporaryDirectory() as workdir:
        for _ in range(repetitions):
            for procs in (1, 2):
                times[f"accel-{procs}"].append(accelrun_seconds(accelrun, workdir, procs))
                times[f"ddp-{procs}"].append(ddp_seconds(workdir, procs))
            times["ceiling"].append(ceiling_seconds(accelrun, workdir))
    median = {key: statistics.median(value) for key, value in times.items()}
    ceiling = median["ceiling"] / STEPS
    print(f"train_scaling: MLP {IN}-{HIDDEN}-{HIDDEN}-{OUT}, AdamW, batch {BATCH} per process, {STEPS} steady "
          f"steps, 1 thread per process, median of {repetitions}")
    print(f"  ceiling: two independent 1-process jobs at once run {ceiling * 1e3:.2f} ms/step each")
    print(f"  {'':24} {'ms/step 1 proc':>15} {'ms/step 2 procs':>16} {'samples/s 2 procs':>18} "
          f"{'efficiency':>11} {'of ceiling':>11}")
    for name, key in (("accelrun", "accel"), ("PyTorch DDP (Python)", "ddp")):
        one, two = median[f"{key}-1"] / STEPS, median[f"{key}-2"] / STEPS
        throughput_1, throughput_2 = BATCH / one, 2 * BATCH / two
        print(f"  {name:24} {one * 1e3:15.2f} {two * 1e3:16.2f} {throughput_2:18.0f} "
              f"{throughput_2 / (2 * throughput_1):10.1%} {ceiling / two:10.1%}")
    print(f"  accelrun / DDP step time: 1 process {median['accel-1'] / median['ddp-1']:.2f}x, "
          f"2 processes {median['accel-2'] / median['ddp-2']:.2f}x")


if __name__ == "__main__":
    main()
