"""Round trip of Accelerate's own files through compiler/interop.

usage: roundtrip.py ACCELC WORKDIR PATH...

ACCELC is the accelc binary (its import and export commands); each PATH is a config file or a
directory of them.

- A config YAML is imported into a `.accel` spec, which must pass the checker; the spec's
  `compute` is exported back to YAML; PyYAML must read the same settings from the export as
  from the original, after the normalisation below. Importing the export and exporting again
  must give the export byte for byte (the importer reads everything the exporter writes as
  written, and the export is canonical).
- A SageMaker config (`compute_environment: AMAZON_SAGEMAKER`) has no place in a job: it is
  exported straight from the checked file and compared the same way.
- A DeepSpeed JSON config is exported from the checked file; Python's json must read the same
  values from the export as from the original, and exporting the export changes nothing.

Normalisation, applied to both dicts, as Accelerate's loader and writer do (catalog §4.1):
- CFG-004/005: a legacy `fp16` becomes `mixed_precision: fp16` when that key is missing (and
  nothing when `fp16` is false), and `fp16` goes.
- CFG-006: a legacy top-level `dynamo_backend: X` becomes `dynamo_config: {dynamo_backend: X}`,
  `{}` for `NO` (also an unquoted `NO`, which YAML 1.1 reads as false and the checker as `NO`).
- `None` values and empty mappings are dropped at every level: Accelerate's writer drops them,
  its loader reads a `None` section as `{}` (CFG-009), and a `None` key means "unset" to the launcher.
Scalars then compare by value, with two allowances for what the checker types differently
from PyYAML:
- a string against a bool is equal when Accelerate's `str_to_bool` reads the string as that bool:
  `downcast_bf16: 'no'` is exported as `false`, and an unquoted `NO` (false to PyYAML) given
  for an enum is exported as `'NO'`;
- ints and floats compare by value: the checker reads `min_loss_scale: 1` as the float 1.0 and
  DeepSpeed's `2e8` as the int 200000000. A bool never equals a number.
"""

import json
import os
import subprocess
import sys

import yaml

SKIPPED = {"test_configs__invalid_keys.yaml"}  # its two unknown keys must be rejected


def str_to_bool(text):
    """Accelerate's str_to_bool (utils/environment.py), or None for other text."""
    lowered = text.lower()
    if lowered in ("y", "yes", "t", "true", "on", "1"):
        return True
    if lowered in ("n", "no", "f", "false", "off", "0"):
        return False
    return None


def drop_unset(value):
    if isinstance(value, dict):
        kept = {}
        for key, item in value.items():
            item = drop_unset(item)
            if item is None or item == {}:
                continue
            kept[key] = item
        return kept
    if isinstance(value, list):
        return [drop_unset(item) for item in value]
    return value


def accelerate_normalise(config):
    config = dict(config)
    if "fp16" in config:
        legacy = config.pop("fp16")
        if "mixed_precision" not in config:
            config["mixed_precision"] = "fp16" if legacy else None
    if "dynamo_backend" in config:
        backend = config.pop("dynamo_backend")
        config["dynamo_config"] = {} if backend in ("NO", False) else {"dynamo_backend": backend}
    return drop_unset(config)


def differences(a, b, path="", yaml_scalars=False):
    """Where `a` and `b` differ, as readable lines; empty when they agree."""
    if isinstance(a, dict) and isinstance(b, dict):
        lines = []
        for key in sorted(set(a) | set(b), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in a or key not in b:
                lines.append(f"{where}: only in {'the original' if key in a else 'the export'}")
            else:
                lines += differences(a[key], b[key], where, yaml_scalars)
        return lines
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} items, then {len(b)}"]
        return [line for i, (x, y) in enumerate(zip(a, b)) for line in differences(x, y, f"{path}[{i}]", yaml_scalars)]
    if same_scalar(a, b, yaml_scalars):
        return []
    return [f"{path}: {a!r} became {b!r}"]


def same_scalar(a, b, yaml_scalars):
    if isinstance(a, bool) or isinstance(b, bool):
        if isinstance(a, bool) and isinstance(b, bool):
            return a == b
        if yaml_scalars and isinstance(a, str) != isinstance(b, str):
            text, flag = (a, b) if isinstance(a, str) else (b, a)
            return str_to_bool(text) == flag
        return False
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


class ExportLoader(yaml.SafeLoader):
    """PyYAML's safe loader, except that a bool must be spelled `true` or `false`: the exporter
    writes no other spelling, so a `no` or `On` in an export is a string it failed to quote
    (which the str/bool allowance above would otherwise let pass)."""


