#!/usr/bin/env python3
"""`accelc check --for deepspeed@RELEASE` judged by that release of DeepSpeed itself.

Usage: release_oracle_test.py ACCELC REPO_ROOT WORK_DIR [--releases 0.17.6,0.19.2]

For every DeepSpeed release compiler/sema/releases.def covers, the release's own source
distribution (from PyPI, kept in $ACCEL_RELEASE_SOURCES or REPO_ROOT/build/release-sources, as
scripts/gen-releases.py keeps it) parses every input with `DeepSpeedConfig`, in a fresh interpreter
of this environment, and accelc checks the same files `--for deepspeed@RELEASE`. The property:
where the release raises, accelc reports an error; where it accepts, accelc reports none
(warnings and notes are fine). Every disagreement is a failure unless
release_oracle/allowed_differences.txt lists it with its reason; a listed one that no longer
occurs is a failure too.

Inputs: the probes in release_oracle/ (one per key, bound, default or check that changed between
the covered releases), and every DeepSpeed JSON of the published corpus and of the check
oracle's probes that says no "auto" (the Trainer and Accelerate fill those, with code of their
own releases, so only DeepSpeed's own parser judges here).

Exit 77 (skipped) when PyPI cannot be reached to fetch a release that is not kept yet.
"""

import argparse
import fnmatch
import importlib.util
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
SKIPPED = 77

# Runs inside one release's interpreter: prints {path: None or the release's error text}.
JUDGE = r"""
import contextlib, copy, io, json, logging, sys, warnings
warnings.filterwarnings("ignore")
logging.disable(logging.CRITICAL)
sys.path.insert(0, sys.argv[1])
import check_oracle_test as oracle
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    import deepspeed
    from deepspeed.runtime.config import DeepSpeedConfig
    oracle.WORLD.install()
verdicts = {"version": deepspeed.__version__.strip()}
for path in json.loads(sys.argv[2]):
    with open(path, encoding="utf-8") as f:
        config = json.load(f)
    oracle.WORLD.size = oracle.implied_world(config)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            DeepSpeedConfig(copy.deepcopy(config))
        verdicts[path] = None
    except (Exception, SystemExit) as e:
        verdicts[path] = oracle.describe_error(e)
print(json.dumps(verdicts))
"""


