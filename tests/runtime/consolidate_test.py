#!/usr/bin/env python3
"""`accelrun consolidate` against an independent reader (json + numpy, no code shared with Accel).

checkpoint_crash_driver writes sharded checkpoints as four rank processes would (save-sharded);
`accelrun consolidate` merges one into whole tensors. The reader below then checks the output:
  1. every tensor, bit for bit, against the values the driver generated (splitmix64, recomputed
     here) and against the tensor put together here from the rank files through the index;
  2. the file's layout (padded header, no hole, no tail), as the safetensors format demands;
  3. `accelrun estimate-memory` of the sharded checkpoint gives the consolidated file's sizes;
  4. the refusals, each with its exit code and what it names: not a directory, a checkpoint that
     is not sharded, an unfinished one, a missing shard file, a flipped byte, an index whose
     ranges do not tile a tensor (with a manifest rewritten to vouch for it), a missing `-o`.
Usage: consolidate_test.py CRASH_DRIVER ACCELRUN WORKDIR
"""
import json
import os
import shutil
import struct
import subprocess
import sys

# The manifest rewriter the end-to-end tests share.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from e2e_support import rewrite_manifest_entry  # noqa: E402

try:
    import numpy as np
except ImportError:
    sys.exit("consolidate_test: numpy is missing; run scripts/setup.sh (apt-get install python3-numpy)")

STATE_BYTES = 48 * 1024
TENSORS = 6
MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def step_tensors(seed, state_bytes):
    """The driver's StepState: 6 F32 tensors of splitmix64 output seeded by `seed`."""
    x = (seed * GOLDEN + 1) & MASK
    tensors = {}
    size = state_bytes // TENSORS // 4 * 4
    for t in range(TENSORS):
        data = bytearray(size)
        for i in range(0, size - 7, 8):
            x = (x + GOLDEN) & MASK
            z = x
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
            z ^= z >> 31
            data[i:i + 8] = struct.pack("<Q", z)
        tensors[f"layers.{t}.weight"] = bytes(data)
    return tensors


