#!/usr/bin/env python3
"""Generates compiler/sema/releases.def: what each covered release of Accelerate and DeepSpeed
reads from a config file, with its defaults, bounds and checks.

Usage: scripts/gen-releases.py [--sources DIR] [-o FILE]

The table is read from the tools themselves, never typed by hand: for every release in RELEASES
the script fetches its source distribution from PyPI (`pip download`, into --sources), imports it
in a fresh interpreter of the pinned virtual environment (.venv, whose torch and pydantic both
tools run on) and introspects what its config readers declare:

- DeepSpeed: each pydantic model a config section is read into (fields, aliases, defaults,
  bounds, whether it refuses unknown keys, its validators), the top-level keys `DeepSpeedConfig`
  asks a minimal file for, with the defaults it resolves for them, and the keys it refuses
  whatever their value (`_REMOVED_*_CONFIG_KEYS`).
- Accelerate: the config file's own keys (`ClusterConfig`'s fields, which its loader checks) with
  their defaults, and for each section the launch options its keys become.

The newest release of each tool must be the one python/requirements.txt pins: the checker's
schemas model it, and a unit test compares them with the table's newest rows.
"""

import argparse
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The releases the table covers, oldest first. DeepSpeed: the last patch of each of the two minor
# releases before the pinned one, and every patch of the pinned minor (its defaults changed
# within it). Accelerate: the pinned minor and the three before it.
RELEASES = {
    "accelerate": ["1.12.0", "1.13.0", "1.14.0", "1.15.0"],
    "deepspeed": ["0.17.6", "0.18.9", "0.19.0", "0.19.1", "0.19.2", "0.19.3", "0.19.4", "0.19.5",
                  "0.19.6", "0.19.7", "0.19.8"],
}

# DeepSpeed's config sections that it reads through a pydantic model, by the key a file writes,
# with the model's module and class. A section whose class a release lacks is one that release
# reads with `dict.get` (or not at all): the table then says nothing about its keys.
DEEPSPEED_SECTIONS = [
    ("zero_optimization", "deepspeed.runtime.zero.config", "DeepSpeedZeroConfig"),
    ("fp16", "deepspeed.runtime.precision_config", "DeepSpeedFP16Config"),
    ("bf16", "deepspeed.runtime.precision_config", "DeepSpeedBF16Config"),
    ("compile", "deepspeed.compile.config", "CompileConfig"),
    ("comms_logger", "deepspeed.comm.config", "CommsLoggerConfig"),
    ("tensorboard", "deepspeed.monitor.config", "TensorBoardConfig"),
    ("wandb", "deepspeed.monitor.config", "WandbConfig"),
    ("csv_monitor", "deepspeed.monitor.config", "CSVConfig"),
    ("comet", "deepspeed.monitor.config", "CometConfig"),
    ("hybrid_engine", "deepspeed.runtime.config", "HybridEngineConfig"),
    ("timers.throughput", "deepspeed.utils.config", "DeepSpeedThroughputTimerConfig"),
    ("tensor_parallel", "deepspeed.runtime.tensor_parallel.config", "TPTrainingConfig"),
]

# Accelerate's launch option groups, by the config-file section whose keys become those options.
ACCELERATE_SECTIONS = {
    "DeepSpeed Arguments": "deepspeed_config",
    "FSDP Arguments": "fsdp_config",
    "Megatron-LM Arguments": "megatron_lm_config",
    "FP8 Arguments": "fp8_config",
    "MPI Arguments": "mpirun_config",
    "ParallelismConfig Arguments": "parallelism_config",
}

