#!/usr/bin/env python3
"""`train.epochs` and `train.warmup_ratio` through accelrun, and accelrun's `--set` and
`--num-processes` overrides of a spec.

90 samples in batches of 10 are 9 loader batches; on 2 processes with even_batches each draws 5
per epoch (the last round padded from the start). With 2 micro-batches per optimizer step and
sync_with_dataloader, an epoch is ceil(5 / 2) = 3 optimizer steps, so 3 epochs are 9 steps and
every third step is the last of an epoch: the data loader must make exactly 3 passes. A warmup
ratio of 0.25 is ceil(0.25 x 9) = 3 warmup steps. `--set train.epochs=1` and
`--num-processes 1` change the spec before it is compiled, as `accelc build --set` does.
Usage: epochs_test.py ACCELRUN WORKDIR
"""
import json
import os
import shutil
import sys

from e2e_support import read_jsonl, run

SPEC = """job epochs {{
  compute {{
    distributed_type = MULTI_CPU
    num_processes = 2
  }}
  accelerator {{
    seed = 3
    gradient_accumulation_steps = 2
    init_process_group {{ timeout = 60s }}
  }}
  model = MLP {{
    inputs = 4
    hidden = [8]
  }}
  data = SyntheticRegression {{
    samples = 90
    features = 4
    batch_size = 10
    shuffle = false
  }}
  train {{
    epochs = 3
    optimizer = SGD {{ lr = 0.1 }}
    lr_schedule = LINEAR
    warmup_ratio = 0.25
    log_every = 1
  }}
  output {{ dir = "{out}" }}
}}
"""


def linear_lr(base, warmup, total, step):
    if step < warmup:
        return base * step / max(1, warmup)
    return base * max(0.0, (total - step) / max(1, total - warmup))


def launch(accelrun, workdir, name, *flags):
    out = os.path.join(workdir, name)
    os.makedirs(out)
    spec = os.path.join(out, "job.accel")
    with open(spec, "w") as f:
        f.write(SPEC.format(out=out))
    result = run([accelrun, spec, *flags])
    with open(os.path.join(out, "metrics.json")) as f:
        metrics = json.load(f)
    return result.stdout, metrics, [r for r in read_jsonl(os.path.join(out, "metrics.jsonl")) if "loss" in r]


def main():
    accelrun, workdir = sys.argv[1:3]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)

    stdout, metrics, lines = launch(accelrun, workdir, "three-epochs")
    assert "accelrun: 3 epochs of 5 batches per process: 9 optimizer steps" in stdout, stdout
    assert metrics["steps"] == 9, metrics
    assert [l["step"] for l in lines] == list(range(1, 10)), lines
    # The epoch of each step's last batch: 3 steps per pass, and never a fourth pass.
    assert [l["epoch"] for l in lines] == [0, 0, 0, 1, 1, 1, 2, 2, 2], [l["epoch"] for l in lines]
    # 2 processes, batches not split: the scheduler steps twice per optimizer step over 2 x 9
    # steps with 2 x 3 of warmup; step k trains with the rate after 2(k - 1) scheduler steps.
    for line in lines:
        expected = linear_lr(0.1, 6, 18, 2 * (line["step"] - 1))
        assert abs(line["lr"] - expected) < 1e-9, f"step {line['step']}: lr {line['lr']}, expected {expected}"

    stdout, metrics, lines = launch(accelrun, workdir, "set-one-epoch", "--set", "train.epochs=1")
    assert "accelrun: 1 epoch of 5 batches per process: 3 optimizer steps" in stdout, stdout
    assert metrics["steps"] == 3, metrics

    # One process draws all 9 batches per epoch: ceil(9 / 2) = 5 steps per epoch.
    stdout, metrics, lines = launch(accelrun, workdir, "one-process", "--num-processes", "1", "--set",
                                    "compute.distributed_type=NO")
    assert "accelrun: 3 epochs of 9 batches per process: 15 optimizer steps" in stdout, stdout
    assert metrics["steps"] == 15, metrics
    assert "[rank 1]" not in stdout, stdout
    print("epochs: 3 epochs on 2 processes are 9 steps, 3 passes exactly, warmup 3 steps; "
          "--set train.epochs=1 ran 3 steps; --num-processes 1 ran 15")


if __name__ == "__main__":
    main()
