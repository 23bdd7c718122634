#!/usr/bin/env python3
"""Exact resume through accelrun, 2 processes: a run killed any number of times and resumed
with `--resume auto` ends bit-identical to a run that never stopped.

1. A straight run of N steps saves a checkpoint every K steps (automatic naming, total_limit).
2. Each trial starts the same job, SIGKILLs the launcher (the workers die with it) at a random
   moment after a random number of checkpoints, sometimes while a save is in progress, then
   resumes; twice per trial. Before one resume of each trial, the newest checkpoint is
   corrupted: the resume must skip it with a warning, load the one before, and still end
   identical (its step numbering and checkpoint numbering continue from the one it loaded).
3. After every kill the resume must load the newest complete checkpoint (the highest
   `checkpoint_N` with a manifest; a `.tmp` folder, what a kill mid-save leaves, never). One
   more run is killed the moment a save's `.tmp` folder appears, so that case always occurs.
4. With manual naming (no project_config), the one `checkpoint` folder resumes the same way.
5. With save_on_each_node on two single-process "machines" of this host, each node writes its
   own identical copy and resumes from it.
6. The final checkpoint folder (weights, optimizer tensors and JSON, scheduler, data position,
   both ranks' RNG states, manifest) and the final model.safetensors must equal the straight
   run's byte for byte.

Usage: resume_test.py ACCELRUN WORKDIR [TRIALS]
"""
import filecmp
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

STEPS = 400
EVERY = 20
SPEC = """job resume {{
  compute {{
    distributed_type = MULTI_CPU
    num_processes = 2
  }}
  accelerator {{
    seed = 42
    init_process_group {{ timeout = 60s }}
    project_config {{ project_dir = "{project}"; automatic_checkpoint_naming = true; total_limit = 3 }}
  }}
  model = MLP {{ inputs = 16; hidden = [384, 384]; outputs = 4 }}
  data = SyntheticRegression {{ samples = 600; features = 16; batch_size = 16; seed = 7 }}
  train {{
    steps = {steps}
    optimizer = AdamW {{ lr = 0.001 }}
    log_every = 100
    checkpoint_every = {every}
  }}
  output {{ dir = "{out}" }}
}}
"""


def write_spec(root):
    os.makedirs(root)
    spec = os.path.join(root, "job.accel")
    with open(spec, "w") as f:
        f.write(SPEC.format(project=os.path.join(root, "project"), out=os.path.join(root, "out"), steps=STEPS,
                            every=EVERY))
    return spec


def run(accelrun, spec, *extra):
    done = subprocess.run([accelrun, spec, *extra], capture_output=True, text=True, timeout=240)
    if done.returncode != 0:
        sys.stdout.write(done.stdout + done.stderr)
        raise AssertionError(f"accelrun {' '.join(extra)} exited {done.returncode}")
    return done.stdout + done.stderr


def checkpoints(root):
    base = os.path.join(root, "project", "checkpoints")
    if not os.path.isdir(base):
        return [], []
    names = os.listdir(base)
    complete = sorted(int(m.group(1)) for n in names if (m := re.fullmatch(r"checkpoint_(\d+)", n)))
    temporary = [n for n in names if n.endswith(".tmp")]
    return complete, temporary