# Runs inside one release's interpreter; prints the release's facts as JSON.
PROBE_DEEPSPEED = r"""
import enum, json, sys, warnings
warnings.filterwarnings("ignore")
import deepspeed
import deepspeed.comm
deepspeed.comm.get_rank = lambda *a, **k: 0
deepspeed.comm.get_world_size = lambda *a, **k: 1
import importlib, pydantic
from pydantic_core import PydanticUndefined
import annotated_types as at

def plain(value):
    if isinstance(value, enum.Enum):
        value = value.value
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, (bool, int, float, str)) for v in value):
        return list(value)
    return PydanticUndefined

def bounds(field):
    out = []
    for m in field.metadata:
        for attr, op in (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<=")):
            v = getattr(m, attr, None)
            if v is not None:
                out.append(op + json.dumps(v))
    return " ".join(out)

def nested_models(annotation):
    args = getattr(annotation, "__args__", None) or ()
    found = [a for a in args if isinstance(a, type) and issubclass(a, pydantic.BaseModel)]
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        found.append(annotation)
    return found

sections = []
def walk(path, cls):
    keys = []
    for name, field in cls.model_fields.items():
        default = plain(field.default) if field.default is not PydanticUndefined else PydanticUndefined
        row = {"bounds": bounds(field),
               "default": None if default is PydanticUndefined else json.dumps(default)}
        for key in {name, field.alias or name}:
            keys.append(dict(row, key=key))
        for model in nested_models(field.annotation):
            walk(path + "." + (field.alias or name), model)
    decorators = cls.__pydantic_decorators__
    checks = sorted(set(decorators.model_validators) | set(decorators.field_validators))
    sections.append({"section": path, "closed": cls.model_config.get("extra") == "forbid",
                     "keys": keys, "checks": checks})

for path, module, name in json.loads(sys.argv[1]):
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        continue
    walk(path, cls)

from deepspeed.runtime import config as ds_config, constants

# The keys DeepSpeedConfig asks a minimal file for: a dict that notes each key asked (`.get`,
# `[]`, `in`) with its own path, in a set its copies share. Then each top-level section it reads
# with `.get`, given empty, for the keys asked inside it.
asked = set()
class Noting(dict):
    def __init__(self, items, path=""):
        super().__init__(items)
        self.path = path
    def note(self, key):
        asked.add((self.path, key))
    def get(self, key, *default):
        self.note(key)
        return super().get(key, *default)
    def __getitem__(self, key):
        self.note(key)
        return super().__getitem__(key)
    def __contains__(self, key):
        self.note(key)
        return super().__contains__(key)
    def setdefault(self, key, *default):
        self.note(key)
        return super().setdefault(key, *default)
    def pop(self, key, *default):
        self.note(key)
        return super().pop(key, *default)

def ask(extra):
    try:
        return ds_config.DeepSpeedConfig(Noting(dict({"train_micro_batch_size_per_gpu": 1}, **extra)))
    except Exception:
        return None

config = ask({})
modelled = {path.split(".")[0] for path, _, _ in json.loads(sys.argv[1])}
for path, key in sorted(asked):
    if path == "" and isinstance(key, str) and key not in modelled:
        ask({key: Noting({}, key)})
defaults = {}
for name in dir(constants):
    key = getattr(constants, name)
    if isinstance(key, str) and ("", key) in asked and hasattr(constants, name + "_DEFAULT"):
        value = plain(getattr(config, key, PydanticUndefined))
        if value is not PydanticUndefined and value == plain(getattr(constants, name + "_DEFAULT")):
            defaults[key] = json.dumps(value)
for section in sorted({path for path, _ in asked}):
    keys = sorted(key for path, key in asked if path == section and isinstance(key, str))
    sections.append({"section": section, "closed": False, "checks": [],
                     "keys": [{"key": k, "default": defaults.get(k) if not section else None, "bounds": ""}
                              for k in keys]})
refused = [{"section": "", "key": k} for k in getattr(ds_config, "_REMOVED_TOP_LEVEL_CONFIG_KEYS", {})]
refused += [{"section": "zero_optimization", "key": k}
            for k in getattr(ds_config, "_REMOVED_ZERO_CONFIG_KEYS", {})]
print(json.dumps({"version": deepspeed.__version__, "sections": sections, "refused": refused}))
"""