def covered_releases(repo_root):
    releases = []
    with open(os.path.join(repo_root, "compiler/sema/releases.def"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("ACCEL_RELEASE(deepspeed, "):
                releases.append(json.loads(line[len("ACCEL_RELEASE(deepspeed, "):].rstrip().rstrip(")")))
    return releases


def generator(repo_root):
    spec = importlib.util.spec_from_file_location("gen_releases", os.path.join(repo_root, "scripts/gen-releases.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def uses_auto(node):
    if isinstance(node, dict):
        return any(uses_auto(v) for v in node.values())
    if isinstance(node, list):
        return any(uses_auto(v) for v in node)
    return node == "auto"


def inputs(repo_root):
    """(id, path) of every input: the release probes, then the corpus's and the check oracle's
    DeepSpeed JSONs without "auto"."""
    found = []
    roots = [("release-probe", os.path.join(HERE, "release_oracle")),
             ("corpus", os.path.join(repo_root, "tests/corpus/published")),
             ("check-probe", os.path.join(HERE, "check_oracle/probes"))]
    for prefix, root in roots:
        for folder, _, names in os.walk(root):
            for name in sorted(names):
                path = os.path.join(folder, name)
                if not name.endswith(".json"):
                    continue
                try:
                    with open(path, encoding="utf-8") as f:
                        config = json.load(f)
                except ValueError:
                    continue  # not JSON: no DeepSpeed release reads it
                if isinstance(config, dict) and not uses_auto(config):
                    found.append((prefix + "/" + os.path.relpath(path, root), path))
    return sorted(found)


def judge_with_release(version, tree, paths):
    env = dict(os.environ, DS_ACCELERATOR="cpu", PYTHONWARNINGS="ignore", PYTHONPATH=str(tree))
    proc = subprocess.run([sys.executable, "-c", JUDGE, HERE, json.dumps(paths)], env=env,
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise SystemExit(f"DeepSpeed {version} could not judge the inputs:\n{proc.stderr[-3000:]}")
    verdicts = json.loads(proc.stdout.strip().splitlines()[-1])
    if verdicts.pop("version") != version:
        raise SystemExit(f"the sources of DeepSpeed {version} imported another release")
    return verdicts


def accelc_errors(accelc, version, paths):
    """{path: [(code, message)]} of accelc's errors on `paths` checked for `version`."""
    argv = [accelc, "check", "--for", f"deepspeed@{version}", "--format", "json", "--max-diagnostics", "0"]
    proc = subprocess.run(argv + paths, capture_output=True, text=True, timeout=300)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"accelc check exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    errors = {os.path.realpath(p): [] for p in paths}
    for d in json.loads(proc.stdout):
        path = os.path.realpath(d.get("file", ""))
        if path in errors and d["severity"] == "error":
            errors[path].append((d["code"], d["message"]))
    return errors


class Allowed:
    """A line of allowed_differences.txt: `<input id glob> <first>..<last> <reason>`."""

    def __init__(self, line_number, glob, first, last, reason):
        self.line_number, self.glob, self.first, self.last, self.reason = line_number, glob, first, last, reason
        self.used = False

    def matches(self, case_id, version, releases):
        return (fnmatch.fnmatch(case_id, self.glob)
                and releases.index(self.first) <= releases.index(version) <= releases.index(self.last))


def read_allowed(path, releases):
    entries = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            glob, span, reason = line.split(None, 2)
            first, _, last = span.partition("..")
            if first not in releases or (last or first) not in releases:
                raise SystemExit(f"{path}:{number}: `{span}` names a release releases.def does not cover")
            entries.append(Allowed(number, glob, first, last or first, reason))
    return entries


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("accelc")
    parser.add_argument("repo_root")
    parser.add_argument("work_dir")
    parser.add_argument("--releases", help="comma-separated releases to judge with (default: every covered one)")
    opts = parser.parse_args(argv)
    os.makedirs(opts.work_dir, exist_ok=True)
    releases = covered_releases(opts.repo_root)
    chosen = opts.releases.split(",") if opts.releases else releases
    sources = os.environ.get("ACCEL_RELEASE_SOURCES", os.path.join(opts.repo_root, "build/release-sources"))
    os.makedirs(sources, exist_ok=True)
    gen = generator(opts.repo_root)
    trees = {}
    for version in chosen:
        try:
            trees[version] = gen.fetch("deepspeed", version, gen.Path(sources))
        except subprocess.CalledProcessError:
            print(f"release oracle: skipped: DeepSpeed {version}'s sources are not kept in {sources} "
                  f"and PyPI cannot be reached to fetch them")
            return SKIPPED
    cases = inputs(opts.repo_root)
    paths = [p for _, p in cases]
    with ThreadPoolExecutor(max_workers=2) as pool:
        verdicts = dict(zip(chosen, pool.map(lambda v: judge_with_release(v, trees[v], paths), chosen)))
    allowed = read_allowed(os.path.join(HERE, "release_oracle", "allowed_differences.txt"), releases)
    failures, listed = [], 0
    print(f"release oracle: {len(cases)} DeepSpeed JSON files, each judged by {len(chosen)} releases")
    print(f"{'release':>9} {'agree':>6} {'listed':>6} {'differ':>6}  (agreement)")
    total_agree = total = 0
    for version in chosen:
        errors = accelc_errors(opts.accelc, version, paths)
        agree = differ = listed_here = 0
        for case_id, path in cases:
            verdict = verdicts[version][path]
            mine = errors[os.path.realpath(path)]
            if (verdict is not None) == bool(mine):
                agree += 1
                continue
            entry = next((e for e in allowed if e.matches(case_id, version, releases)), None)
            if entry is not None:
                entry.used = True
                listed_here += 1
                continue
            differ += 1
            side = (f"DeepSpeed raises `{verdict}`, accelc reports no error" if verdict is not None
                    else f"DeepSpeed accepts, accelc reports {mine[0][0]}: {mine[0][1]}")
            failures.append(f"{case_id} under {version}: {side}")
        total_agree += agree
        total += len(cases)
        listed += listed_here
        print(f"{version:>9} {agree:>6} {listed_here:>6} {differ:>6}  ({100.0 * agree / len(cases):.1f}%)")
    print(f"release oracle: {total_agree} of {total} judgements agree ({100.0 * total_agree / total:.1f}%), "
          f"{listed} listed differences")
    if not opts.releases:
        for entry in allowed:
            if not entry.used:
                failures.append(f"allowed_differences.txt:{entry.line_number}: `{entry.glob}` no longer differs; "
                                "remove the line")
    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
