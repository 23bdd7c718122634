#!/usr/bin/env python3
"""SIGKILL a process that saves checkpoints, at random moments, and check what it left.

Each trial starts `checkpoint_crash_driver save` on the same project folder (so it resumes from
what the previous trial left, removes that trial's temporary folders and rotates with
total_limit=2), kills it after a random delay, then runs `checkpoint_crash_driver verify`:
the newest complete checkpoint loads, its checksums verify, its bytes are what that step
saved, it is not older than the last step the driver reported saved (rotation never removed
the last complete checkpoint), and every checkpoint_N folder verifies. After the last trial a
save that runs to completion must leave no temporary folder behind.

With --sharded, every save is a sharded one (`save-sharded`): four writer processes, one per
rank, each write their slices, and the driver finishes as rank 0. Half the kills then hit the
whole process group (all ranks at once), the other half one rank alone, whatever it is doing:
the driver must give up that save, and the previous checkpoint must still load.

Usage: checkpoint_crash_test.py DRIVER WORKDIR [--trials N] [--seed S] [--sharded]
Prints one summary line; exits 1 on the first failed trial, with the driver's output.
"""
import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import time


def children(pid):
    """The processes `pid` has started and that still run (the rank writers of a sharded save)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as listing:
            return [int(child) for child in listing.read().split()]
    except OSError:
        return []


def run_trial(driver, project, delay, sharded, rng):
    """Starts a save loop, kills it after `delay` seconds.

    Returns (last saved, killed mid-save, one rank killed alone, stderr)."""
    command = [driver, "save-sharded" if sharded else "save", project]
    # Its own process group, so that a kill reaches the rank writers too.
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    time.sleep(delay)
    ranks = []
    if sharded and rng.random() < 0.5:
        # Between two saves no rank runs: wait for the next save's ranks (up to 2 s).
        deadline = time.monotonic() + 2
        while not ranks and time.monotonic() < deadline and process.poll() is None:
            ranks = children(process.pid)
            if not ranks:
                time.sleep(0.001)
    expected = -signal.SIGKILL
    stdout = None
    if ranks:
        # One rank dies in the middle of its file: the driver must fail the save (exit 3), not
        # finish it. A rank that had already exited (a zombie, or gone) takes no kill: then the
        # driver goes on saving, and the whole group is killed below.
        try:
            os.kill(rng.choice(ranks), signal.SIGKILL)
            stdout, stderr = process.communicate(timeout=10)
            expected = 3
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
    if stdout is None:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
    lines = stdout.split()
    saved = [int(lines[i + 1]) for i in range(0, len(lines) - 1, 2) if lines[i] == "saved"]
    mid_save = len(lines) >= 2 and lines[-2] == "begin"
    if process.returncode != expected:
        raise SystemExit(f"driver exited {process.returncode}, expected {expected}:\n{stdout}\n{stderr}")
    return (saved[-1] if saved else None), mid_save, expected == 3, stderr


def verify(driver, project, last_saved, sharded, extra=()):
    command = "verify-sharded" if sharded else "verify"
    result = subprocess.run([driver, command, project, str(-1 if last_saved is None else last_saved), *extra],
                            capture_output=True, text=True)
    return result.returncode == 0, result.stdout + result.stderr


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("driver")
    parser.add_argument("workdir")
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--sharded", action="store_true")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    shutil.rmtree(args.workdir, ignore_errors=True)
    project = os.path.join(args.workdir, "project")
    os.makedirs(project)

    # Time one save so the kills spread over a few saves, whatever the disk's speed.
    start = time.perf_counter()
    save = "save-sharded" if args.sharded else "save"
    subprocess.run([args.driver, save, os.path.join(args.workdir, "probe"), "3"], check=True,
                   stdout=subprocess.DEVNULL)
    per_save = (time.perf_counter() - start) / 3
    shutil.rmtree(os.path.join(args.workdir, "probe"))

    last_saved, mid_save_kills, rank_kills, failures = None, 0, 0, 0
    for trial in range(1, args.trials + 1):
        # Uniform over the first few saves, including the resume at start-up.
        delay = rng.uniform(0.0, 4 * per_save + 0.02)
        saved, mid_save, rank_kill, stderr = run_trial(args.driver, project, delay, args.sharded, rng)
        mid_save_kills += mid_save
        rank_kills += rank_kill
        if saved is not None:
            last_saved = saved
        ok, report = verify(args.driver, project, last_saved, args.sharded)
        if not ok:
            failures += 1
            print(f"trial {trial} (seed {seed}, kill after {delay * 1e3:.1f} ms, last saved {last_saved}) FAILED:\n"
                  f"{report}{stderr}")
            break
    if failures == 0:
        # One save to completion removes what the crashes left.
        subprocess.run([args.driver, save, project, "1"], check=True, stdout=subprocess.DEVNULL)
        last_saved = (last_saved if last_saved is not None else -1) + 1
        ok, report = verify(args.driver, project, last_saved, args.sharded, ["--no-temporaries"])
        if not ok:
            failures += 1
            print(f"after the trials (seed {seed}): {report}")
    mode = "sharded checkpoint" if args.sharded else "checkpoint"
    alone = f" ({rank_kills} of one rank alone)" if args.sharded else ""
    print(f"{mode} crash loop: {args.trials} trials, {mid_save_kills} kills inside a save{alone}, "
          f"last checkpoint {last_saved}, {failures} failures (seed {seed}, ~{per_save * 1e3:.0f} ms per save)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
