#!/usr/bin/env python3
"""Runs a list of one-line mutants against the suite: each mutant's text replaces the original
in its file, its build targets are rebuilt, and its test command runs. A mutant is killed when
the test fails (non-zero exit or timeout), and survives when it passes. Every file is put back
afterwards, and the targets rebuilt, whatever happens.

The list is JSON: [{"file": ..., "from": ..., "to": ..., "build": [targets], "test": "shell command"}, ...].
`from` must occur exactly once in `file`. Prints one line per mutant and the kill rate.

usage: scripts/mutants.py LIST.json [--build-dir build] [--only N,M]
"""
import argparse
import json
import os
import subprocess
import sys


def run(command, timeout, cwd):
    try:
        return subprocess.run(command, shell=True, cwd=cwd, capture_output=True, text=True, timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        return 124


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("list")
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(args.list) as f:
        mutants = json.load(f)
    only = {int(n) for n in args.only.split(",") if n}
    killed = survived = 0
    touched_targets = set()
    for number, mutant in enumerate(mutants, 1):
        if only and number not in only:
            continue
        path = os.path.join(root, mutant["file"])
        with open(path) as f:
            original = f.read()
        if original.count(mutant["from"]) != 1:
            print(f"{number:3} ERROR   {mutant['file']}: the text to mutate occurs {original.count(mutant['from'])} times")
            sys.exit(2)
        try:
            with open(path, "w") as f:
                f.write(original.replace(mutant["from"], mutant["to"]))
            targets = " ".join(mutant["build"])
            touched_targets.update(mutant["build"])
            if run(f"cmake --build {args.build_dir} --target {targets}", 1800, root) != 0:
                print(f"{number:3} NOBUILD {mutant['file']}: {mutant.get('what', '')}")
                continue
            status = run(mutant["test"], mutant.get("timeout", 600), root)
        finally:
            with open(path, "w") as f:
                f.write(original)
        if status != 0:
            killed += 1
            verdict = "killed"
        else:
            survived += 1
            verdict = "SURVIVED"
        print(f"{number:3} {verdict:8} {mutant['file']}: {mutant.get('what', '')}", flush=True)
    if touched_targets:
        run(f"cmake --build {args.build_dir} --target {' '.join(sorted(touched_targets))}", 1800, root)
    total = killed + survived
    if total:
        print(f"{killed} of {total} killed ({100.0 * killed / total:.0f}%)")
    sys.exit(0 if survived == 0 else 1)


if __name__ == "__main__":
    main()
