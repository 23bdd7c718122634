#!/usr/bin/env python3
"""Bytes of memory per byte of input, for each reader of a file a user or a config hands Accel.

Each reader runs as its own process (the command a user types) on generated inputs: the
smallest (an empty list, one row), 1 MiB, 8 MiB, and for the spec and YAML readers the largest
input under their count bounds. GNU time reports the peak RSS of the largest process the
command runs; what an input costs is that peak above the smallest input's (the process, the
stdlib, LibTorch in a worker), per input byte. The bound the project aims at is about 20 bytes
per input byte; a figure above it is in bold.

Readers:
  spec list        accelc check of a spec whose `let` holds a flat list of numbers
  YAML list        accelc check of an Accelerate config holding a flat list
  DeepSpeed JSON   accelc check of a DeepSpeed config of many unknown keys
  metrics.jsonl    accelrun report of a run's metrics log
  CSV dataset      a one-step job (accelrun) reading a CSV of 5 columns
  .npy dataset     the same job reading float32 .npy features and targets
  safetensors      the same job reading a safetensors file of features and targets

Usage: reader_memory.py BIN_DIR [--scale K]
  --scale: multiplies the 1 and 8 MiB sizes (default 1; accelc's limit is 16 MiB)
Prints a Markdown table.
"""
import argparse
import json
import os
import resource
import struct
import subprocess
import sys
import tempfile

def peak_kib(argv, cwd):
    """Peak RSS (KiB) of the largest process `argv` starts, through GNU time: a small process,
    so the figure is not the high-water mark of a Python that forked it."""
    subprocess.run(["/usr/bin/time", "-f", "%M", "-o", os.path.join(cwd, "peak.txt")] + argv, cwd=cwd,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)
    with open(os.path.join(cwd, "peak.txt")) as f:
        return int(f.read().split()[-1])


def job(data):
    return ("job j {\n  compute {\n    distributed_type = MULTI_CPU\n    num_processes = 1\n  }\n"
            f"  model = MLP {{ inputs = 4 }}\n  data = {data}\n  train {{ steps = 1 }}\n}}\n")


def spec_list(folder, nbytes):
    path = os.path.join(folder, "list.accel")
    count = nbytes // 2
    with open(path, "w") as f:
        f.write("let xs = [" + ",".join(["1"] * count) + "]\n")
        f.write(job("SyntheticRegression { features = 4 }"))
    return path


def yaml_list(folder, nbytes):
    path = os.path.join(folder, "list.yaml")
    count = nbytes // 2
    with open(path, "w") as f:
        f.write("compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_CPU\nnum_processes: 2\n")
        f.write("gpu_ids: [" + ",".join(["1"] * count) + "]\n")
    return path


def deepspeed_json(folder, nbytes):
    path = os.path.join(folder, "ds.json")
    count = nbytes // 16
    with open(path, "w") as f:
        f.write("{" + ",".join(f'"k{i:09d}": 1' for i in range(count)) + "}")
    return path


def metrics_log(folder, nbytes):
    run = os.path.join(folder, "run")
    os.makedirs(run, exist_ok=True)
    with open(os.path.join(run, "metrics.jsonl"), "w") as f:
        line = 0
        while f.tell() < nbytes:
            line += 1
            f.write(json.dumps({"step": line, "time": 1.0e9 + line, "loss": 1.0 / line, "lr": 0.001,
                                "epoch": 0, "samples_per_second": 1000.0}) + "\n")
    return run


