#!/usr/bin/env python3
"""Accel's safetensors files against an independent reader and writer in Python.

The reader and the writer below follow the format as published (catalog §8) with Debian's
python3, json and numpy only: no Hugging Face library, and no code shared with Accel.
  1. Accel writes a sample state (checkpoint_tool write-sample): the reader checks the byte
     layout (8-byte padded header, tensors ordered by alignment then name, data tiled with no
     hole and no tail), every value against numpy's own reading of the formulas, and the shard
     index byte for byte against json.dumps(index, indent=2, sort_keys=True) + "\\n".
  2. The writer produces what other writers do (unpadded headers, whitespace, unknown members,
     data in name order, a compact index, the legacy index form) in every layout
     load_checkpoint_in_model accepts: Accel (checkpoint_tool dump) must read the same dtypes,
     shapes and bytes.
Usage: checkpoint_interop_test.py CHECKPOINT_TOOL WORKDIR
numpy is Debian's python3-numpy, which scripts/setup.sh installs; without it the test fails.
"""
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys

try:
    import numpy as np
except ImportError:
    sys.exit("checkpoint_interop_test: numpy is missing; run scripts/setup.sh (apt-get install python3-numpy)")

# dtype -> (numpy dtype, bytes per element); BF16 is read as raw uint16 and widened below.
DTYPES = {
    "F64": ("<f8", 8), "F32": ("<f4", 4), "F16": ("<f2", 2), "BF16": ("<u2", 2),
    "I64": ("<i8", 8), "I32": ("<i4", 4), "I16": ("<i2", 2), "I8": ("i1", 1),
    "U64": ("<u8", 8), "U32": ("<u4", 4), "U16": ("<u2", 2), "U8": ("u1", 1), "BOOL": ("?", 1),
}
# The reference writer's alignment ranking, ascending (catalog §8.3).
RANK = ["BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0", "F8_E4M3FNUZ",
        "F8_E5M2FNUZ", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "C64", "F64", "I64", "U64"]


