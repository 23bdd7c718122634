"""A tampered checkpoint never costs the user the good ones.

An adversary (or a script gone wrong) with write access to a checkpoint edits a counter of its
trainer_state.json and rehashes it into the manifest, so that the checkpoint verifies. Then:

1. `"step": 2^63 - 1` once wrapped to -2^63 on resume: the run trained forever and, with
   `total_limit = 3`, rotation deleted the three good checkpoints within a second. The resume is
   now refused, naming the step and the plan's, and every checkpoint is still there, byte for byte.
2. `"world_size": 2^32` was cut to 32 bits and used as a divisor: the rank died of SIGFPE. It is
   now refused by value, and the job exits 1, naming it.
3. Adam's `step` in optimizer.json, 2^63 - 1 or negative, made every update of a lengthened run
   NaN, and its saves rotated the good checkpoints away. It is now refused by range.
4. Rotation never removes the checkpoint a run resumed from: a lengthened run resumed from the
   newest of three keeps it while its own saves rotate the others away.

Usage: tampered_state_test.py ACCELRUN WORKDIR
"""
import filecmp
import json
import os
import re
import shutil
import subprocess
import sys

from e2e_support import rewrite_manifest_entry

STEPS = 60
EVERY = 10
SPEC = """job tampered {{
  compute {{
    distributed_type = MULTI_CPU
    num_processes = 2
  }}
  accelerator {{
    seed = 42
    init_process_group {{ timeout = 60s }}
    project_config {{ project_dir = "{project}"; automatic_checkpoint_naming = true; total_limit = 3 }}
  }}
  model = MLP {{ inputs = 8; hidden = [16]; outputs = 1 }}
  data = SyntheticRegression {{ samples = 256; features = 8; batch_size = 8; seed = 7 }}
  train {{
    steps = {steps}
    optimizer = AdamW {{ lr = 0.001 }}
    log_every = 100
    checkpoint_every = {every}
  }}
  output {{ dir = "{out}" }}
}}
"""


def write_spec(root, steps):
    os.makedirs(root, exist_ok=True)
    spec = os.path.join(root, "job.accel")
    with open(spec, "w") as f:
        f.write(SPEC.format(project=os.path.join(root, "project"), out=os.path.join(root, "out"), steps=steps,
                            every=EVERY))
    return spec


def accelrun(binary, spec, *extra):
    return subprocess.run([binary, spec, *extra], capture_output=True, text=True, timeout=240)


def checkpoints(root):
    base = os.path.join(root, "project", "checkpoints")
    return sorted(int(m.group(1)) for n in os.listdir(base) if (m := re.fullmatch(r"checkpoint_(\d+)", n)))


def tamper(checkpoint, key, value):
    path = os.path.join(checkpoint, "trainer_state.json")
    with open(path) as f:
        state = json.load(f)
    state[key] = value
    with open(path, "w") as f:
        json.dump(state, f, indent=2)
    rewrite_manifest_entry(checkpoint, "trainer_state.json")


def tamper_optimizer_step(checkpoint, value):
    path = os.path.join(checkpoint, "optimizer.json")
    with open(path) as f:
        optimizer = json.load(f)
    assert optimizer["state"], "the checkpoint's optimizer has no state to tamper with"
    for counters in optimizer["state"].values():
        counters["step"] = value
    with open(path, "w") as f:
        json.dump(optimizer, f, indent=2)
    rewrite_manifest_entry(checkpoint, "optimizer.json")


def snapshot(root):
    base = os.path.join(root, "project", "checkpoints")
    copy = os.path.join(root, "snapshot")
    shutil.copytree(base, copy)
    return copy


def assert_untouched(root, copy, what):
    base = os.path.join(root, "project", "checkpoints")
    assert sorted(os.listdir(base)) == sorted(os.listdir(copy)), f"{what}: {os.listdir(base)}"
    for name in os.listdir(copy):
        files = os.listdir(os.path.join(copy, name))
        match, mismatch, errors = filecmp.cmpfiles(os.path.join(base, name), os.path.join(copy, name), files,
                                                   shallow=False)
        assert not mismatch and not errors, f"{what}: {name}: {mismatch + errors} changed"


def main():
    binary, workdir = sys.argv[1:3]
    shutil.rmtree(workdir, ignore_errors=True)
    first = os.path.join(workdir, "first")
    done = accelrun(binary, write_spec(first, STEPS))
    assert done.returncode == 0, done.stdout + done.stderr
    assert checkpoints(first) == [3, 4, 5], checkpoints(first)

    for key, value, expected in [
        ("step", 2**63 - 1, f"the checkpoint is at step {2**63 - 1}, beyond this plan's {STEPS} steps"),
        ("world_size", 2**32, "invalid value 4294967296 of `world_size`: must be at most 1048576"),
    ]:
        root = os.path.join(workdir, key)
        shutil.copytree(first, root)
        spec = write_spec(root, STEPS)
        tamper(os.path.join(root, "project", "checkpoints", "checkpoint_5"), key, value)
        copy = snapshot(root)
        done = accelrun(binary, spec, "--resume", "auto")
        output = done.stdout + done.stderr
        # 1, the job's failure, named: not a signal, not a run that trains on.
        assert done.returncode == 1, f"{key}: exit {done.returncode}\n{output}"
        assert expected in output, f"{key}: {output}"
        assert "signal" not in output.lower(), f"{key}: {output}"
        assert_untouched(root, copy, key)
        print(f"{key} = {value}: refused ({expected}); checkpoints 3, 4, 5 byte-identical")

    # Adam's step in optimizer.json, which a lengthened run resumes and adds to: 2^63 - 1 wrapped
    # and -3 went in as is, both made every update NaN, and the run went on, saving NaN
    # checkpoints that rotated the good ones away.
    for value in [2**63 - 1, 2**53 + 1, -3]:
        root = os.path.join(workdir, f"adam_step_{value}")
        shutil.copytree(first, root)
        spec = write_spec(root, 100)
        tamper_optimizer_step(os.path.join(root, "project", "checkpoints", "checkpoint_5"), value)
        copy = snapshot(root)
        done = accelrun(binary, spec, "--resume", "auto")
        output = done.stdout + done.stderr
        assert done.returncode == 1, f"Adam step {value}: exit {done.returncode}\n{output}"
        assert re.search(rf"optimizer.json: state `[^`]+\.step` is {value}, outside 0 to", output), output
        assert_untouched(root, copy, f"Adam step {value}")
        print(f"Adam step = {value}: refused; checkpoints 3, 4, 5 byte-identical")

    # Lengthened to 100 steps, resumed from checkpoint_5 (step 60): saves 6..9 rotate 3, 4, 6 and
    # 7 away, never 5, which counts toward total_limit = 3. Without the guard: 7, 8, 9.
    root = os.path.join(workdir, "lengthened")
    shutil.copytree(first, root)
    spec = write_spec(root, 100)
    resumed = os.path.join(root, "project", "checkpoints", "checkpoint_5")
    before = {name: open(os.path.join(resumed, name), "rb").read() for name in os.listdir(resumed)}
    done = accelrun(binary, spec, "--resume", "auto")
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert re.search(r"resumed from \S+/checkpoint_5 at step 60", output), output
    assert checkpoints(root) == [5, 8, 9], checkpoints(root)
    after = {name: open(os.path.join(resumed, name), "rb").read() for name in os.listdir(resumed)}
    assert after == before, "the checkpoint resumed from changed"
    print("lengthened run: kept checkpoint_5, which it resumed from; rotated to [5, 8, 9]")


if __name__ == "__main__":
    main()