def construct_strict_bool(loader, node):
    if node.value not in ("true", "false"):
        raise Failure(f"the export spells a bool `{node.value}`: a string left unquoted")
    return node.value == "true"


ExportLoader.add_constructor("tag:yaml.org,2002:bool", construct_strict_bool)


class RoundTrip:
    def __init__(self, driver, workdir):
        self.driver = driver
        self.workdir = workdir
        self.results = {"yaml via .accel": [0, 0], "yaml direct (SageMaker)": [0, 0], "json": [0, 0]}

    # The test's verbs as accelc commands; the job name of an import comes from the file name.
    COMMANDS = {
        "import": ["import"],
        "export-yaml": ["export", "--to", "accelerate-yaml"],
        "export-json": ["export", "--to", "deepspeed-json"],
    }

    def run(self, verb, path, *_):
        command = [self.driver, *self.COMMANDS[verb], path]
        if verb == "import":
            # Written where the test keeps the spec: its paths are relative to that folder.
            command += ["-o", os.path.join(self.workdir, "imported.accel")]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            raise Failure(f"`accelc {' '.join(command[1:])}` failed:\n{done.stderr}")
        if verb == "import":
            with open(command[-1], encoding="utf-8") as f:
                return f.read()
        return done.stdout

    def write(self, name, text):
        path = os.path.join(self.workdir, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def yaml_file(self, path):
        name = os.path.basename(path)
        with open(path, encoding="utf-8") as f:
            original = yaml.safe_load(f)
        if original.get("compute_environment") == "AMAZON_SAGEMAKER":
            exported = self.run("export-yaml", path)
            self.compare_yaml(original, exported)
            return "yaml direct (SageMaker)"
        job = "roundtrip"
        spec = self.run("import", path, job)
        exported = self.run("export-yaml", self.write(name + ".accel", spec))
        self.compare_yaml(original, exported, os.path.dirname(path))
        again = self.run("import", self.write(name + ".exported.yaml", exported), job)
        exported_again = self.run("export-yaml", self.write(name + ".again.accel", again))
        if exported_again != exported:
            raise Failure(f"exporting the imported export changes it:\n{exported}\n---\n{exported_again}")
        return "yaml via .accel"

    def compare_yaml(self, original, exported, config_dir=None):
        exported = yaml.load(exported, Loader=ExportLoader)
        # The spec names the config's DeepSpeed JSON relative to itself (the test's folder), so
        # the two paths are compared as the files they name.
        if config_dir is not None:
            for config, base in ((original, config_dir), (exported, self.workdir)):
                section = config.get("deepspeed_config") or {}
                named = section.get("deepspeed_config_file")
                if named and not os.path.isabs(named) and os.path.exists(os.path.join(base, named)):
                    section["deepspeed_config_file"] = os.path.realpath(os.path.join(base, named))
        lines = differences(accelerate_normalise(original), accelerate_normalise(exported), yaml_scalars=True)
        if lines:
            raise Failure("the export reads differently:\n  " + "\n  ".join(lines) + "\nexport:\n" + exported)

    def json_file(self, path):
        with open(path, encoding="utf-8") as f:
            original = json.load(f)
        exported = self.run("export-json", path)
        lines = differences(original, json.loads(exported))
        if lines:
            raise Failure("the export reads differently:\n  " + "\n  ".join(lines) + "\nexport:\n" + exported)
        again = self.run("export-json", self.write(os.path.basename(path), exported))
        if again != exported:
            raise Failure(f"exporting the export changes it:\n{exported}\n---\n{again}")
        return "json"

    def check(self, path):
        name = os.path.basename(path)
        kind = "json" if name.endswith(".json") else "yaml via .accel"
        try:
            kind = self.json_file(path) if name.endswith(".json") else self.yaml_file(path)
        except Failure as failure:
            self.results[kind][1] += 1
            print(f"FAIL {name}: {failure}")
            return
        self.results[kind][0] += 1
        print(f"PASS {kind}: {name}")


class Failure(Exception):
    pass


def inputs(paths):
    for path in paths:
        names = sorted(os.listdir(path)) if os.path.isdir(path) else [os.path.basename(path)]
        folder = path if os.path.isdir(path) else os.path.dirname(path)
        for name in names:
            if name.endswith((".yaml", ".yml", ".json")) and name not in SKIPPED:
                yield os.path.join(folder, name)


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    trip = RoundTrip(sys.argv[1], sys.argv[2])
    for path in inputs(sys.argv[3:]):
        trip.check(path)
    failed = 0
    for kind, (passed, failures) in trip.results.items():
        print(f"{kind}: {passed} passed, {failures} failed")
        failed += failures
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
