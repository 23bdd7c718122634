#!/usr/bin/env python3
"""`train.find_executable_batch_size` through accelrun on 2 processes: rank 1 is
made to run out of memory above batch 20 (ACCEL_INJECT_OOM_ABOVE_BATCH=1:20, the message
CUDA gives); both ranks must agree on Accelerate's sequence 32 -> 28 -> 25 -> 22 -> 19, train at
19, and end bit-identical to a run that started at 19 (the probes leave no trace: gradients,
batch-norm statistics and the RNG are restored). Without any out-of-memory error the starting
size is kept; when nothing fits the run fails naming the sizes tried.
Usage: batch_size_search_test.py ACCELRUN WORKDIR
"""
import os
import shutil
import sys

from e2e_support import rank_digests, read_safetensors, run

SPEC = """job search {{
  compute {{ distributed_type = MULTI_CPU; num_processes = 2 }}
  accelerator {{ seed = 4; init_process_group {{ timeout = 60s }} }}
  model = MLP {{ inputs = 8; hidden = [16]; outputs = 1 }}
  data = SyntheticRegression {{ samples = 512; features = 8; batch_size = {batch}; seed = 2 }}
  train {{ steps = 12; optimizer = AdamW {{ lr = 0.01 }}; log_every = 4; find_executable_batch_size = {search} }}
  output {{ dir = "{out}" }}
}}
"""


def job(accelrun, workdir, name, batch, search, inject=None, check=True):
    out = os.path.join(workdir, name)
    os.makedirs(out)
    spec = os.path.join(out, "job.accel")
    with open(spec, "w") as f:
        f.write(SPEC.format(batch=batch, search="true" if search else "false", out=out))
    env = dict(os.environ)
    if inject:
        env["ACCEL_INJECT_OOM_ABOVE_BATCH"] = inject
    return out, run([accelrun, spec], check=check, env=env)


def main():
    accelrun, workdir = sys.argv[1:3]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    searched, result = job(accelrun, workdir, "searched", 32, True, inject="1:20")
    assert "batch size 19 fits on every process (out of memory at 32, 28, 25, 22)" in result.stdout, result.stdout
    direct, _ = job(accelrun, workdir, "direct", 19, False)
    a = read_safetensors(os.path.join(searched, "model.safetensors"))
    b = read_safetensors(os.path.join(direct, "model.safetensors"))
    assert a == b, "training after the search differs from a run started at batch 19"
    assert len(set(rank_digests(searched, 2))) == 1

    kept, result = job(accelrun, workdir, "kept", 32, True)
    assert "batch size 32 fits on every process\n" in result.stdout, result.stdout

    _, failed = job(accelrun, workdir, "nothing-fits", 8, True, inject="0", check=False)
    assert failed.returncode != 0, "a run where nothing fits succeeded"
    assert "8, 7, 6, 5, 4, 3, 2, 1" in failed.stdout + failed.stderr, failed.stderr
    print("batch size search: both ranks agreed on 19 after rank 1 ran out; identical to a run at 19")


if __name__ == "__main__":
    main()
