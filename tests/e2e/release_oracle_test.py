#!/usr/bin/env python3
"""`accelc check --for TOOL@RELEASE` judged by that release of the tool itself.

Usage: release_oracle_test.py ACCELC REPO_ROOT WORK_DIR [--tool deepspeed|accelerate]
           [--releases 0.17.6,0.19.2]

For every release of the tool (default deepspeed) that compiler/sema/releases.def covers, the
release's own source distribution (from PyPI, kept in $ACCEL_RELEASE_SOURCES or
REPO_ROOT/build/release-sources, as scripts/gen-releases.py keeps it) judges every input in a
fresh interpreter of this environment with only that release's sources put first on its path,
and accelc checks the same files `--for TOOL@RELEASE`. The property: where the release raises,
accelc reports an error; where it accepts, accelc reports none (warnings and notes are fine).
Every disagreement is a failure unless the tool's allow-list in release_oracle/ lists it with
its reason; a listed one that no longer occurs is a failure too.

The judges:
  deepspeed: `DeepSpeedConfig(dict)`, at the world size the file's batch sizes imply.
      Inputs: the JSON probes in release_oracle/ (one per key, bound, default or check that
      changed between the covered releases), and every DeepSpeed JSON of the published corpus
      and of the check oracle's probes that says no "auto" (the Trainer and Accelerate fill
      those, with code of their own releases, so only DeepSpeed's own parser judges here).
  accelerate: check_oracle_test.AccelerateOracle, as the check oracle judges a YAML:
      `accelerate launch --config_file FILE train.py` up to the process start
      (load_config_from_file, _validate_launch_command, the launcher's preparation), then the
      plugins' __post_init__ in the environment launch gives local rank 0. Only Accelerate is
      the release's; a DeepSpeed config the plugin builds goes to this environment's DeepSpeed.
      Inputs: the YAML probes in release_oracle/ and every Accelerate YAML of the published
      corpus and of the check oracle's probes.

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

import check_oracle_test

HERE = os.path.dirname(os.path.abspath(__file__))
PROBES = os.path.join(HERE, "release_oracle")
SKIPPED = 77

# Each judge runs inside one release's interpreter: argv is HERE, the inputs as JSON, a work
# folder of its own. It prints {"module": where the tool was imported from, "version": its
# version, path: None or the release's error text}.
DEEPSPEED_JUDGE = r"""
import contextlib, copy, io, json, logging, sys, warnings
warnings.filterwarnings("ignore")
logging.disable(logging.CRITICAL)
sys.path.insert(0, sys.argv[1])
import check_oracle_test as oracle
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    import deepspeed
    from deepspeed.runtime.config import DeepSpeedConfig
    oracle.WORLD.install()
verdicts = {"module": deepspeed.__file__, "version": deepspeed.__version__.strip()}
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

ACCELERATE_JUDGE = r"""
import contextlib, io, json, sys, types, warnings
warnings.filterwarnings("ignore")
sys.path.insert(0, sys.argv[1])
import check_oracle_test as oracle
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    import accelerate
    oracle.WORLD.install()
    judge = oracle.AccelerateOracle(sys.argv[3])
verdicts = {"module": accelerate.__file__, "version": accelerate.__version__.strip()}
for path in json.loads(sys.argv[2]):
    verdicts[path] = judge(types.SimpleNamespace(id=path, path=path), path)
print(json.dumps(verdicts))
"""


def is_deepspeed_input(path):
    """A DeepSpeed JSON without "auto": only DeepSpeed's own parser judges it."""
    if not path.endswith(".json"):
        return False
    try:
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
    except ValueError:
        return False  # not JSON: no DeepSpeed release reads it
    return isinstance(config, dict) and not check_oracle_test.uses_auto(config)


def is_accelerate_input(path):
    """An Accelerate config: a YAML file that holds a mapping."""
    import yaml

    if not path.endswith((".yaml", ".yml")):
        return False
    try:
        with open(path, encoding="utf-8") as f:
            return isinstance(yaml.safe_load(f), dict)
    except yaml.YAMLError:
        return False


class Tool:
    """What differs between the tools: how a release is judged and what it is given."""

    def __init__(self, name, title, judge, source_root, is_input, allowed, unit):
        self.name, self.title, self.judge = name, title, judge
        self.source_root = source_root  # the unpacked sdist -> the folder to import from
        self.is_input = is_input
        self.allowed = os.path.join(PROBES, allowed)
        self.unit = unit


TOOLS = {
    "deepspeed": Tool("deepspeed", "DeepSpeed", DEEPSPEED_JUDGE, lambda tree: tree, is_deepspeed_input,
                      "allowed_differences.txt", "DeepSpeed JSON files"),
    # Accelerate's sdist keeps the package under src/.
    "accelerate": Tool("accelerate", "Accelerate", ACCELERATE_JUDGE, lambda tree: tree / "src",
                       is_accelerate_input, "accelerate_allowed_differences.txt", "Accelerate YAML files"),
}


def covered_releases(repo_root, tool):
    prefix = f"ACCEL_RELEASE({tool.name}, "
    releases = []
    with open(os.path.join(repo_root, "compiler/sema/releases.def"), encoding="utf-8") as f:
        for line in f:
            if line.startswith(prefix):
                releases.append(json.loads(line[len(prefix):].rstrip().rstrip(")")))
    return releases


