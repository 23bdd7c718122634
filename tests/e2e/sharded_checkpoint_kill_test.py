#!/usr/bin/env python3
"""SIGKILL of one rank during a real sharded save (`state_dict_type = sharded`, stage 3, 4 ranks):
the job fails naming that rank, the previous checkpoint still verifies, and `--resume auto`
continues from it to the very weights of a run that was never killed.

Two kinds of kill:
  * at a chosen moment of the save protocol, through the worker's test hook
    ACCEL_TEST_SAVE_KILL=POINT:RANK:SAVE (the rank SIGKILLs itself): a rank before it writes its
    slices, a rank after writing them (the others at the barrier), rank 0 before it finishes
    (every rank's slices on disk, no index, no manifest), and rank 0 just after the checkpoint is
    in place (then the resume starts from that new checkpoint);
  * at random moments, from outside (as checkpoint_crash_test.py kills the format's writers): a
    random rank SIGKILLed after a random delay while the run saves every step, so kills land in
    the middle of rank files, records, the index, the manifest and the rename.
After each kill: no unfinished folder is taken for a checkpoint, every `checkpoint_N` verifies
(`accelrun consolidate` verifies every byte against the manifest before writing), and the resumed
run ends bit-identical to the reference.

Usage: sharded_checkpoint_kill_test.py ACCELC ACCELRUN WORKDIR [--trials N] [--seed S]
"""
import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from e2e_support import read_safetensors, run, worker_ranks  # noqa: E402
from sharding_support import compile_plan  # noqa: E402

SPEC = """job killed {{
  compute {{ distributed_type = MULTI_CPU; num_processes = 4 }}
  accelerator {{
    seed = 5
    init_process_group {{ timeout = 30s }}
    dataloader_config {{ use_seedable_sampler = true }}
    project_config {{ project_dir = "{root}/project"; automatic_checkpoint_naming = true; total_limit = 2 }}
  }}
  model = MLP {{ inputs = 8; hidden = [64, 64]; outputs = 2 }}
  data = SyntheticRegression {{ samples = 640; features = 8; batch_size = 16; seed = 9 }}
  train {{
    steps = {steps}
    optimizer = AdamW {{ lr = 0.01 }}
    log_every = 1
    checkpoint_every = {every}
  }}
  output {{ dir = "{root}/out" }}
}}
"""
SHARDING = dict(stage=3, wrap_policy="transformer_based", transformer_layer_cls_to_wrap=["Linear"],
                state_dict_type="sharded")
# (point, rank, save): the second save (step 4) is killed; the first (step 2) must survive.
HOOKED = [("slices", 1, 2), ("written", 3, 2), ("finish", 0, 2), ("finished", 0, 2)]
STEPS, EVERY = 6, 2
RANDOM_STEPS = 40


def plan_for(accelc, root, steps, every):
    return compile_plan(accelc, SPEC.format(root=root, steps=steps, every=every), os.path.join(root, "plan"),
                        **SHARDING)


def checkpoints(root):
    folder = os.path.join(root, "project", "checkpoints")
    return sorted((int(m.group(1)), os.path.join(folder, name)) for name in os.listdir(folder)
                  if (m := re.fullmatch(r"checkpoint_(\d+)", name)))


def verify_all(accelrun, root):
    """Every checkpoint_N verifies; returns them."""
    found = checkpoints(root)
    for _, path in found:
        run([accelrun, "consolidate", path, "-o", path + ".verified.safetensors"])
    return found


def resume(accelrun, plan, root, reference, failures, what):
    result = run([accelrun, plan, "--resume", "auto"], check=False)
    if result.returncode != 0:
        failures.append(f"{what}: the resume failed (exit {result.returncode})")
        return None
    step = re.search(r"resumed from \S+ at step (\d+)", result.stdout)
    if read_safetensors(os.path.join(root, "out", "model.safetensors")) != reference:
        failures.append(f"{what}: the resumed run's weights differ from the run never killed")
    return int(step.group(1)) if step else 0