PROBE_ACCELERATE = r"""
import dataclasses, json, sys, warnings
warnings.filterwarnings("ignore")
import accelerate
from accelerate.commands.config.config_args import ClusterConfig
from accelerate.commands.launch import launch_command_parser

def default_of(field):
    if field.default is dataclasses.MISSING:
        return None
    value = field.default
    value = getattr(value, "value", value)
    return json.dumps(value) if value is None or isinstance(value, (bool, int, float, str)) else None

fields = [f for f in dataclasses.fields(ClusterConfig)]
sections = [{"section": "", "closed": True, "checks": [],
             "keys": [{"key": f.name, "default": default_of(f), "bounds": ""} for f in fields]}]
groups = json.loads(sys.argv[1])
parser = launch_command_parser()
by_section = {}
for group in parser._action_groups:
    section = groups.get(group.title)
    for action in group._group_actions:
        if action.dest.startswith("dynamo_"):
            by_section.setdefault("dynamo_config", []).append(action)
        elif section:
            by_section.setdefault(section, []).append(action)
for section, actions in sorted(by_section.items()):
    keys = []
    for action in actions:
        default = action.default
        keys.append({"key": action.dest, "bounds": "",
                     "default": json.dumps(default) if isinstance(default, (bool, int, float, str))
                     else None})
    sections.append({"section": section, "closed": False, "checks": [], "keys": keys})
print(json.dumps({"version": accelerate.__version__, "sections": sections, "refused": []}))
"""


def fetch(tool, version, sources):
    """The unpacked source distribution of `tool` `version`, downloaded once into `sources`."""
    unpacked = sources / f"{tool}-{version}"
    if unpacked.is_dir():
        return unpacked
    subprocess.run([str(ROOT / ".venv/bin/python"), "-m", "pip", "download", "-q", "--no-deps",
                    "--no-binary", ":all:", f"{tool}=={version}", "-d", str(sources)], check=True)
    with tarfile.open(sources / f"{tool}-{version}.tar.gz") as archive:
        extract_safely(archive, sources)
    return unpacked


def extract_safely(archive, destination):
    """Unpacks what Python's own "data" filter (3.11.4 on) lets through, with that filter where
    it exists; Debian 12 ships 3.11.2, which lacks it. Without it: only plain files and folders
    that stay inside `destination`, owned by whoever runs this, with no setuid, setgid or
    group- and other-write bits (as root, tarfile would keep the archive's)."""
    if hasattr(tarfile, "data_filter"):
        archive.extractall(destination, filter="data")
        return
    root = Path(destination).resolve()
    members = []
    for member in archive.getmembers():
        target = (root / member.name).resolve()
        if not (member.isfile() or member.isdir()) or root not in (target, *target.parents):
            sys.exit(f"gen-releases: refusing archive member {member.name!r}")
        member.mode &= 0o755
        member.uid, member.gid, member.uname, member.gname = os.getuid(), os.getgid(), "", ""
        members.append(member)
    archive.extractall(destination, members=members)


def probe(tool, version, sources):
    tree = fetch(tool, version, sources)
    env = dict(os.environ, DS_ACCELERATOR="cpu", PYTHONWARNINGS="ignore",
               PYTHONPATH=str(tree / "src" if tool == "accelerate" else tree))
    if tool == "deepspeed":
        script, argument = PROBE_DEEPSPEED, json.dumps(DEEPSPEED_SECTIONS)
    else:
        script, argument = PROBE_ACCELERATE, json.dumps(ACCELERATE_SECTIONS)
    out = subprocess.run([str(ROOT / ".venv/bin/python"), "-c", script, argument], env=env, check=True,
                         capture_output=True, text=True).stdout
    facts = json.loads(out.strip().splitlines()[-1])
    if facts["version"].strip() != version:
        sys.exit(f"gen-releases: imported {tool} {facts['version']} where {version} was asked for")
    return facts


def runs(versions, value_of):
    """Maximal runs of consecutive releases with the same (non-None) value: (first, last, value)."""
    out = []
    for version in versions:
        value = value_of(version)
        if value is not None and out and out[-1][2] == value and out[-1][1] == previous:
            out[-1] = (out[-1][0], version, value)
        elif value is not None:
            out.append((version, version, value))
        previous = version
    return out


def row(macro, tool, *fields):
    """One line of releases.def; strings become C++ string literals (JSON's escapes are C++'s)."""
    cells = [json.dumps(f) if isinstance(f, str) else ("true" if f else "false") for f in fields]
    return f"{macro}({tool}, {', '.join(cells)})"