def generator(repo_root):
    spec = importlib.util.spec_from_file_location("gen_releases", os.path.join(repo_root, "scripts/gen-releases.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def inputs(repo_root, tool):
    """(id, path) of every input: the release probes, then the corpus's and the check oracle's."""
    found = []
    roots = [("release-probe", PROBES),
             ("corpus", os.path.join(repo_root, "tests/corpus/published")),
             ("check-probe", os.path.join(HERE, "check_oracle/probes"))]
    for prefix, root in roots:
        for folder, _, names in os.walk(root):
            for name in sorted(names):
                path = os.path.join(folder, name)
                if tool.is_input(path):
                    found.append((prefix + "/" + os.path.relpath(path, root), path))
    return sorted(found)


def judge_with_release(tool, version, tree, paths, work_dir):
    root = tool.source_root(tree)
    env = dict(os.environ, DS_ACCELERATOR="cpu", PYTHONWARNINGS="ignore", PYTHONPATH=str(root))
    judge_dir = os.path.join(work_dir, f"{tool.name}-{version}")
    os.makedirs(judge_dir, exist_ok=True)
    proc = subprocess.run([sys.executable, "-c", tool.judge, HERE, json.dumps(paths), judge_dir], env=env,
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise SystemExit(f"{tool.title} {version} could not judge the inputs:\n{proc.stderr[-3000:]}")
    verdicts = json.loads(proc.stdout.strip().splitlines()[-1])
    # The environment holds a release of its own (maybe this very version): the judge must
    # have imported the sources it was given.
    module, imported = verdicts.pop("module"), verdicts.pop("version")
    if imported != version or not os.path.realpath(module).startswith(os.path.realpath(root) + os.sep):
        raise SystemExit(f"the sources of {tool.title} {version} in {root} were not what the judge "
                         f"imported: {tool.name} {imported} from {module}")
    return verdicts


def accelc_errors(accelc, tool, version, paths):
    """{path: [(code, message)]} of accelc's errors on `paths` checked for `version`."""
    argv = [accelc, "check", "--for", f"{tool.name}@{version}", "--format", "json", "--max-diagnostics", "0"]
    proc = subprocess.run(argv + paths, capture_output=True, text=True, timeout=300)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"accelc check exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    errors = {os.path.realpath(p): [] for p in paths}
    for d in json.loads(proc.stdout):
        # Only each input's own diagnostics: a DeepSpeed JSON that a YAML names is judged
        # with the YAML by Accelerate's plugin, not on its own.
        path = os.path.realpath(d.get("file", ""))
        if path in errors and d["severity"] == "error":
            errors[path].append((d["code"], d["message"]))
    return errors


class Allowed:
    """A line of an allow-list: `<input id glob> <first>..<last> <reason>`."""

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
    parser.add_argument("--tool", choices=sorted(TOOLS), default="deepspeed", help="the tool whose releases judge")
    parser.add_argument("--releases", help="comma-separated releases to judge with (default: every covered one)")
    opts = parser.parse_args(argv)
    tool = TOOLS[opts.tool]
    work_dir = os.path.abspath(opts.work_dir)
    os.makedirs(work_dir, exist_ok=True)
    releases = covered_releases(opts.repo_root, tool)
    chosen = opts.releases.split(",") if opts.releases else releases
    sources = os.environ.get("ACCEL_RELEASE_SOURCES", os.path.join(opts.repo_root, "build/release-sources"))
    os.makedirs(sources, exist_ok=True)
    gen = generator(opts.repo_root)
    trees = {}
    for version in chosen:
        try:
            trees[version] = gen.fetch(tool.name, version, gen.Path(sources))
        except subprocess.CalledProcessError:
            print(f"release oracle: skipped: {tool.title} {version}'s sources are not kept in {sources} "
                  f"and PyPI cannot be reached to fetch them")
            return SKIPPED
    # Absolute: Accelerate's launch runs each case in a folder of its own.
    cases = inputs(os.path.abspath(opts.repo_root), tool)
    paths = [p for _, p in cases]
    with ThreadPoolExecutor(max_workers=2) as pool:
        verdicts = dict(zip(chosen, pool.map(
            lambda v: judge_with_release(tool, v, trees[v], paths, work_dir), chosen)))
    allowed_name = os.path.basename(tool.allowed)
    allowed = read_allowed(tool.allowed, releases)
    failures, listed = [], 0
    print(f"release oracle: {len(cases)} {tool.unit}, each judged by {len(chosen)} releases")
    print(f"{'release':>9} {'agree':>6} {'listed':>6} {'differ':>6}  (agreement)")
    total_agree = total = 0
    for version in chosen:
        errors = accelc_errors(opts.accelc, tool, version, paths)
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
            side = (f"{tool.title} raises `{verdict}`, accelc reports no error" if verdict is not None
                    else f"{tool.title} accepts, accelc reports {mine[0][0]}: {mine[0][1]}")
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
                failures.append(f"{allowed_name}:{entry.line_number}: `{entry.glob}` no longer differs; "
                                "remove the line")
    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