def hooked_kill(accelc, accelrun, workdir, reference, point, rank, save, failures):
    root = os.path.join(workdir, f"{point}_rank{rank}")
    plan = plan_for(accelc, root, STEPS, EVERY)
    env = dict(os.environ, ACCEL_TEST_SAVE_KILL=f"{point}:{rank}:{save}")
    started = time.monotonic()
    killed = run([accelrun, plan], check=False, env=env)
    what = f"killed rank {rank} at `{point}` of save {save}"
    text = killed.stdout + killed.stderr
    if killed.returncode != 1 or not re.search(rf"rank {rank} \(pid \d+\) failed with signal 9", text):
        failures.append(f"{what}: accelrun exited {killed.returncode} without naming rank {rank}'s SIGKILL")
    numbers = [n for n, _ in verify_all(accelrun, root)]
    expected = [0, 1] if point == "finished" else [0]
    if numbers != expected:
        failures.append(f"{what}: complete checkpoints {numbers}, expected {expected}")
    step = resume(accelrun, plan, root, reference, failures, what)
    if step != 2 * len(expected):
        failures.append(f"{what}: resumed at step {step}, expected {2 * len(expected)}")
    return f"{what}: checkpoints {numbers} verify, resumed at step {step}, same weights " \
           f"({time.monotonic() - started:.1f} s)"


def random_kill(accelc, accelrun, workdir, reference, trial, rng, failures):
    root = os.path.join(workdir, f"random{trial}")
    plan = plan_for(accelc, root, RANDOM_STEPS, 1)
    process = subprocess.Popen([accelrun, plan], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    # Once the first checkpoint is saved, a random rank dies after a random delay.
    output = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        output.append(line)
        if re.match(r"checkpoint \S+ saved at step 1 ", line):
            break
    ranks = worker_ranks(os.path.join(root, "out", "plan.json"))  # the copy accelrun hands its workers
    delay = rng.uniform(0, 1.0)
    time.sleep(delay)
    victim = rng.choice(sorted(ranks)) if ranks else None
    try:
        if victim is not None:
            os.kill(ranks[victim], signal.SIGKILL)
    except ProcessLookupError:
        victim = None
    rest, _ = process.communicate(timeout=120)
    text = "".join(output) + rest
    # Rank 0's own lines (the launcher repeats its last lines, indented, after the failure).
    saved = sorted({int(s) for s in re.findall(r"^checkpoint \S+ saved at step (\d+)", text, re.MULTILINE)})
    what = f"random kill {trial} (rank {victim} after {delay:.2f} s)"
    if victim is None or process.returncode == 0:
        return f"{what}: the run ended before the kill (nothing to check)"
    if process.returncode != 1:
        failures.append(f"{what}: accelrun exited {process.returncode}")
    # An unfinished save's folder: the kill landed inside a save.
    unfinished = [n for n in os.listdir(os.path.join(root, "project", "checkpoints")) if n.endswith(".tmp")]
    found = verify_all(accelrun, root)
    # Saving every step from checkpoint_0 on: checkpoint_N holds step N + 1. Rotation never
    # removes the newest complete one, and a save reported done is complete.
    if not found or found[-1][0] + 1 < saved[-1]:
        failures.append(f"{what}: step {saved[-1]} reported saved, newest complete checkpoint "
                        f"{found[-1][1] if found else None}")
    step = resume(accelrun, plan, root, reference[RANDOM_STEPS], failures, what)
    return f"{what}: last save reported at step {saved[-1]}{', killed mid-save' if unfinished else ''}; " \
           f"{len(found)} checkpoints verify, resumed at step {step}, same weights"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("accelc")
    parser.add_argument("accelrun")
    parser.add_argument("workdir")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    args = parser.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    rng = random.Random(args.seed)
    reference = {}
    for steps, every in ((STEPS, EVERY), (RANDOM_STEPS, 1)):
        root = os.path.join(args.workdir, f"reference{steps}")
        started = time.monotonic()
        run([args.accelrun, plan_for(args.accelc, root, steps, every)])
        print(f"reference, {steps} steps: {time.monotonic() - started:.1f} s")
        reference[steps] = read_safetensors(os.path.join(root, "out", "model.safetensors"))
    failures = []
    report = []
    for point, rank, save in HOOKED:
        report.append(hooked_kill(args.accelc, args.accelrun, args.workdir, reference[STEPS], point, rank, save,
                                  failures))
    for trial in range(args.trials):
        report.append(random_kill(args.accelc, args.accelrun, args.workdir, reference, trial, rng, failures))
    print("\n".join(report))
    assert not failures, f"seed {args.seed}:\n" + "\n".join(failures)
    print(f"sharded checkpoint kills: {len(HOOKED)} chosen moments and {args.trials} random ones (seed "
          f"{args.seed}); the previous checkpoint always verified and resumed")


if __name__ == "__main__":
    main()
