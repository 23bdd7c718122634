#!/usr/bin/env python3
"""The order of the durable-write protocol, seen in the system calls (strace).

A SIGKILL cannot show a missing fsync: the page cache outlives a killed process. Only the order
of the calls can. For every successful rename(src, dst) in a save:
  1. src itself, and every file written inside src when src is a directory, was fsync'd
     (fsync or fdatasync completed) before the rename started;
  2. dst's parent directory is fsync'd after the rename ended, before the process exits.
The saves traced: a CheckpointStore save (a checkpoint folder renamed into place) and a sharded
safetensors save (each shard and the index renamed into place).

Skipped (exit 77) where strace is missing or cannot trace.

Usage: durability_order_test.py CRASH_DRIVER CHECKPOINT_TOOL WORKDIR
"""
import os
import re
import shutil
import subprocess
import sys

# strace pads the pid column: short pids are followed by several blanks.
CALL = re.compile(r"^(\d+)\s+(\w+)\((.*)$")
RESUMED = re.compile(r"^(\d+)\s+<\.\.\. (\w+) resumed>(.*)$")
FD_PATH = re.compile(r"^\d+<(.*?)>")
QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')


def skip(reason):
    print(f"skipped: {reason}")
    sys.exit(77)


def trace(argv, out, env):
    result = subprocess.run(["strace", "-f", "-qq", "-y", "-o", out, "-e",
                             "trace=openat,fsync,fdatasync,rename,renameat,renameat2", *argv],
                            env=env, capture_output=True, text=True, timeout=120)
    if result.returncode != 0 and "ptrace" in result.stderr:
        skip(f"strace cannot trace here: {result.stderr.strip()}")
    assert result.returncode == 0, f"{argv} failed under strace:\n{result.stdout}{result.stderr}"


def events(path):
    """[(name, args, result, start, end)] of completed calls, `start`/`end` their line numbers."""
    pending = {}
    done = []
    with open(path) as f:
        for index, line in enumerate(f):
            line = line.rstrip("\n")
            resumed = RESUMED.match(line)
            if resumed:
                pid, name, rest = resumed.groups()
                start, args = pending.pop((pid, name))
                done.append((name, args, rest.split("= ")[-1].strip(), start, index))
                continue
            call = CALL.match(line)
            if not call:
                continue
            pid, name, rest = call.groups()
            if rest.endswith("<unfinished ...>"):
                pending[(pid, name)] = (index, rest[: -len("<unfinished ...>")])
            else:
                args, _, result = rest.rpartition(") = ")
                done.append((name, args, result.strip(), index, index))
    return done


def check_order(trace_path, what):
    calls = events(trace_path)
    syncs = []  # (path, end)
    written = []  # (path, start): files opened for writing
    renames = []  # (src, dst, start, end)
    for name, args, result, start, end in calls:
        if name in ("fsync", "fdatasync") and result.startswith("0"):
            fd = FD_PATH.match(args)
            if fd:
                syncs.append((fd.group(1), end))
        elif name == "openat" and ("O_WRONLY" in args or "O_RDWR" in args):
            paths = QUOTED.findall(args)
            if paths:
                written.append((paths[0], start))
        elif name.startswith("rename") and result.startswith("0"):
            src, dst = QUOTED.findall(args)[:2]
            renames.append((src, dst, start, end))
    assert renames, f"{what}: no rename traced"
    for src, dst, start, end in renames:
        synced_before = {path for path, at in syncs if at < start}
        must = {src} | {path for path, at in written if path.startswith(src + "/") and at < start}
        missing = sorted(must - synced_before)
        assert not missing, f"{what}: renamed {src} before fsync of {missing}"
        parent = os.path.dirname(dst)
        assert any(path == parent and at > end for path, at in syncs), \
            f"{what}: {parent} not fsync'd after renaming {src} to {dst}"
    print(f"{what}: {len(renames)} rename(s), each after its fsyncs and followed by its directory's")


def main():
    crash_driver, checkpoint_tool, workdir = map(os.path.abspath, sys.argv[1:4])
    if shutil.which("strace") is None:
        skip("strace is not installed")
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    env = dict(os.environ, ACCEL_CRASH_STATE_BYTES="65536")
    # Two saves: the second also rotates nothing but renames into an existing checkpoints/.
    trace([crash_driver, "save", os.path.join(workdir, "project"), "2"], os.path.join(workdir, "store.trace"), env)
    check_order(os.path.join(workdir, "store.trace"), "checkpoint store")
    trace([checkpoint_tool, "write-sample", os.path.join(workdir, "sample")], os.path.join(workdir, "shards.trace"),
          env)
    check_order(os.path.join(workdir, "shards.trace"), "sharded safetensors")


if __name__ == "__main__":
    main()