def kill_after_checkpoints(accelrun, spec, extra, count, delay):
    """Starts a run and SIGKILLs it `delay` s after its `count`-th checkpoint line; returns its output."""
    process = subprocess.Popen([accelrun, spec, *extra], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen = 0
    output = []
    for line in process.stdout:
        output.append(line)
        if line.startswith("checkpoint "):
            seen += 1
            if seen == count:
                time.sleep(delay)
                process.send_signal(signal.SIGKILL)
                break
    process.stdout.close()
    if process.wait() != -signal.SIGKILL:
        raise AssertionError("the run ended before the kill; make it longer:\n" + "".join(output))
    return "".join(output)


def kill_during_save(accelrun, spec, extra, root):
    """Starts a run and SIGKILLs it as soon as a save's `checkpoint_N.tmp` folder appears.

    Returns True when the kill left the save unfinished (the `.tmp` folder is still there)."""
    base = os.path.join(root, "project", "checkpoints")
    before = set(os.listdir(base)) if os.path.isdir(base) else set()
    with open(os.path.join(root, "killed.log"), "w") as log:
        process = subprocess.Popen([accelrun, spec, *extra], stdout=log, stderr=subprocess.STDOUT)
        deadline = time.time() + 120
        while time.time() < deadline and process.poll() is None:
            names = set(os.listdir(base)) if os.path.isdir(base) else set()
            # Not the first save: a complete checkpoint must exist to fall back to.
            complete = any(re.fullmatch(r"checkpoint_\d+", n) for n in names)
            if complete and any(n.endswith(".tmp") and n not in before for n in names):
                process.send_signal(signal.SIGKILL)
                break
            time.sleep(0.0005)
        if process.wait() != -signal.SIGKILL:
            raise AssertionError("the run ended before a save could be interrupted; make it longer")
    return bool(checkpoints(root)[1])


def check_resumed(output, expected, what):
    loaded = re.search(r"resumed from (\S+)/checkpoint_(\d+) at step (\d+)", output)
    assert loaded, f"{what}: no resume line:\n{output}"
    assert int(loaded.group(2)) == expected, f"{what}: {loaded.group(0)}, expected checkpoint_{expected}"
    assert int(loaded.group(3)) == (expected + 1) * EVERY, f"{what}: {loaded.group(0)}"
    if "skipped" in output:
        assert ".rejected" in output, f"{what}: a skipped checkpoint was not set aside:\n{output}"
    return loaded


def corrupt_newest(root):
    complete, _ = checkpoints(root)
    path = os.path.join(root, "project", "checkpoints", f"checkpoint_{complete[-1]}", "optimizer.safetensors")
    with open(path, "r+b") as f:
        f.seek(-1, os.SEEK_END)
        last = f.read(1)
        f.seek(-1, os.SEEK_END)
        f.write(bytes([last[0] ^ 0xFF]))
    return complete[-2] if len(complete) > 1 else None


def final_checkpoint(root):
    complete, _ = checkpoints(root)
    return os.path.join(root, "project", "checkpoints", f"checkpoint_{complete[-1]}")


def main():
    accelrun, workdir = sys.argv[1:3]
    trials = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    rng = random.Random(int(os.environ.get("ACCEL_RESUME_SEED", "7")))
    shutil.rmtree(workdir, ignore_errors=True)

    straight = os.path.join(workdir, "straight")
    run(accelrun, write_spec(straight))
    reference = final_checkpoint(straight)
    assert reference.endswith(f"checkpoint_{STEPS // EVERY - 1}"), reference
    reference_files = sorted(os.listdir(reference))
    # A fresh run into a project that has checkpoints would be refused at its first save: it
    # is refused before the first step instead, pointing at --resume.
    again = subprocess.run([accelrun, os.path.join(straight, "job.accel")], capture_output=True, text=True,
                           timeout=240)
    assert again.returncode != 0 and "pass `--resume auto` to continue it" in again.stderr, again.stderr

    mid_save_kills = 0
    fallbacks = 0
    for trial in range(trials):
        root = os.path.join(workdir, f"trial-{trial}")
        spec = write_spec(root)
        corrupt_at = rng.randrange(2)
        extra = []
        for attempt in range(2):
            # Checkpoints come every EVERY steps; the random delay lands in training or in a save.
            output = kill_after_checkpoints(accelrun, spec, extra, rng.randint(1, 4), rng.uniform(0, 0.05))
            if attempt > 0:
                check_resumed(output, expected, f"trial {trial}, resume {attempt}")
            complete, temporary = checkpoints(root)
            mid_save_kills += bool(temporary)
            expected = complete[-1]
            if attempt == corrupt_at and len(complete) > 1:
                expected = corrupt_newest(root)
                fallbacks += 1
            extra = ["--resume", "auto"]
        output = run(accelrun, spec, "--resume", "auto")
        loaded = check_resumed(output, expected, f"trial {trial}, last resume")
        final = final_checkpoint(root)
        assert os.path.basename(final) == os.path.basename(reference), (final, reference)
        assert sorted(os.listdir(final)) == reference_files, sorted(os.listdir(final))
        match, mismatch, errors = filecmp.cmpfiles(reference, final, reference_files, shallow=False)
        assert not mismatch and not errors, f"trial {trial}: differ from the straight run: {mismatch + errors}"
        assert filecmp.cmp(os.path.join(straight, "out", "model.safetensors"),
                           os.path.join(root, "out", "model.safetensors"), shallow=False), "model.safetensors"
        print(f"trial {trial}: killed twice, last resumed from checkpoint_{loaded.group(2)} at step "
              f"{loaded.group(3)}; {len(match)} files bit-identical to the straight run")
    # A kill in the middle of a save: the unfinished folder is ignored and the newest complete
    # checkpoint loads; the run still ends identical.
    root = os.path.join(workdir, "mid-save")
    spec = write_spec(root)
    extra = []
    for attempt in range(5):
        if kill_during_save(accelrun, spec, extra, root):
            break
        extra = ["--resume", "auto"]
    else:
        raise AssertionError("5 kills never landed inside a save")
    complete, temporary = checkpoints(root)
    output = run(accelrun, spec, "--resume", "auto")
    check_resumed(output, complete[-1], f"resume after a kill inside the save of {temporary}")
    final = final_checkpoint(root)
    match, mismatch, errors = filecmp.cmpfiles(reference, final, reference_files, shallow=False)
    assert not mismatch and not errors and os.path.basename(final) == os.path.basename(reference), mismatch
    print(f"mid-save: killed inside {temporary[0]}, resumed from checkpoint_{complete[-1]}; "
          f"{len(match)} files bit-identical to the straight run")
    mid_save_kills += 1

    # Accelerate's default, manual naming: every save replaces `{output}/checkpoint` in one swap.
    root = os.path.join(workdir, "manual")
    os.makedirs(root)
    spec = os.path.join(root, "job.accel")
    with open(spec, "w") as f:
        f.write(re.sub(r"\n    project_config \{[^\n]*\}", "",
                       SPEC.format(project="", out=os.path.join(root, "out"), steps=STEPS, every=EVERY)))
    kill_after_checkpoints(accelrun, spec, [], rng.randint(2, 6), rng.uniform(0, 0.05))
    output = run(accelrun, spec, "--resume", "auto")
    assert re.search(r"resumed from \S+/out/checkpoint at step \d+", output), output
    manual = os.path.join(root, "out", "checkpoint")
    match, mismatch, errors = filecmp.cmpfiles(reference, manual, reference_files, shallow=False)
    assert not mismatch and not errors, f"manual naming: differ from the straight run: {mismatch + errors}"
    print(f"manual naming: resumed from {manual}; {len(match)} files bit-identical to the straight run")

    # save_on_each_node: two "machines" on this host (one process each, --nnodes 2), each
    # node's local rank 0 writes its own copy; each node resumes from its own copy.
    root = os.path.join(workdir, "each-node")
    os.makedirs(root)
    spec = os.path.join(root, "job.accel")
    text = SPEC.format(project="", out=os.path.join(root, "out"), steps=STEPS // 4, every=EVERY)
    text = re.sub(r"project_config \{[^\n]*\}", "project_config { save_on_each_node = true }", text)
    text = text.replace("num_processes = 2", "num_machines = 2\n    num_processes = 2\n"
                        "    main_process_ip = \"127.0.0.1\"\n    main_process_port = 29500")
    with open(spec, "w") as f:
        f.write(text)

    def both_nodes(*extra):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = str(s.getsockname()[1])
        nodes = [subprocess.Popen([accelrun, spec, "--node-rank", str(n), "--master-addr", "127.0.0.1",
                                   "--master-port", port, "--output-dir", os.path.join(root, f"node{n}"), *extra],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for n in (1, 0)]
        outputs = [node.communicate(timeout=240)[0] for node in nodes]
        assert all(node.returncode == 0 for node in nodes), "\n".join(outputs)
        return outputs[1]

    both_nodes()
    copies = [os.path.join(root, f"node{n}", "checkpoint") for n in (0, 1)]
    names = sorted(os.listdir(copies[0]))
    assert names == reference_files and not filecmp.cmpfiles(*copies, names, shallow=False)[1], names
    with open(spec, "w") as f:
        f.write(text.replace(f"steps = {STEPS // 4}", f"steps = {STEPS // 2}"))
    output = both_nodes("--resume", "auto")
    assert f"at step {STEPS // 4}" in output, output
    match, mismatch, errors = filecmp.cmpfiles(*copies, names, shallow=False)
    assert not mismatch and not errors, f"save_on_each_node: the nodes' copies differ: {mismatch + errors}"
    print(f"save_on_each_node: both nodes wrote and resumed from their own copy; {len(match)} files identical")

    print(f"e2e resume: {trials} trials, {mid_save_kills} kills left a save in progress, "
          f"{fallbacks} fell back past a corrupted checkpoint; all bit-identical to the straight run")


if __name__ == "__main__":
    main()
