"""Helpers the end-to-end tests share: an independent safetensors reader (Python standard
library only, sharing no code with Accel), running accelrun, and reading what a run wrote."""
import json
import os
import random
import re
import socket
import struct
import subprocess
import sys

_DTYPES = {"F32": ("f", 4), "F64": ("d", 8), "I64": ("q", 8), "I32": ("i", 4)}


def read_safetensors(path):
    """{name: (dtype, shape, [values])} of a safetensors file, checking its layout."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    header.pop("__metadata__", None)
    body = data[8 + n :]
    tensors = {}
    end = 0
    for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        begin, stop = info["data_offsets"]
        assert begin == end, f"{path}: {name}: hole or overlap at {begin}"
        code, size = _DTYPES[info["dtype"]]
        count = 1
        for d in info["shape"]:
            count *= d
        assert stop - begin == size * count, f"{path}: {name}: size mismatch"
        tensors[name] = (info["dtype"], info["shape"], list(struct.unpack(f"<{count}{code}", body[begin:stop])))
        end = stop
    assert end == len(body), f"{path}: trailing bytes after the last tensor"
    return tensors


def max_abs_difference(a, b):
    """Largest elementwise difference between two read_safetensors() results with equal names."""
    assert sorted(a) == sorted(b), f"different tensors: {sorted(a)} vs {sorted(b)}"
    worst = 0.0
    for name in a:
        assert a[name][1] == b[name][1], f"{name}: shapes {a[name][1]} vs {b[name][1]}"
        worst = max([worst] + [abs(x - y) for x, y in zip(a[name][2], b[name][2])])
    return worst


def run(command, cwd=None, timeout=300, check=True, env=None):
    """Runs a command, echoes its output, and (check) asserts it exited 0."""
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    if check:
        assert result.returncode == 0, f"{command[0]} exited {result.returncode}"
    return result


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def rank_digests(out_dir, world_size):
    digests = []
    for rank in range(world_size):
        with open(os.path.join(out_dir, "ranks", f"rank-{rank}.json")) as f:
            digests.append(json.load(f)["parameter_digest"])
    return digests


# ctest counts this exit code as skipped, not passed (SKIP_RETURN_CODE in tests/CMakeLists.txt).
SKIP_EXIT = 77


def skip(reason):
    """Ends a test that this machine cannot run, saying why."""
    print(f"skipped: {reason}", flush=True)
    sys.exit(SKIP_EXIT)


def scheduler_free_env():
    """This process's environment without any scheduler's, rendezvous or thread variables, so
    that a test's launchers see only the placement the test gives them and choose their threads
    themselves."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("SLURM_", "SBATCH_", "SALLOC_", "SRUN_", "OMPI_", "PMI_", "PMIX_", "MV2_",
                                 "HYDRA_", "MPI_LOCAL", "MASTER_", "OMP_NUM_THREADS"))}


def assert_trained_like(reference_dir, out_dir, name, world_size=2):
    """The run in `out_dir` trained on `world_size` ranks and saved the very bytes the reference
    run saved."""
    with open(os.path.join(out_dir, "metrics.json")) as f:
        metrics = json.load(f)
    assert metrics["world_size"] == world_size, f"{name}: trained on world size {metrics['world_size']}"
    for rank in range(world_size):
        assert os.path.exists(os.path.join(out_dir, "ranks", f"rank-{rank}.json")), f"{name}: rank {rank} missing"
    with open(os.path.join(reference_dir, "model.safetensors"), "rb") as f:
        reference = f.read()
    with open(os.path.join(out_dir, "model.safetensors"), "rb") as f:
        trained = f.read()
    if trained != reference:
        worst = max_abs_difference(read_safetensors(os.path.join(reference_dir, "model.safetensors")),
                                   read_safetensors(os.path.join(out_dir, "model.safetensors")))
        raise AssertionError(f"{name}: weights differ from the local run's (largest difference {worst})")
    print(f"{name}: trained on {world_size} ranks, weights bit-identical to the local run")