def read_safetensors(path, strict_layout):
    """Returns (metadata, {name: numpy array}, {name: raw bytes}); asserts the format rules."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    assert n <= 100_000_000 and 8 + n <= len(data), f"{path}: bad header length {n}"
    header = json.loads(data[8:8 + n].decode("utf-8"))
    body = data[8 + n:]
    metadata = header.pop("__metadata__", {})
    assert all(isinstance(v, str) for v in metadata.values()), metadata
    entries = sorted(header.items(), key=lambda kv: tuple(kv[1]["data_offsets"]))
    end = 0
    arrays, raw = {}, {}
    for name, info in entries:
        begin, stop = info["data_offsets"]
        assert begin == end, f"{path}: {name}: hole or overlap at {begin}"
        numpy_dtype, size = DTYPES[info["dtype"]]
        count = int(np.prod(info["shape"], dtype=np.int64)) if info["shape"] else 1
        assert stop - begin == count * size, f"{path}: {name}: {stop - begin} bytes for {count} x {info['dtype']}"
        chunk = body[begin:stop]
        array = np.frombuffer(chunk, dtype=numpy_dtype).reshape(info["shape"])
        if info["dtype"] == "BF16":
            array = (array.astype(np.uint32) << 16).view(np.float32)
        arrays[name], raw[name] = array, chunk
        end = stop
    assert end == len(body), f"{path}: {len(body) - end} bytes after the last tensor"
    if strict_layout:
        # What the reference writer does: padded header starting with `{`, tensors ordered by
        # descending alignment, then name, each aligned to its element size in the file.
        assert n % 8 == 0 and data[8:9] == b"{", f"{path}: header not padded or not starting with {{"
        order = [name for name, _ in entries]
        expected = sorted(order, key=lambda k: (-RANK.index(header[k]["dtype"]), k.encode()))
        assert order == expected, f"{path}: data order {order}, reference writer order {expected}"
        for name, info in entries:
            assert (8 + n + info["data_offsets"][0]) % DTYPES[info["dtype"]][1] == 0, f"{name} misaligned"
    return metadata, arrays, raw


def expected_sample():
    k = np.arange(12, dtype=np.float32)
    return {
        "model.layer.weight": ((k - 3) / 4).reshape(3, 4),
        "model.f64": np.array([np.pi, -0.0, 1e300, np.nan]),
        "step": np.array([-(1 << 62), -1, 0, (1 << 62) + 1], dtype=np.int64).reshape(2, 2),
        "i32": np.array([-7, 0, 7], dtype=np.int32),
        "half": np.array([1.0, -2.0, 0.5, np.inf, 2.0 ** -24, 65504], dtype=np.float16),
        "brain": np.array([1.0, -2.0, 3.140625, np.inf], dtype=np.float32).reshape(2, 2),
        "mask": np.array([True, False, True, True, False]),
        "bytes": np.array([0, 127, 128, 255], dtype=np.uint8),
        "scalar": np.array(42.0, dtype=np.float32),
        "empty": np.zeros((0, 3), dtype=np.float32),
        "caf\u00e9.\U0001F600": np.array([-128, 127], dtype=np.int8),
    }


def check_values(arrays, where):
    expected = expected_sample()
    assert sorted(arrays) == sorted(expected), f"{where}: tensors {sorted(arrays)}"
    for name, want in expected.items():
        got = arrays[name]
        assert got.shape == want.shape, f"{where}: {name}: shape {got.shape}, expected {want.shape}"
        assert np.array_equal(got, want, equal_nan=True), f"{where}: {name}: {got} != {want}"
        if name == "model.f64":
            assert np.signbit(got[1]), f"{where}: -0.0 lost its sign"


def accel_to_python(tool, work):
    out = os.path.join(work, "accel")
    subprocess.run([tool, "write-sample", out], check=True)
    metadata, arrays, _ = read_safetensors(os.path.join(out, "single", "model.safetensors"), strict_layout=True)
    assert metadata == {"format": "pt"}, metadata
    check_values(arrays, "single file")

    folder = os.path.join(out, "sharded")
    with open(os.path.join(folder, "model.safetensors.index.json"), "rb") as f:
        index_bytes = f.read()
    index = json.loads(index_bytes)
    assert index_bytes == (json.dumps(index, indent=2, sort_keys=True) + "\n").encode(), "index is not json.dumps'"
    shards = sorted(set(index["weight_map"].values()))
    count = len(shards)
    assert count > 1 and shards == [f"model-{k:05d}-of-{count:05d}.safetensors" for k in range(1, count + 1)], shards
    assert sorted(os.listdir(folder)) == sorted(shards + ["model.safetensors.index.json"]), os.listdir(folder)
    merged, total = {}, 0
    for shard in shards:
        metadata, arrays, raw = read_safetensors(os.path.join(folder, shard), strict_layout=True)
        assert metadata == {"format": "pt"}, metadata
        for name in arrays:
            assert name not in merged and index["weight_map"][name] == shard, f"{name} in {shard}"
            total += len(raw[name])
        merged.update(arrays)
    assert index["metadata"]["total_size"] == total, index["metadata"]
    check_values(merged, "sharded")
    return count


def write_foreign(path, tensors, metadata=None, pad=False, shuffle_members=False):
    """A writer unlike Accel's: data in name order, no padding unless asked, optional extras."""
    header, body = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name in sorted(tensors):
        array = tensors[name]
        raw = array.astype(array.dtype.newbyteorder("<")).tobytes()
        dtype = {"float32": "F32", "float64": "F64", "float16": "F16", "int64": "I64", "int32": "I32",
                 "int8": "I8", "uint8": "U8", "bool": "BOOL", "uint16": "U16"}[array.dtype.name]
        entry = {"dtype": dtype, "shape": list(array.shape), "data_offsets": [len(body), len(body) + len(raw)]}
        if shuffle_members:
            entry = {"data_offsets": entry["data_offsets"], "x-note": [1.5, None], "shape": entry["shape"],
                     "dtype": dtype}
        header[name] = entry
        body += raw
    text = json.dumps(header, indent=1 if shuffle_members else None).encode()
    if shuffle_members:
        text = b"  " + text + b"\n"
    if pad:
        text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + body)