def expected_state(step):
    model = step_tensors(step, STATE_BYTES)
    optimizer = {f"state.{name}.exp_avg": data for name, data in step_tensors(step + 1_000_003, STATE_BYTES // 2).items()}
    return model, optimizer


def read_safetensors(path):
    """{name: (dtype, shape, raw bytes)}; asserts the layout rules of the format."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    assert 8 + n <= len(data) and n % 8 == 0 and data[8:9] == b"{", f"{path}: bad header"
    header = json.loads(data[8:8 + n].decode("utf-8"))
    header.pop("__metadata__", None)
    body = data[8 + n:]
    end = 0
    out = {}
    for name, info in sorted(header.items(), key=lambda kv: tuple(kv[1]["data_offsets"])):
        begin, stop = info["data_offsets"]
        assert begin == end, f"{path}: {name}: hole or overlap at {begin}"
        count = int(np.prod(info["shape"], dtype=np.int64)) if info["shape"] else 1
        assert stop - begin == count * 4 and info["dtype"] == "F32", f"{path}: {name}: {info}"
        out[name] = (info["dtype"], info["shape"], body[begin:stop])
        end = stop
    assert end == len(body), f"{path}: {len(body) - end} bytes after the last tensor"
    return out


def assemble_from_ranks(checkpoint, section):
    """Whole tensors put together here from the rank files, as the index places their slices."""
    with open(os.path.join(checkpoint, "sharded_state.index.json")) as f:
        index = json.load(f)
    files = {}
    whole = {}
    for name, tensor in index[section].items():
        parts = []
        for piece in sorted(tensor["slices"], key=lambda s: s["start"]):
            if piece["file"] not in files:
                files[piece["file"]] = read_safetensors(os.path.join(checkpoint, piece["file"]))
            _, shape, raw = files[piece["file"]][name]
            assert shape == [piece["end"] - piece["start"]], (name, piece, shape)
            parts.append(raw)
        whole[name] = (tensor["dtype"], tensor["shape"], b"".join(parts))
    return whole


def run(command, env=None):
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    return result.returncode, result.stdout + result.stderr


def expect_refusal(accelrun, checkpoint, workdir, code, needle, what):
    output = os.path.join(workdir, "refused.safetensors")
    rc, text = run([accelrun, "consolidate", checkpoint, "-o", output])
    assert rc == code and needle in text, f"{what}: exit {rc}, expected {code} with `{needle}`:\n{text}"
    assert not os.path.exists(output), f"{what}: an output was written"


def main():
    driver, accelrun, workdir = sys.argv[1:4]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    env = dict(os.environ, ACCEL_CRASH_STATE_BYTES=str(STATE_BYTES))
    project = os.path.join(workdir, "project")
    rc, text = run([driver, "save-sharded", project, "2", "2", "4"], env)
    assert rc == 0, text
    checkpoint = os.path.join(project, "checkpoints", "checkpoint_1")
    model_out = os.path.join(workdir, "out", "model.safetensors")
    optimizer_out = os.path.join(workdir, "out", "optimizer.safetensors")
    rc, text = run([accelrun, "consolidate", checkpoint, "-o", model_out, "--optimizer", optimizer_out])
    assert rc == 0, text
    assert f"wrote {model_out}: 6 model tensors" in text and "from 4 ranks" in text, text

    model, optimizer = expected_state(1)
    checked = 0
    for path, section, expected in ((model_out, "model", model), (optimizer_out, "optimizer", optimizer)):
        consolidated = read_safetensors(path)
        from_ranks = assemble_from_ranks(checkpoint, section)
        assert sorted(consolidated) == sorted(expected) == sorted(from_ranks), (sorted(consolidated), sorted(expected))
        for name, data in expected.items():
            dtype, shape, raw = consolidated[name]
            assert shape == [len(data) // 4], (name, shape)
            assert raw == data, f"{path}: `{name}` differs from the values written"
            assert from_ranks[name][2] == data, f"`{name}` put together from the rank files differs"
            checked += len(raw)
    # The shards were not trivial: some tensor is split across ranks.
    with open(os.path.join(checkpoint, "sharded_state.index.json")) as f:
        index = json.load(f)
    assert any(len(t["slices"]) > 1 for t in index["model"].values()), index

    # estimate-memory reads the sharded checkpoint through its index: the same sizes as the
    # consolidated file's.
    estimates = []
    for target in (checkpoint, model_out):
        rc, text = run([accelrun, "estimate-memory", target, "--format", "json"])
        assert rc == 0, f"estimate-memory {target}:\n{text}"
        estimates.append(json.loads(text))
    sharded, whole = estimates
    assert sharded["checkpoint"]["index"].endswith("sharded_state.index.json"), sharded["checkpoint"]
    for key in ("stored_size", "total_size", "largest_layer", "modules"):
        assert sharded[key] == whole[key], (key, sharded[key], whole[key])
    assert sharded["checkpoint"]["tensors"] == whole["checkpoint"]["tensors"] == TENSORS, sharded["checkpoint"]

    expect_refusal(accelrun, os.path.join(workdir, "nowhere"), workdir, 2, "is not a directory", "no directory")
    plain = os.path.join(workdir, "plain")
    rc, text = run([driver, "save", plain, "1"], env)
    assert rc == 0, text
    expect_refusal(accelrun, os.path.join(plain, "checkpoints", "checkpoint_0"), workdir, 1,
                   "not a sharded checkpoint (no sharded_state.index.json)", "unsharded")

    def copy(name):
        target = os.path.join(workdir, name)
        shutil.copytree(checkpoint, target)
        return target

    unfinished = copy("unfinished")
    os.remove(os.path.join(unfinished, "accel_manifest.json"))
    expect_refusal(accelrun, unfinished, workdir, 1, "the checkpoint was never finished", "no manifest")
    missing = copy("missing")
    os.remove(os.path.join(missing, "model_shard-00002-of-00004.safetensors"))
    expect_refusal(accelrun, missing, workdir, 1, "`model_shard-00002-of-00004.safetensors` is missing",
                   "missing shard")
    flipped = copy("flipped")
    shard = os.path.join(flipped, "optimizer_shard-00003-of-00004.safetensors")
    with open(shard, "r+b") as f:
        f.seek(os.path.getsize(shard) - 5)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0x10]))
    expect_refusal(accelrun, flipped, workdir, 1, "`optimizer_shard-00003-of-00004.safetensors` has sha256",
                   "flipped byte")
    gap = copy("gap")
    split = next(name for name, t in index["model"].items() if len(t["slices"]) > 1)
    edited = json.loads(json.dumps(index))
    edited["model"][split]["slices"][1]["start"] += 1
    with open(os.path.join(gap, "sharded_state.index.json"), "w") as f:
        json.dump(edited, f, indent=2, sort_keys=True)
    rewrite_manifest_entry(gap, "sharded_state.index.json")
    boundary = index["model"][split]["slices"][0]["end"]
    expect_refusal(accelrun, gap, workdir, 1,
                   f"model tensor `{split}`: elements {boundary}..{boundary + 1} are in no slice", "gap")
    rc, text = run([accelrun, "consolidate", checkpoint])
    assert rc == 2 and "missing `-o <file>`" in text, text

    # An output that is one of the checkpoint's own files, by path, through `..`, through a
    # symlink or as a hard link, or any new path inside its folder, would replace part of the
    # checkpoint being read (exit 0 and a checkpoint gone, before): refused, nothing changed.
    own = copy("own")
    before = {name: open(os.path.join(own, name), "rb").read() for name in os.listdir(own)}
    shard = "model_shard-00001-of-00004.safetensors"
    os.symlink(own, os.path.join(workdir, "own_link"))
    os.link(os.path.join(own, shard), os.path.join(workdir, "hard_link.safetensors"))
    for output, needle in [
        (os.path.join(own, shard), "is inside the checkpoint"),
        (os.path.join(workdir, "own", "..", "own", "accel_manifest.json"), "is inside the checkpoint"),
        (os.path.join(workdir, "own_link", shard), "is inside the checkpoint"),
        (os.path.join(own, "new.safetensors"), "is inside the checkpoint"),
        (os.path.join(workdir, "hard_link.safetensors"), f"is the checkpoint's own `{shard}` under another name"),
    ]:
        rc, text = run([accelrun, "consolidate", own, "-o", output])
        assert rc == 2 and needle in text, f"-o {output}: exit {rc}:\n{text}"
    rc, text = run([accelrun, "consolidate", own, "-o", model_out, "--optimizer", model_out])
    assert rc == 2 and "both name" in text, text
    after = {name: open(os.path.join(own, name), "rb").read() for name in os.listdir(own)}
    assert after == before, "a refused consolidate changed the checkpoint"

    # A consolidate killed mid-write leaves `<output>.tmp.<pid>`: the next one removes it.
    stale = model_out + ".tmp.999999999"
    with open(stale, "wb") as f:
        f.write(b"half a file")
    rc, text = run([accelrun, "consolidate", checkpoint, "-o", model_out])
    assert rc == 0 and f"removed {stale}" in text and not os.path.exists(stale), text

    print(f"consolidate: 12 tensors ({checked} bytes) equal the values written and the rank files; 13 refusals; "
          "a stale temporary removed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
