#!/usr/bin/env python3
"""`accelrun test` and the workers' check-in, with real processes:

1. `accelrun test SPEC` on 1, 2 and 3 processes runs every data operation over the job's
   process group, rank 0 lists each check, and the launcher says the job is ready;
2. two launchers of one job (placed by hand) whose plans differ are refused on both ranks,
   each naming the other rank's plan, before any step runs.

Usage: self_test_test.py ACCELRUN SPEC WORKDIR
"""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from e2e_support import free_port  # noqa: E402

# Every operation the self-test must have checked, in order (runtime/distributed/self_test.cpp).
CHECKS = [
    "wait_for_everyone", "send_to_device", "gather", "concatenate, slice_tensors", "gather_object",
    "broadcast", "broadcast_object_list", "reduce", "convert_to_fp32", "pad_across_processes",
    "synchronize_rng_states", "synchronize_rng_states", "listify",
]


def self_test(accelrun, spec, workdir, processes):
    out = os.path.join(workdir, f"test{processes}")
    run = subprocess.run([accelrun, "test", spec, "--output-dir", out, "--nproc-per-node", str(processes)],
                         capture_output=True, text=True, timeout=180)
    text = run.stdout + run.stderr
    sys.stdout.write(text)
    assert run.returncode == 0, f"accelrun test on {processes} processes exited {run.returncode}"
    checked = re.findall(r"accelrun: test: ok  (.+?)\s{2,}", text)
    assert [name.strip() for name in checked] == CHECKS, f"checks listed: {checked}"
    assert f"every rank got the expected result of every data operation (world size {processes})" in text
    assert re.search(rf"accelrun: test passed in [\d.]+ s: ready for distributed training on world size {processes}\n",
                     text)
    # Testing trains nothing.
    assert not os.path.exists(os.path.join(out, "model.safetensors")), "accelrun test wrote a model"
    print(f"accelrun test on {processes} processes: {len(checked)} checks passed")


def write_spec(spec, workdir, name, old, new):
    with open(spec) as f:
        text = f.read()
    assert old in text, f"`{old}` is not in {spec}"
    path = os.path.join(workdir, name)
    with open(path, "w") as f:
        f.write(text.replace(old, new))
    return path


def plans_differ(accelrun, spec, workdir):
    # The same job but for one value: the check-in must catch it on both ranks.
    specs = [spec, write_spec(spec, workdir, "other.accel", "steps = 200", "steps = 201")]
    port = free_port()
    runs = []
    for node, node_spec in enumerate(specs):
        runs.append(subprocess.Popen(
            [accelrun, node_spec, "--output-dir", os.path.join(workdir, f"node{node}"), "--nnodes", "2",
             "--node-rank", str(node), "--nproc-per-node", "1", "--master-addr", "127.0.0.1",
             "--master-port", str(port)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    texts = [run.communicate(timeout=120)[0] for run in runs]
    for node, (run, text) in enumerate(zip(runs, texts)):
        sys.stdout.write(text)
        assert run.returncode == 1, f"node {node}'s launcher exited {run.returncode}"
        other = 1 - node
        assert re.search(rf"this rank runs plan sha256:\w+, but rank {other} runs plan sha256:\w+", text), \
            f"node {node} does not name rank {other}'s plan"
        assert not re.search(r"^(\[rank \d\] )?step \d", text, re.M), f"node {node} trained"
    print("two plans in one job: refused on both ranks, each naming the other's plan")


def main():
    accelrun, spec, workdir = sys.argv[1:4]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    for processes in (1, 2, 3):
        self_test(accelrun, spec, workdir, processes)
    plans_differ(accelrun, spec, workdir)


if __name__ == "__main__":
    main()