def dump(tool, path):
    result = subprocess.run([tool, "dump", path], capture_output=True, text=True)
    assert result.returncode == 0, f"accel cannot read {path}: {result.stdout}{result.stderr}"
    return {row["name"]: row for row in map(json.loads, result.stdout.splitlines())}


def expect_read(tool, path, tensors):
    rows = dump(tool, path)
    assert sorted(rows) == sorted(tensors), f"{path}: {sorted(rows)}"
    for name, array in tensors.items():
        row = rows[name]
        raw = array.astype(array.dtype.newbyteorder("<")).tobytes()
        assert row["shape"] == list(array.shape), f"{path}: {name}: shape {row['shape']}"
        assert row["sha256"] == hashlib.sha256(raw).hexdigest(), f"{path}: {name}: bytes differ"
    return rows


def python_to_accel(tool, work):
    rng = np.random.default_rng(7)
    tensors = {
        "embed.weight": rng.standard_normal((16, 8)).astype(np.float32),
        "layers.0.bias": rng.standard_normal(8),
        "layers.0.half": rng.standard_normal(5).astype(np.float16),
        "counts": np.arange(-3, 4, dtype=np.int64),
        "flags": np.array([True, False, True]),
        "tokens": np.array([1, 2, 3], dtype=np.int32),
        "raw": np.frombuffer(b"\x00\xff\x10", dtype=np.uint8),
        "tiny": np.array(5, dtype=np.int8),
        "\u00fcber": np.zeros((2, 0), dtype=np.float32),
    }
    layouts = 0
    # A single file, unpadded, read as a file and as a folder holding model.safetensors.
    single = os.path.join(work, "py_single")
    os.makedirs(single)
    write_foreign(os.path.join(single, "model.safetensors"), tensors, {"format": "pt", "writer": "python"})
    expect_read(tool, os.path.join(single, "model.safetensors"), tensors)
    expect_read(tool, single, tensors)
    layouts += 2
    # Whitespace around the header, reordered and unknown members, no metadata at all.
    odd = os.path.join(work, "py_odd.safetensors")
    write_foreign(odd, tensors, None, pad=True, shuffle_members=True)
    expect_read(tool, odd, tensors)
    layouts += 1
    # Shards with a compact index, read through the index file and through the folder.
    sharded = os.path.join(work, "py_sharded")
    os.makedirs(sharded)
    names = sorted(tensors)
    groups = [names[0:3], names[3:6], names[6:]]
    weight_map, total = {}, 0
    for k, group in enumerate(groups, 1):
        shard = f"model-{k:05d}-of-{len(groups):05d}.safetensors"
        write_foreign(os.path.join(sharded, shard), {n: tensors[n] for n in group}, {"format": "pt"}, pad=(k == 2))
        for n in group:
            weight_map[n] = shard
            total += tensors[n].nbytes
    with open(os.path.join(sharded, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total, "total_parameters": 123}, "weight_map": weight_map}, f)
    rows = expect_read(tool, os.path.join(sharded, "model.safetensors.index.json"), tensors)
    assert all(rows[n]["file"] == weight_map[n] for n in tensors), rows
    expect_read(tool, sharded, tensors)
    layouts += 2
    # The legacy index (the whole object is the map) under another name.
    legacy = os.path.join(work, "py_legacy")
    shutil.copytree(sharded, legacy)
    os.remove(os.path.join(legacy, "model.safetensors.index.json"))
    with open(os.path.join(legacy, "weights.index.json"), "w") as f:
        json.dump(weight_map, f, indent=4)
    expect_read(tool, legacy, tensors)
    layouts += 1
    return layouts


def main():
    tool, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    shards = accel_to_python(tool, work)
    layouts = python_to_accel(tool, work)
    print(f"checkpoint interop: Python reads Accel's single file and {shards} shards + index (values, layout, "
          f"index bytes); Accel reads {layouts} layouts a Python writer produced")


if __name__ == "__main__":
    main()
