#!/usr/bin/env python3
"""End-to-end test of the quickstart: accelrun on 2 processes, then an independent check.

Runs `accelrun specs/quickstart.accel`, and reads what it wrote with this file's own
safetensors reader (Python standard library only, sharing no code with Accel):
  * the run exits 0 and the mean loss fell by at least 4x;
  * model.safetensors follows the format (8-byte aligned header, tensors tile the data);
  * the saved bytes hash to the digest every rank computed in memory, so the weights read
    back bit-identical and both data-parallel replicas ended identical;
  * the done line ends the loss with a sparkline of the logged values.
Usage: quickstart_test.py ACCELRUN SPEC WORKDIR
"""
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    assert n % 8 == 0, f"header length {n} is not 8-byte aligned"
    header = json.loads(data[8 : 8 + n])
    body = data[8 + n :]
    metadata = header.pop("__metadata__", {})
    tensors = {}
    end = 0
    for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        begin, stop = info["data_offsets"]
        assert begin == end, f"{name}: hole or overlap at {begin}"
        count = 1
        for d in info["shape"]:
            count *= d
        assert info["dtype"] == "F32" and stop - begin == 4 * count, f"{name}: size mismatch"
        tensors[name] = body[begin:stop]
        end = stop
    assert end == len(body), "trailing bytes after the last tensor"
    return metadata, tensors


def main():
    accelrun, spec, workdir = sys.argv[1:4]
    shutil.rmtree(workdir, ignore_errors=True)
    run = subprocess.run([accelrun, spec, "--output-dir", workdir], capture_output=True, text=True, timeout=240)
    sys.stdout.write(run.stdout)
    sys.stderr.write(run.stderr)
    assert run.returncode == 0, f"accelrun exited {run.returncode}"

    with open(os.path.join(workdir, "metrics.json")) as f:
        metrics = json.load(f)
    assert metrics["world_size"] == 2, metrics
    first, final = metrics["first_loss"], metrics["final_loss"]
    assert final < first / 4, f"loss did not fall enough: {first} -> {final}"

    metadata, tensors = read_safetensors(os.path.join(workdir, "model.safetensors"))
    assert metadata == {"format": "pt"}, metadata
    assert sorted(tensors) == ["0.bias", "0.weight", "2.bias", "2.weight", "4.bias", "4.weight"], sorted(tensors)
    sha = hashlib.sha256()
    for name in sorted(tensors):
        sha.update(name.encode())
        sha.update(tensors[name])
    file_digest = "sha256:" + sha.hexdigest()
    for rank in range(2):
        with open(os.path.join(workdir, "ranks", f"rank-{rank}.json")) as f:
            in_memory = json.load(f)["parameter_digest"]
        assert in_memory == file_digest, f"rank {rank}: in memory {in_memory}, on disk {file_digest}"
    # The done line draws the loss: one block per logged value (11 of them: steps 1, 20, ..., 200),
    # falling from the top block to the bottom ones, with the range of the values.
    done = re.search(r"^accelrun: done in .* loss .*? ([▁▂▃▄▅▆▇█×]+) \(min ([^,]+), max ([^)]+)\)", run.stdout, re.M)
    assert done, "the done line has no loss sparkline"
    bars = done.group(1)
    assert len(bars) == 11 and bars[0] == "█" and bars[-1] in "▁▂", f"sparkline {bars!r}"
    assert abs(float(done.group(3)) - first) <= 1e-3 * first, f"sparkline max {done.group(3)} is not the first loss"
    print(f"e2e quickstart: loss {first:.6f} -> {final:.6f}; weights bit-identical on disk and on both ranks")


if __name__ == "__main__":
    main()
