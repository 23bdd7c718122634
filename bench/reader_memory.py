#!/usr/bin/env python3
"""Bytes of memory per byte of input, for each reader of a file a user or a config hands Accel.

Each reader runs as its own process (the command a user types) on a generated input of three
sizes: the smallest (an empty list, a header alone), 1 MiB and 8 MiB. The peak RSS of the
process tree (its largest process, as getrusage reports) is measured for each; what the input
costs is the peak above the smallest input's (the process, the stdlib, LibTorch in a worker),
per input byte, and the slope between 1 and 8 MiB is what one more byte costs. The bound the
project holds its readers to is about 20 bytes per input byte; a figure above it is in bold.

Readers:
  spec list        accelc check of a spec whose `let` holds a flat list of numbers
  YAML list        accelc check of an Accelerate config holding a flat list
  DeepSpeed JSON   accelc check of a DeepSpeed config of many unknown keys
  metrics.jsonl    accelrun report of a run's metrics log
  CSV dataset      a one-step job (accelrun) reading a CSV of 5 columns
  .npy dataset     the same job reading float32 .npy features and targets
  safetensors      the same job reading a safetensors file of features and targets

Usage: reader_memory.py BIN_DIR [--scale K]
  --scale: multiplies the sizes (default 1: 1 and 8 MiB, under accelc's 16 MiB limit)
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
    """Peak RSS (KiB) of the largest process `argv` starts, measured in a fresh Python process
    so that earlier runs do not count."""
    probe = ("import resource, subprocess, sys\n"
             "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    out = subprocess.run([sys.executable, "-c", probe] + argv, cwd=cwd, capture_output=True, text=True,
                         timeout=600)
    return int(out.stdout.strip())


def job(data):
    return ("job j {\n  compute {\n    distributed_type = MULTI_CPU\n    num_processes = 1\n  }\n"
            f"  model = MLP {{ inputs = 4 }}\n  data = {data}\n  train {{ steps = 1 }}\n}}\n")


def spec_list(folder, megabytes):
    path = os.path.join(folder, "list.accel")
    count = megabytes * 1024 * 1024 // 2
    with open(path, "w") as f:
        f.write("let xs = [" + ",".join(["1"] * count) + "]\n")
        f.write(job("SyntheticRegression { features = 4 }"))
    return path


def yaml_list(folder, megabytes):
    path = os.path.join(folder, "list.yaml")
    count = megabytes * 1024 * 1024 // 2
    with open(path, "w") as f:
        f.write("compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_CPU\nnum_processes: 2\n")
        f.write("gpu_ids: [" + ",".join(["1"] * count) + "]\n")
    return path


def deepspeed_json(folder, megabytes):
    path = os.path.join(folder, "ds.json")
    count = megabytes * 1024 * 1024 // 16
    with open(path, "w") as f:
        f.write("{" + ",".join(f'"k{i:09d}": 1' for i in range(count)) + "}")
    return path


def metrics_log(folder, megabytes):
    run = os.path.join(folder, "run")
    os.makedirs(run, exist_ok=True)
    with open(os.path.join(run, "metrics.jsonl"), "w") as f:
        line = 0
        while f.tell() < megabytes * 1024 * 1024:
            line += 1
            f.write(json.dumps({"step": line, "time": 1.0e9 + line, "loss": 1.0 / line, "lr": 0.001,
                                "epoch": 0, "samples_per_second": 1000.0}) + "\n")
    return run


def csv_job(folder, megabytes):
    data = os.path.join(folder, "data.csv")
    with open(data, "w") as f:
        f.write("a,b,c,d,label\n")
        row = "0.125,0.25,0.5,0.75,1.5\n"
        f.write(row * (megabytes * 1024 * 1024 // len(row)))
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


def npy_job(folder, megabytes):
    rows = megabytes * 1024 * 1024 // 20
    npy(os.path.join(folder, "x.npy"), rows, 4)
    npy(os.path.join(folder, "y.npy"), rows, 1)
    path = os.path.join(folder, "npy.accel")
    with open(path, "w") as f:
        f.write(job('NpyDataset {\n    features_file = "x.npy"\n    targets_file = "y.npy"\n  }'))
    return path


def safetensors_job(folder, megabytes):
    rows = megabytes * 1024 * 1024 // 20
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

    readers = [
        ("spec list (`accelc check`)", spec_list, lambda p, d: [accelc, "check", p]),
        ("YAML list (`accelc check`)", yaml_list, lambda p, d: [accelc, "check", p]),
        ("DeepSpeed JSON, unknown keys (`accelc check`)", deepspeed_json, lambda p, d: [accelc, "check", p]),
        ("metrics.jsonl (`accelrun report`)", metrics_log,
         lambda p, d: [accelrun, "report", p, "-o", os.path.join(d, "report.html")]),
        ("CSV dataset (a one-step job)", csv_job, run_job),
        (".npy dataset (a one-step job)", npy_job, run_job),
        ("safetensors dataset (a one-step job)", safetensors_job, run_job),
    ]
    sizes_mb = (0, 1 * args.scale, 8 * args.scale)  # 0: the smallest input, the process's own cost
    print("| reader | input | peak RSS | bytes per input byte, above the smallest input's peak | slope |")
    print("|---|---:|---:|---:|---:|")
    for name, write, command in readers:
        peaks, sizes = [], []
        for megabytes in sizes_mb:
            with tempfile.TemporaryDirectory() as folder:
                path = write(folder, megabytes)
                sizes.append(size_of(path))
                peaks.append(peak_kib(command(path, folder), folder) * 1024)
        per_byte = [(peaks[i] - peaks[0]) / sizes[i] for i in (1, 2)]
        slope = (peaks[2] - peaks[1]) / (sizes[2] - sizes[1])
        flag = lambda value: f"**{value:.1f}**" if value > 20 else f"{value:.1f}"  # noqa: E731
        print(f"| {name} | {sizes[1] / 2**20:.1f} / {sizes[2] / 2**20:.1f} MiB | "
              f"{peaks[1] / 2**20:.0f} / {peaks[2] / 2**20:.0f} MiB | "
              f"{flag(per_byte[0])} / {flag(per_byte[1])} | {slope:.1f} |", flush=True)

if __name__ == "__main__":
    main()