def rows_for(tool, facts):
    versions = RELEASES[tool]
    lines = [row("ACCEL_RELEASE", tool, v) for v in versions]

    def section_of(version, section):
        return next((s for s in facts[version]["sections"] if s["section"] == section), None)

    for section in sorted({s["section"] for f in facts.values() for s in f["sections"]}):
        def closed(version):
            s = section_of(version, section)
            return s and ("closed" if s["closed"] else "open")

        for first, last, kind in runs(versions, closed):
            lines.append(row("ACCEL_RELEASE_SECTION", tool, section, first, last, kind == "closed"))
        in_section = [section_of(v, section) for v in versions if section_of(v, section)]
        for key in sorted({k["key"] for s in in_section for k in s["keys"]}):
            def key_of(version):
                s = section_of(version, section)
                k = s and next((k for k in s["keys"] if k["key"] == key), None)
                return k and (k["default"] or "", k["bounds"])

            for first, last, (default, bounds) in runs(versions, key_of):
                lines.append(row("ACCEL_RELEASE_KEY", tool, section, key, first, last, default, bounds))
        for check in sorted({c for s in in_section for c in s["checks"]}):
            def runs_check(version):
                s = section_of(version, section)
                return (s and check in s["checks"]) or None

            for first, last, _ in runs(versions, runs_check):
                lines.append(row("ACCEL_RELEASE_CHECK", tool, section, check, first, last))
    for section, key in sorted({(r["section"], r["key"]) for f in facts.values() for r in f["refused"]}):
        def refused(version):
            return any((r["section"], r["key"]) == (section, key) for r in facts[version]["refused"]) or None

        for first, last, _ in runs(versions, refused):
            lines.append(row("ACCEL_RELEASE_REFUSED", tool, section, key, first, last))
    return lines


HEADER = """\
// Generated by scripts/gen-releases.py from the releases' own sources: do not edit. Run the
// script again (it downloads each release from PyPI) after changing the releases it covers.
//
// What each covered release of Accelerate and DeepSpeed reads from a config file. Rows name a
// run of consecutive releases, `first` to `last`, in the order of the ACCEL_RELEASE rows.
//   ACCEL_RELEASE(tool, version)
//   ACCEL_RELEASE_SECTION(tool, section, first, last, closed)
//       a section read through a model that refuses an unknown key (closed) or ignores it; the
//       section's keys are then exactly its ACCEL_RELEASE_KEY rows
//   ACCEL_RELEASE_KEY(tool, section, key, first, last, default, bounds)
//       a key read, with its default as JSON ("" when computed) and its bounds (">0 <=1")
//   ACCEL_RELEASE_CHECK(tool, section, validator, first, last)
//       a validator the section's model runs
//   ACCEL_RELEASE_REFUSED(tool, section, key, first, last)
//       a key whose presence makes the release refuse the file
// Sections are written as files write them (`zero_optimization.offload_param`); "" is the top
// level. Accelerate's section keys are the launch options they become (`fsdp_version`).
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", type=Path, default=ROOT / "build/release-sources",
                        help="where the downloaded source distributions are kept")
    parser.add_argument("-o", "--output", type=Path, default=ROOT / "compiler/sema/releases.def")
    args = parser.parse_args()
    args.sources.mkdir(parents=True, exist_ok=True)
    requirements = (ROOT / "python/requirements.txt").read_text().splitlines()
    pins = dict(line.strip().split("==") for line in requirements
                if "==" in line and not line.startswith("#"))
    lines = [HEADER.rstrip("\n")]
    for tool, versions in RELEASES.items():
        if pins.get(tool) != versions[-1]:
            sys.exit(f"gen-releases: the newest {tool} release covered, {versions[-1]}, is not the pinned "
                     f"{pins.get(tool)} (python/requirements.txt)")
        facts = {}
        for version in versions:
            print(f"gen-releases: {tool} {version}", file=sys.stderr)
            facts[version] = probe(tool, version, args.sources)
        lines += rows_for(tool, facts)
    args.output.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
