"""Helpers the end-to-end tests share: an independent safetensors reader (Python standard
library only, sharing no code with Accel), running accelrun, and reading what a run wrote."""
import json
import os
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
