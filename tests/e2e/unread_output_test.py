#!/usr/bin/env python3
"""Nobody reads accelrun's output for a while (a stalled pipe, a paused terminal): the workers
must still train to the end. The launcher writes its output on a thread of its own and keeps
reading the workers' pipes; before, it blocked on its own stdout, stopped reading theirs, and
every worker blocked writing its next step line.

Usage: unread_output_test.py ACCELRUN SPEC WORKDIR
"""
import os
import shutil
import subprocess
import sys
import time


def main():
    accelrun, spec, workdir = sys.argv[1:4]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    chatty = os.path.join(workdir, "chatty.accel")
    with open(spec) as f:
        text = f.read()
    assert "steps = 200" in text and "log_every = 20" in text, "the quickstart changed: update this test"
    # One line per step, about 100 bytes: 3,000 of them are several pipe buffers (64 KiB).
    with open(chatty, "w") as f:
        f.write(text.replace("steps = 200", "steps = 3000").replace("log_every = 20", "log_every = 1"))
    out = os.path.join(workdir, "out")
    run = subprocess.Popen([accelrun, chatty, "--output-dir", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        # Read nothing until the run has saved its model: that must happen without a reader.
        deadline = time.time() + 150
        model = os.path.join(out, "model.safetensors")
        while time.time() < deadline and not os.path.exists(model) and run.poll() is None:
            time.sleep(0.2)
        assert os.path.exists(model), "training did not finish while nobody read accelrun's output"
        stdout, stderr = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    text = stdout.decode() + stderr.decode()
    assert run.returncode == 0, f"accelrun exited {run.returncode}:\n{text[-3000:]}"
    steps = [line for line in stdout.decode().splitlines() if line.startswith("step ")]
    assert len(steps) == 3000, f"{len(steps)} step lines reached the reader, expected 3000"
    assert steps[-1].startswith("step 3000"), steps[-1]
    print(f"unread output: trained to the end with nobody reading; all {len(steps)} step lines arrived after")


if __name__ == "__main__":
    main()