def csv_job(folder, nbytes):
    data = os.path.join(folder, "data.csv")
    with open(data, "w") as f:
        f.write("a,b,c,d,label\n")
        row = "0.125,0.25,0.5,0.75,1.5\n"
        f.write(row * max(1, nbytes // len(row)))
    path = os.path.join(folder, "csv.accel")
    with open(path, "w") as f:
        f.write(job('CsvDataset {\n    path = "data.csv"\n    target_columns = ["label"]\n  }'))
    return path


def npy(path, rows, columns):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (rows, columns)
    header += " " * (63 - (len(header) + 10) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<f", 0.5) * (rows * columns))


def npy_job(folder, nbytes):
    rows = max(1, nbytes // 20)
    npy(os.path.join(folder, "x.npy"), rows, 4)
    npy(os.path.join(folder, "y.npy"), rows, 1)
    path = os.path.join(folder, "npy.accel")
    with open(path, "w") as f:
        f.write(job('NpyDataset {\n    features_file = "x.npy"\n    targets_file = "y.npy"\n  }'))
    return path


def safetensors_job(folder, nbytes):
    rows = max(1, nbytes // 20)
    header = json.dumps({"features": {"dtype": "F32", "shape": [rows, 4], "data_offsets": [0, rows * 16]},
                         "targets": {"dtype": "F32", "shape": [rows, 1],
                                     "data_offsets": [rows * 16, rows * 20]}}).encode()
    header += b" " * (-len(header) % 8)
    with open(os.path.join(folder, "data.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header)
        f.write(struct.pack("<f", 0.5) * (rows * 5))
    path = os.path.join(folder, "st.accel")
    with open(path, "w") as f:
        f.write(job('SafetensorsDataset { path = "data.safetensors" }'))
    return path


def size_of(path):
    if os.path.isdir(path):
        return os.path.getsize(os.path.join(path, "metrics.jsonl"))
    inputs = {"csv.accel": "data.csv", "npy.accel": ("x.npy", "y.npy"), "st.accel": "data.safetensors"}
    name = inputs.get(os.path.basename(path))
    folder = os.path.dirname(path)
    if name is None:
        return os.path.getsize(path)
    names = name if isinstance(name, tuple) else (name,)
    return sum(os.path.getsize(os.path.join(folder, n)) for n in names)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bin_dir")
    parser.add_argument("--scale", type=int, default=1)
    args = parser.parse_args()
    bin_dir = os.path.abspath(args.bin_dir)
    accelc, accelrun = os.path.join(bin_dir, "accelc"), os.path.join(bin_dir, "accelrun")

    def run_job(spec, folder):
        return [accelrun, spec, "--output-dir", os.path.join(folder, "out")]

    # Per reader: its inputs' sizes in bytes. The spec and the YAML config also just under their
    # bounds (200,000 tokens: a number and a comma each; 100,000 values), their costliest input.
    mib = 1024 * 1024 * args.scale
    readers = [
        ("spec list (`accelc check`)", spec_list, lambda p, d: [accelc, "check", p], (198_000, mib, 8 * mib)),
        ("YAML list (`accelc check`)", yaml_list, lambda p, d: [accelc, "check", p], (196_000, mib, 8 * mib)),
        ("DeepSpeed JSON, unknown keys (`accelc check`)", deepspeed_json, lambda p, d: [accelc, "check", p],
         (mib, 8 * mib)),
        ("metrics.jsonl (`accelrun report`)", metrics_log,
         lambda p, d: [accelrun, "report", p, "-o", os.path.join(d, "report.html")], (mib, 8 * mib)),
        ("CSV dataset (a one-step job)", csv_job, run_job, (mib, 8 * mib)),
        (".npy dataset (a one-step job)", npy_job, run_job, (mib, 8 * mib)),
        ("safetensors dataset (a one-step job)", safetensors_job, run_job, (mib, 8 * mib)),
    ]
    print("| reader | input | peak RSS | bytes per input byte, above the smallest input's peak |")
    print("|---|---:|---:|---:|")
    for name, write, command, sizes in readers:
        measured = []
        for nbytes in (0,) + sizes:  # 0: the smallest input, the process's own cost
            with tempfile.TemporaryDirectory() as folder:
                path = write(folder, nbytes)
                measured.append((size_of(path), peak_kib(command(path, folder), folder) * 1024))
        floor = measured[0][1]
        for size, peak in measured[1:]:
            per_byte = (peak - floor) / size
            shown = f"**{per_byte:.1f}**" if per_byte > 20 else f"{per_byte:.1f}"
            print(f"| {name} | {size / 2**20:.2f} MiB | {peak / 2**20:.0f} MiB | {shown} |", flush=True)

if __name__ == "__main__":
    main()
