#!/usr/bin/env python3
"""A user's TorchScript model that fails, as a user on 4 processes sees it.

1. width: a model of 4 inputs on rows of 8 features fails on rank 0 before any process group
   forms (a forward pass on the meta device), in seconds, with the cause (`mat1 and mat2 shapes
   cannot be multiplied (2x8 and 4x32)`) and the scripted traceback, once, and the verdict ends
   with the cause; the other ranks are stopped while they wait at the rendezvous.
2. training: a model that fails only in training mode (so the check above passes) fails on every
   rank in its first step: the cause and the traceback are printed once, the verdict names the
   rank whose error came first, groups the others in one line, and ends with the cause; the run
   directory keeps the verdict and the error with its traceback (failure.txt).

Usage: model_errors_test.py ACCELRUN WORKDIR
"""
import os
import re
import shutil
import subprocess
import sys
import time

import torch

ACCELRUN, WORKDIR = sys.argv[1:3]

SPEC = """job {name} {{
  compute {{ distributed_type = MULTI_CPU; num_processes = 4 }}
  accelerator {{ seed = 1; init_process_group {{ timeout = 60s }} }}
  model = TorchScript {{ path = "{model}" }}
  data = SyntheticRegression {{ samples = 256; features = 8; batch_size = 8; seed = 7 }}
  train {{ steps = 5; optimizer = SGD {{ lr = 0.01 }}; log_every = 1 }}
  output {{ dir = "{out}" }}
}}
"""


class Narrow(torch.nn.Module):
    """Takes 4 features; the data has 8."""

    def __init__(self):
        super().__init__()
        self.inner = torch.nn.Linear(4, 32)
        self.head = torch.nn.Linear(32, 1)

    def forward(self, x):
        return self.head(torch.relu(self.inner(x)))


class BrokenInTraining(torch.nn.Module):
    """Right width, but its training branch reshapes the batch wrongly."""

    def __init__(self):
        super().__init__()
        self.inner = torch.nn.Linear(8, 1)

    def forward(self, x):
        if self.training:
            x = x.reshape(-1, 3)
        return self.inner(x)


def launch(name, module):
    root = os.path.join(WORKDIR, name)
    os.makedirs(root)
    model = os.path.join(root, "model.pt")
    torch.jit.save(torch.jit.script(module), model)
    spec = os.path.join(root, "job.accel")
    with open(spec, "w") as f:
        f.write(SPEC.format(name=name, model=model, out=os.path.join(root, "out")))
    started = time.monotonic()
    result = subprocess.run([ACCELRUN, spec], capture_output=True, text=True, timeout=240)
    return result, time.monotonic() - started


def relayed_errors(text, cause):
    """The workers' error lines that carry `cause`, without the `[rank N] ` prefix of ranks but 0."""
    return [re.sub(r"^\[rank \d+\] ", "", line) for line in text.splitlines()
            if re.match(r"^(\[rank \d+\] )?accelrun: error: rank \d: ", line) and cause in line]


def once(text, needle, what):
    count = text.count(needle)
    assert count == 1, f"{what}: `{needle}` is printed {count} times:\n{text}"


def failed_once(name, module, cause):
    """Runs `module` on 4 processes: the run fails, its error (with `cause`) and traceback are
    relayed once. Returns the run, the relayed error line, the output's last line and seconds."""
    result, seconds = launch(name, module)
    both = result.stdout + result.stderr
    assert result.returncode != 0, both
    relayed = relayed_errors(both, cause)
    assert len(relayed) == 1, f"{name}: the error is relayed {len(relayed)} times:\n{both}"
    once(both, "Traceback of TorchScript, original code", f"{name}: the traceback")
    return result, relayed[0], result.stderr.rstrip("\n").splitlines()[-1], seconds


def main():
    shutil.rmtree(WORKDIR, ignore_errors=True)
    os.makedirs(WORKDIR)

    result, relayed, last, seconds = failed_once("width", Narrow(), "mat1 and mat2 shapes cannot be multiplied "
                                                 "(2x8 and 4x32)")
    assert "does not take this data's rows of 8 features" in relayed, relayed
    assert re.search(r"^accelrun: error: rank 0 \(pid \d+\) failed", result.stderr, re.M), result.stderr
    assert last.startswith("rank 0's error: the TorchScript model ") and "(2x8 and 4x32)" in last, last
    print(f"width: refused on rank 0 before the rendezvous in {seconds:.1f} s, cause and traceback once")

    cause = "shape '[-1, 3]' is invalid for input of size"
    result, relayed, last, seconds = failed_once("training", BrokenInTraining(), cause)
    # Its own exit status: it is not stopped while it exits on its own.
    named = re.search(r"^accelrun: error: rank (\d) \(pid \d+\) failed with exit code 1;", result.stderr, re.M)
    assert named, result.stderr
    first = re.match(r"accelrun: error: rank (\d): ", relayed).group(1)
    assert named.group(1) == first, f"the verdict names rank {named.group(1)}, the first error was rank {first}'s"
    others = ", ".join(str(r) for r in range(4) if str(r) != first)
    assert re.search(r"^ranks? [0-9, -]+ failed with the same error$", result.stderr, re.M), result.stderr
    assert last.startswith(f"rank {first}'s error: the TorchScript model failed: RuntimeError: "), last
    assert cause in last, last
    # The run directory keeps the verdict and the error as printed, traceback included.
    with open(os.path.join(WORKDIR, "training", "out", "failure.txt")) as f:
        kept = f.read()
    assert kept.startswith(f"accelrun: error: rank {first} (pid ") and cause in kept, kept
    assert f"rank {first}'s error as it printed it:" in kept and "Traceback of TorchScript, original code" in kept, kept
    print(f"training: one error and one traceback for 4 ranks (rank {first} named; {others} grouped), "
          f"ending with the cause, in {seconds:.1f} s")


if __name__ == "__main__":
    main()
