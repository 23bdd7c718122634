"""A CPU job does not pay for CUDA: its workers never load LibTorch's CUDA half.

The runtime links PyPI's LibTorch, whose CUDA libraries (libtorch_cuda, libc10_cuda, NCCL) are
gigabytes; only the CUDA back end, libaccel_cuda.so, links them, and a worker opens it for a
`cuda` plan alone (runtime/cuda/loader.cpp). This runs the quickstart (2 CPU processes over Gloo)
with the dynamic loader reporting every library it loads, and fails if any worker loaded one of
them. (libtorch_cpu itself needs the small CUDA runtime, libcudart, which is therefore allowed.)

Usage: cpu_job_loads_no_cuda_test.py <accelrun> <specs/quickstart.accel> <work dir>
"""
import os
import re
import shutil
import subprocess
import sys

CUDA_HALF = ["libaccel_cuda.so", "libtorch_cuda.so", "libc10_cuda.so", "libnccl.so"]


def main():
    accelrun, spec, workdir = sys.argv[1:4]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    env = dict(os.environ, LD_DEBUG="files")
    run = subprocess.run([accelrun, spec, "--output-dir", os.path.join(workdir, "out")], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert run.returncode == 0, f"the quickstart failed (exit {run.returncode}):\n{run.stdout[-4000:]}"
    loaded = set(re.findall(r"file=(\S+?) \[\d+\];\s+generating link map", run.stdout))
    assert any(name.startswith("libtorch_cpu.so") for name in loaded), \
        f"the loader's report shows no libtorch_cpu.so: LD_DEBUG did not reach the workers ({sorted(loaded)})"
    paid = sorted(name for name in loaded if any(os.path.basename(name).startswith(lib) for lib in CUDA_HALF))
    assert not paid, f"a CPU job's workers loaded CUDA's libraries: {', '.join(paid)}"
    print(f"ok: a CPU job loaded {len(loaded)} libraries, none of {', '.join(CUDA_HALF)}")


main()