def check_one_voice(name, scheduler, output):
    """`output` is what two launchers of one job (ranks 0 and 1, one node) printed together: rank
    0's says which job and that it is done, once; rank 1's marks each of its lines."""
    assert output.count("accelrun: job `") == 1, f"{name}: the job line is not printed once"
    assert len(re.findall(r"^accelrun: done in", output, re.M)) == 1, f"{name}: the done line is not printed once"
    assert re.search(rf"^accelrun: launched by {re.escape(scheduler)}: rank 0 of 2 \(local rank 0 of 2, node 0 of 1\)",
                     output, re.M), f"{name}: rank 0's placement line"
    assert re.search(rf"^\[rank 1\] accelrun: launched by {re.escape(scheduler)}: rank 1 of 2 "
                     r"\(local rank 1 of 2, node 0 of 1\)", output, re.M), f"{name}: rank 1's placement line"


def free_port():
    """A free TCP port below the kernel's ephemeral range (net.ipv4.ip_local_port_range), tried
    at random from 10000 as accelrun picks a port for a script's workers. The ephemeral range
    hands its ports to every bind of port 0 and every outgoing connection, so a port found
    there and let go could be taken by another test's connection before the job binds it."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            below = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        below = 32768
    for _ in range(200):
        port = random.randrange(10000, below)
        with socket.socket() as probe:
            try:
                probe.bind(("", port))
            except OSError:
                continue
            return port
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def live_workers(plan):
    """(pid, environment) of each live worker running `plan` (zombies count as gone)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{entry}/environ", "rb") as f:
                env = dict(v.split(b"=", 1) for v in f.read().split(b"\0") if b"=" in v)
            with open(f"/proc/{entry}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if argv[0].endswith(b"accelrun-worker") and plan.encode() in argv and state != "Z":
            yield int(entry), env


def worker_ranks(plan):
    """{rank: pid} of the live workers running `plan`."""
    return {int(env[b"RANK"]): pid for pid, env in live_workers(plan)}


def load_blobs(specs):
    """The TorchScript examples' data (specs/data/blobs.csv) as PyTorch's reference loops read it:
    float32 features (the first four columns) and int64 labels (the fifth)."""
    import numpy as np  # only the tests that compare with PyTorch have them
    import torch

    table = np.loadtxt(os.path.join(specs, "data", "blobs.csv"), delimiter=",", skiprows=1, dtype=np.float64)
    return torch.tensor(table[:, :4], dtype=torch.float32), torch.tensor(table[:, 4], dtype=torch.int64)


def rewrite_manifest_entry(checkpoint, name):
    """Vouches for the current bytes of `name` in the checkpoint's manifest, as the writer hashes
    them (piece by piece): what a hostile or buggy writer leaves after editing a file."""
    import hashlib

    path = os.path.join(checkpoint, "accel_manifest.json")
    with open(path) as f:
        manifest = json.load(f)
    with open(os.path.join(checkpoint, name), "rb") as f:
        data = f.read()
    chunk = manifest["chunk_size"]
    pieces = [data[i:i + chunk] for i in range(0, len(data), chunk)] or [b""]
    manifest["files"][name] = {"sha256": [hashlib.sha256(p).hexdigest() for p in pieces], "size": len(data)}
    with open(path, "w") as f:
        json.dump(manifest, f, indent=2, sort_keys=True)


def seedable_rows(step, samples, batch, seed):
    """The rows of optimizer step `step` (0-based) as accelrun's one-process loader draws them with
    a seedable sampler: epoch e is a permutation seeded with seed + e, cut into batches."""
    import torch

    per_epoch = (samples + batch - 1) // batch
    epoch, index = divmod(step, per_epoch)
    order = torch.randperm(samples, generator=torch.Generator().manual_seed(seed + epoch))
    return order[index * batch:(index + 1) * batch]
