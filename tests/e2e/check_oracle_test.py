"""Judges `accelc check` by Accelerate and DeepSpeed themselves.

Every Accelerate YAML and DeepSpeed JSON of tests/corpus/published, of
tests/e2e/accelerate_launch_oracle and of check_oracle/probes, and a fixed-seed sample of mutants
of them, goes to two judges: `accelc check --format json` (as a subprocess, with its default
`--for`) and the tool that reads the file (the oracle, in this process). The property: where the oracle raises, accelc
reports at least one error; where the oracle accepts, accelc reports none (warnings and notes
are fine). A disagreement must be listed in check_oracle/allowed_differences.txt; a listed one
that no case meets any more is stale. Both fail the test.

The oracles (each step is the tools' own code, run in this process):
  Accelerate YAML: `accelerate launch --config_file FILE train.py` up to the process start, via
      the launch oracle of accelerate_launch_oracle_test.py: load_config_from_file, then
      _validate_launch_command on launch_command_parser().parse_args(...), then the launcher's
      own preparation (prepare_*_env / *_cmd_env, torch's config_from_args and WorkerSpec
      checks). Then, in the environment launch gives local rank 0, the part of Accelerator()
      that reads it: TorchDynamoPlugin(), DeepSpeedPlugin(), FullyShardedDataParallelPlugin(),
      MegatronLMPlugin(), ParallelismConfig() and a named FP8 backend's recipe, as each is
      enabled; for DeepSpeed without a deepspeed_config_file, the config the plugin builds
      goes on through Accelerate's filling (below) to DeepSpeedConfig. Not covered: the rest of
      Accelerator() (AcceleratorState, ParallelismConfig._validate_accelerator), prepare, the
      engines. A relative deepspeed_config_file is looked up beside the published file (the
      corpus is run from there), else in the launch oracle's case folder. A YAML case is judged
      on its own diagnostics; the JSON it names is a case of its own.
  DeepSpeed JSON without "auto" (accelc checks it `--for deepspeed`):
      deepspeed.runtime.config.DeepSpeedConfig(dict).
  DeepSpeed JSON with "auto" (accelc checks it `--for accelerate`, which fills what the Trainer
      fills): the Transformers Trainer's path under Accelerate.
      HfTrainerDeepSpeedConfig(dict).trainer_config_process(args) (batch sizes,
      gradient_clipping, optimizer and scheduler params, fp16/bf16.enabled); DeepSpeedPlugin(
      hf_ds_config=...) (refuses a file without zero_optimization; fills the ZeRO stage,
      offload devices and paths); set_mixed_precision("no"); trainer_config_finalize(args,
      model, 1000) (hidden-size keys for hidden_size 1024, the scheduler's step counts);
      DeepSpeedPlugin.deepspeed_config_process(must_match=False, ...) with what
      Accelerator._prepare_deepspeed passes (refuses any "auto" left); DeepSpeedConfig. The
      Trainer's arguments are taken to agree with the file's fixed values (no mismatch error;
      micro batch and accumulation are the file's, else 8 and 1). A plain Accelerator script
      would also refuse "auto" in the optimizer's betas and eps, which only the Trainer fills.
  World size: a DeepSpeed JSON does not say it. DeepSpeedConfig asserts train_batch_size ==
      micro batch x accumulation x world size; the oracle runs at the world size the file's
      own batch sizes imply (train_batch_size / (micro x accumulation) where all are positive
      integers and it divides; an absent accumulation counts as 1 where Accelerate writes 1),
      else 1. So it accepts a file that runs at some world size, as accelc's DSJ-006 judges.

What the oracle patches (host probes and process starts only):
  deepspeed.comm.get_rank -> 0, deepspeed.comm.get_world_size -> the world size above (no
      process group exists; DeepSpeedConfig would otherwise catch the failure and use 1).
  torch.cuda.current_device -> 0 (FullyShardedDataParallelPlugin asks for it).
  The launch oracle's patches (listed at the top of accelerate_launch_oracle_test.py):
      subprocess.Popen and torch.distributed.run.run record instead of starting;
      is_deepspeed_available -> True; is_port_in_use -> False; check_cuda_p2p_ib_support,
      is_fp8_available, is_bf16_available -> True; torch.cuda.device_count -> 8 and
      is_available -> True (HOST_CUDA_DEVICES: no device count refuses a file); the other
      device probes (xpu, npu, ..., torch_xla) -> False. Its derivation of torchrun's workers
      is asked for one local worker, not nproc_per_node of them (a mutant asks for 10**12).
  os.environ: the launch oracle's base environment (launch variables removed, HF_HOME an
      empty folder, TMPDIR in the work folder, a fake `mpirun` first on PATH), DS_ACCELERATOR
      =cpu so that DeepSpeed imports without a GPU.
  A refusal that names what this host lacks (torch_xla, TransformerEngine, MS-AMP, torchao:
      HOST_ERRORS) is taken as acceptance.

Mutants: each is one change to the parsed file (drop a key; rename it by one edit or to the
other tool's spelling; change a value's type; set it to null, "auto", 0, -1 or 10**12; move a
key into another section), written back with json.dump or yaml.safe_dump. Mutant i is drawn
from random.Random(f"{seed}:{i}") alone, so a larger run holds every case of a smaller one.

Usage: check_oracle_test.py <accelc> <repo_root> <work_dir> [--cases N] [--seed S]
           [--show N] [--allow FILE]
--cases N mutants (default 500, the CI sample, about 15 s on 2 cores; the nightly run takes
20000, about 4 minutes). --show N prints up to N example cases per disagreement class. Every
case's verdicts go to <work_dir>/cases.json. Exit 0 pass, 1 fail, 77 when Accelerate,
DeepSpeed or transformers cannot be imported.
"""
import argparse
import collections
import contextlib
import copy
import fnmatch
import io
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "check_oracle")
ALLOWED = os.path.join(DATA, "allowed_differences.txt")
SKIP_EXIT = 77
CI_CASES = 500
NIGHTLY_CASES = 20000
DEFAULT_SEED = 20261206
ACCELC_BATCH = 1000  # files per accelc process
# The launch oracle's host: 8 CUDA devices, so that no device count refuses a file.
HOST_CUDA_DEVICES = 8
# Refusals that say what this host lacks, not what the file says: a TPU launch imports
# torch_xla. The file is taken as accepted.
HOST_ERRORS = ("ModuleNotFoundError: No module named 'torch_xla'",
               "worker: ImportError: TransformerEngine is not available",
               "worker: ImportError: MS-AMP is not available", "worker: ImportError: torchao is not available",
               # Accelerate 1.13.0 on spell it so
               "worker: ImportError: TorchAO is not available")


# ---------------------------------------------------------------------------------------------
# Inputs


class Case:
    def __init__(self, id, source, kind, path, mutation=None, source_path=None):
        self.id = id              # corpus/<path>, launch-oracle/<path>, or either + ~NNNNN <change>
        self.source = source      # the id of the file it came from
        self.source_path = source_path or path
        self.kind = kind          # "yaml" (an Accelerate config) or "json" (a DeepSpeed config)
        self.path = path          # the file both judges read
        self.mutation = mutation  # what was changed, None for a published file
        self.oracle = None        # None (accepts) or the oracle's error text
        self.errors = []          # accelc's error diagnostics: [(code, message)]


def input_files(repo_root):
    """(source id, path) of every config file the test starts from."""
    roots = [("corpus", os.path.join(repo_root, "tests", "corpus", "published")),
             ("launch-oracle", os.path.join(repo_root, "tests", "e2e", "accelerate_launch_oracle")),
             ("probe", os.path.join(HERE, "check_oracle", "probes"))]
    found = []
    for prefix, root in roots:
        for folder, _, names in os.walk(root):
            for name in names:
                if name.endswith((".yaml", ".yml", ".json")):
                    path = os.path.join(folder, name)
                    found.append((prefix + "/" + os.path.relpath(path, root), path))
    return sorted(found)


def load(path):
    import yaml

    with open(path, encoding="utf-8") as f:
        return json.load(f) if path.endswith(".json") else yaml.safe_load(f)


def published_cases(files):
    return [Case(source, source, "json" if path.endswith(".json") else "yaml", path)
            for source, path in files]


# ---------------------------------------------------------------------------------------------
# Mutants

# A key and how the other tool (or the other place of the same tool) spells it: Accelerate's
# deepspeed_config / DeepSpeedPlugin against DeepSpeed's JSON, the Trainer's arguments against
# DeepSpeed's, torchrun's flags against Accelerate's, DeepSpeed's old names. Both directions.
OTHER_SPELLING = [
    ("zero_stage", "stage"),
    ("offload_optimizer_device", "offload_optimizer"),
    ("offload_param_device", "offload_param"),
    ("zero3_save_16bit_model", "stage3_gather_16bit_weights_on_model_save"),
    ("zero3_init_flag", "zero3_init"),
    ("gradient_clipping", "max_grad_norm"),
    ("train_micro_batch_size_per_gpu", "per_device_train_batch_size"),
    ("train_batch_size", "batch_size"),
    ("deepspeed_config_file", "deepspeed_config"),
    ("num_processes", "nproc_per_node"),
    ("num_machines", "nnodes"),
    ("machine_rank", "node_rank"),
    ("main_process_ip", "master_addr"),
    ("main_process_port", "master_port"),
    ("mixed_precision", "dtype"),
    ("bf16", "bfloat16"),
    ("fp16", "float16"),
    ("dynamo_backend", "backend"),
    ("distributed_type", "distributed_backend"),
    ("use_cpu", "cpu"),
]
SPELLING = {}
for _a, _b in OTHER_SPELLING:
    SPELLING.setdefault(_a, _b)
    SPELLING.setdefault(_b, _a)
# Prefixes one spelling has and the other lacks: Accelerate's fsdp_config keys against
# FullyShardedDataParallelPlugin's fields, DeepSpeed's stage3_ aliases against its field names,
# the parallelism_config_ and dynamo_ prefixes of Accelerate's sections.
PREFIXES = ("fsdp_", "stage3_", "parallelism_config_", "dynamo_", "megatron_lm_", "fp8_", "deepspeed_")

SPECIAL_VALUES = [None, "auto", 0, -1, 10**12]
KINDS = ["drop", "near-miss", "other-spelling", "type", "value", "move"]
LETTERS = "abcdefghijklmnopqrstuvwxyz_"


def key_paths(node, prefix=()):
    """Paths (tuples of keys) of every mapping entry, depth first."""
    if isinstance(node, dict):
        for key, value in node.items():
            path = prefix + (key,)
            yield path
            yield from key_paths(value, path)


def sections(node, prefix=()):
    """Paths of every mapping, the root () included."""
    if isinstance(node, dict):
        yield prefix
        for key, value in node.items():
            yield from sections(value, prefix + (key,))


def at(root, path):
    for key in path:
        root = root[key]
    return root


def show_path(path):
    return ".".join(str(k) for k in path) or "(top level)"


def one_edit(rng, word):
    """A near miss: one substitution, insertion, deletion or transposition."""
    for _ in range(20):
        op = rng.choice(["substitute", "insert", "delete", "transpose"])
        i = rng.randrange(len(word) + (1 if op == "insert" else 0)) if word else 0
        if op == "substitute" and word:
            out = word[:i] + rng.choice(LETTERS) + word[i + 1:]
        elif op == "insert":
            out = word[:i] + rng.choice(LETTERS) + word[i:]
        elif op == "delete" and len(word) > 1:
            out = word[:i] + word[i + 1:]
        elif op == "transpose" and len(word) > 1 and i < len(word) - 1:
            out = word[:i] + word[i + 1] + word[i] + word[i + 2:]
        else:
            continue
        if out != word:
            return out
    return word + "s"


def other_spelling(key):
    if key in SPELLING:
        return SPELLING[key]
    for prefix in PREFIXES:
        if key.startswith(prefix) and len(key) > len(prefix):
            return key[len(prefix):]
    return None


def retyped(rng, value):
    """The value as another of int, string, bool, list."""
    if isinstance(value, bool):
        choices = [str(value).lower(), int(value), [value]]
    elif isinstance(value, (int, float)):
        choices = [str(value), bool(value), [value]]
    elif isinstance(value, str):
        number = int(value) if value.lstrip("-").isdigit() else 1
        choices = [number, value.lower() in ("true", "yes", "1", "all"), [value]]
    elif isinstance(value, list):
        choices = [value[0] if value else 0, ",".join(str(v) for v in value), bool(value)]
    elif value is None:
        choices = ["None", 0, False, []]
    else:  # a mapping
        choices = [list(value.keys()), str(value), 1]
    return rng.choice(choices)


def mutate(rng, data):
    """One change to `data` (changed in place); returns its description or None."""
    kinds = list(KINDS)
    rng.shuffle(kinds)
    paths = list(key_paths(data))
    if not paths:
        return None
    for kind in kinds:
        if kind == "drop":
            path = rng.choice(paths)
            del at(data, path[:-1])[path[-1]]
            return f"drop {show_path(path)}"
        if kind in ("near-miss", "other-spelling"):
            candidates = paths if kind == "near-miss" else [
                p for p in paths if isinstance(p[-1], str) and other_spelling(p[-1])]
            if not candidates:
                continue
            path = rng.choice(candidates)
            parent, key = at(data, path[:-1]), path[-1]
            new = one_edit(rng, str(key)) if kind == "near-miss" else other_spelling(key)
            if new in parent:
                continue
            # Keep the key's place among its siblings.
            items = [(new if k == key else k, v) for k, v in parent.items()]
            parent.clear()
            parent.update(items)
            return f"rename {show_path(path)} -> {new}"
        if kind == "type":
            path = rng.choice(paths)
            parent, key = at(data, path[:-1]), path[-1]
            parent[key] = retyped(rng, parent[key])
            return f"retype {show_path(path)} = {json.dumps(parent[key])}"
        if kind == "value":
            path = rng.choice(paths)
            value = rng.choice(SPECIAL_VALUES)
            at(data, path[:-1])[path[-1]] = value
            return f"set {show_path(path)} = {json.dumps(value)}"
        if kind == "move":
            path = rng.choice(paths)
            targets = [s for s in sections(data)
                       if s != path[:-1] and s[:len(path)] != path and path[-1] not in at(data, s)]
            if not targets:
                continue
            target = rng.choice(targets)
            at(data, target)[path[-1]] = at(data, path[:-1]).pop(path[-1])
            return f"move {show_path(path)} into {show_path(target)}"
    return None


def absolute_references(data, source_path):
    """A relative deepspeed_config_file names a file beside the original: keep it found."""
    ds = data.get("deepspeed_config") if isinstance(data, dict) else None
    if isinstance(ds, dict) and isinstance(ds.get("deepspeed_config_file"), str):
        name = ds["deepspeed_config_file"]
        beside = os.path.join(os.path.dirname(source_path), name)
        if not os.path.isabs(name) and os.path.exists(beside):
            ds["deepspeed_config_file"] = os.path.abspath(beside)


def mutant_cases(files, count, seed, out_dir):
    import yaml

    parsed = {}
    cases = []
    for i in range(count):
        rng = random.Random(f"{seed}:{i}")
        source, path = rng.choice(files)
        if source not in parsed:
            try:
                parsed[source] = load(path)
            except Exception:
                parsed[source] = None
        if not isinstance(parsed[source], dict):
            continue
        data = copy.deepcopy(parsed[source])
        change = mutate(rng, data)
        if change is None:
            continue
        kind = "json" if path.endswith(".json") else "yaml"
        if kind == "yaml":
            absolute_references(data, path)
        folder = os.path.join(out_dir, f"{i:05d}")
        os.makedirs(folder, exist_ok=True)
        target = os.path.join(folder, os.path.basename(path))
        with open(target, "w", encoding="utf-8") as f:
            if kind == "json":
                json.dump(data, f, indent=2)
            else:
                yaml.safe_dump(data, f, sort_keys=False)
        cases.append(Case(f"{source}~{i:05d} {change}", source, kind, target, change, path))
    return cases


# ---------------------------------------------------------------------------------------------
# accelc


def start_accelc(accelc, cases):
    """Runs accelc on every case in a background thread, ACCELC_BATCH files a process, one
    process at a time (each checks on every core) while the oracle runs here. YAML and JSON
    cases go to separate processes, and a process's diagnostics count only for its own cases:
    what accelc says about the JSON file a YAML names belongs to that YAML's check, not to the
    JSON's own case. Returns a function that waits and fills each case's errors."""
    import threading

    batches = []
    for kind in ("yaml", "json"):
        same = [c for c in cases if c.kind == kind]
        batches += [same[i:i + ACCELC_BATCH] for i in range(0, len(same), ACCELC_BATCH)]
    results = []

    def run_all():
        for batch in batches:
            argv = [accelc, "check", "--format", "json", "--max-diagnostics", "0"] + [c.path for c in batch]
            proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            results.append((batch, proc.returncode, proc.stdout, proc.stderr))

    thread = threading.Thread(target=run_all)
    thread.start()

    def finish():
        thread.join()
        for batch, code, out, err in results:
            if code not in (0, 1) or not out.strip():
                raise SystemExit(f"accelc check exited {code}:\n{err[-3000:]}")
            by_path = {os.path.realpath(c.path): c for c in batch}
            for d in json.loads(out):
                case = by_path.get(os.path.realpath(d.get("file", "")))
                if case is not None and d.get("severity") == "error":
                    case.errors.append((d["code"], d["message"]))

    return finish


# ---------------------------------------------------------------------------------------------
# The oracles


@contextlib.contextmanager
def quiet():
    """Accelerate, DeepSpeed and Transformers talk through logging, warnings and stdout: the
    launch oracle's silencer, with the talk thrown away."""
    import accelerate_launch_oracle_test as launch_oracle
    with launch_oracle.quiet(io.StringIO()):
        yield


class World:
    """deepspeed.comm's rank and world size, as DeepSpeedConfig asks them."""

    size = 1

    def install(self):
        import deepspeed.comm as dist

        dist.get_rank = lambda *a, **k: 0
        dist.get_world_size = lambda *a, **k: self.size


WORLD = World()


def positive_int(value):
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def implied_world(config, default_accumulation=None):
    """The world size the batch sizes imply; `default_accumulation` stands for an absent
    gradient_accumulation_steps (Accelerate's plugin writes 1 there)."""
    train = config.get("train_batch_size")
    micro = config.get("train_micro_batch_size_per_gpu")
    accumulation = config.get("gradient_accumulation_steps", default_accumulation)
    if positive_int(train) and positive_int(micro) and positive_int(accumulation):
        if train % (micro * accumulation) == 0 and train >= micro * accumulation:
            return train // (micro * accumulation)
    return 1


def uses_auto(node):
    if isinstance(node, dict):
        return any(uses_auto(v) for v in node.values())
    if isinstance(node, list):
        return any(uses_auto(v) for v in node)
    return node == "auto"


def accelerate_prepare_fill(plugin, micro, world, hidden=1024):
    """What Accelerator._prepare_deepspeed fills (accelerator.py) for a dataloader of `micro`
    samples a batch and a model of hidden size `hidden`; it refuses any "auto" left besides."""
    plugin.fill_match("gradient_accumulation_steps", must_match=False, gradient_accumulation_steps=1)
    accumulation = plugin.get_value("gradient_accumulation_steps")
    plugin.deepspeed_config_process(
        must_match=False, gradient_clipping=1.0,
        **{"zero_optimization.stage3_gather_16bit_weights_on_model_save": False,
           "train_micro_batch_size_per_gpu": micro, "train_batch_size": micro * accumulation * world,
           "zero_optimization.reduce_bucket_size": hidden * hidden,
           "zero_optimization.stage3_prefetch_bucket_size": int(0.9 * hidden * hidden),
           "zero_optimization.stage3_param_persistence_threshold": 10 * hidden})


def deepspeed_oracle(config):
    """Raises what DeepSpeed (and, with "auto", the Trainer and Accelerate) raise."""
    from deepspeed.runtime.config import DeepSpeedConfig

    if not isinstance(config, dict):
        raise TypeError(f"a DeepSpeed config is a mapping, not {type(config).__name__}")
    if not uses_auto(config):
        WORLD.size = implied_world(config)
        DeepSpeedConfig(copy.deepcopy(config))
        return
    WORLD.size = implied_world(config, default_accumulation=1)
    from accelerate.utils import DeepSpeedPlugin
    from transformers.integrations.deepspeed import HfTrainerDeepSpeedConfig

    micro = config.get("train_micro_batch_size_per_gpu")
    accumulation = config.get("gradient_accumulation_steps")
    train = config.get("train_batch_size")
    accumulation = accumulation if positive_int(accumulation) else 1
    if not positive_int(micro):
        micro = train // accumulation if positive_int(train) and train % accumulation == 0 else 8
    args = types.SimpleNamespace(
        world_size=WORLD.size, per_device_train_batch_size=micro, gradient_accumulation_steps=accumulation,
        max_grad_norm=1.0, learning_rate=5e-5, adam_beta1=0.9, adam_beta2=0.999, adam_epsilon=1e-8,
        weight_decay=0.0, save_on_each_node=False, fp16=False, fp16_full_eval=False, bf16=False,
        bf16_full_eval=False, get_warmup_steps=lambda steps: 0)
    class AgreeingTrainerConfig(HfTrainerDeepSpeedConfig):
        # The Trainer's arguments are taken to be the file's fixed values: no mismatch.
        def fill_match(self, ds_key_long, hf_val, hf_key=None, must_match=True):
            super().fill_match(ds_key_long, hf_val, hf_key, must_match=False)

    hf = AgreeingTrainerConfig(config)
    hf.trainer_config_process(args)
    plugin = DeepSpeedPlugin(hf_ds_config=hf)
    plugin.set_mixed_precision("no")
    model = types.SimpleNamespace(config=types.SimpleNamespace(hidden_size=1024))
    hf.trainer_config_finalize(args, model, 1000)
    accelerate_prepare_fill(plugin, micro, WORLD.size, hidden=model.config.hidden_size)
    DeepSpeedConfig(plugin.deepspeed_config)


def bounded_launch_oracle_class():
    import copy as copy_module

    import accelerate_launch_oracle_test as launch_oracle

    class BoundedLaunchOracle(launch_oracle.Oracle):
        """Derives torchrun's workers for one local process, not nproc_per_node of them (a
        mutant asks for 10**12): the refusals are the same."""

        def _processes(self, captured, start_env):
            if captured[0] == "torchrun" and captured[1].nproc_per_node > 1:
                config = copy_module.copy(captured[1])
                config.nproc_per_node = 1
                captured = (captured[0], config) + tuple(captured[2:])
            return super()._processes(captured, start_env)

    return BoundedLaunchOracle


class AccelerateOracle:
    """`accelerate launch --config_file FILE train.py` in this process, through the existing launch
    oracle (accelerate_launch_oracle_test.Oracle): load_config_from_file and
    _validate_launch_command, then the launcher's own preparation (prepare_*_env / *_cmd_env,
    torch's config_from_args), nothing started. Then, in the environment launch gives local
    rank 0, the part of Accelerator() that reads it: the plugins' __post_init__."""

    def __init__(self, work_dir):
        import accelerate_launch_oracle_test as launch_oracle
        import torch

        self.launch_oracle = launch_oracle
        self.base = launch_oracle.base_environment(work_dir)
        self.base["DS_ACCELERATOR"] = "cpu"
        launch_oracle.set_environ(self.base)
        self.oracle = bounded_launch_oracle_class()(self.base, HOST_CUDA_DEVICES)
        torch.cuda.current_device = lambda: 0
        self.cwd = launch_oracle.prepare_cwd(work_dir, "check_oracle")

    def __call__(self, case, source_path):
        result = self.oracle.launch(self.launch_oracle.Case(case.id, case.path), self.cwd)
        error = result.get("error")
        if error is None:
            error = self.worker(result["processes"][0]["env"], source_path)
        if error is None or error.startswith(HOST_ERRORS):
            return None
        return error.strip().splitlines()[0]

    def worker(self, delta, source_path):
        """What Accelerator() builds from the worker's environment, with the worker's folder:
        beside the published file when a relative path there names a file (the corpus is run
        from there), else the launch oracle's case folder."""
        env = dict(self.base)
        for name, value in delta.items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value if isinstance(value, str) else "0"  # a port, a rank: by shape
        named = env.get("ACCELERATE_DEEPSPEED_CONFIG_FILE", "")
        beside = os.path.dirname(source_path)
        cwd = beside if named and os.path.exists(os.path.join(beside, named)) else self.cwd
        old_cwd = os.getcwd()
        self.launch_oracle.set_environ(env)
        os.chdir(cwd)
        try:
            with quiet():
                build_plugins(env)
        except (Exception, SystemExit) as e:
            return "worker: " + describe_error(e)
        finally:
            os.chdir(old_cwd)
            self.launch_oracle.set_environ(self.base)
        return None


def build_plugins(env):
    """Accelerator.__init__'s plugins from the environment (accelerator.py, before
    AcceleratorState): TorchDynamoPlugin, DeepSpeedPlugin, FullyShardedDataParallelPlugin,
    MegatronLMPlugin, ParallelismConfig, and the FP8 recipe of a named backend."""
    from accelerate.parallelism_config import ParallelismConfig
    from accelerate.utils import (AORecipeKwargs, DeepSpeedPlugin, FullyShardedDataParallelPlugin,
                                  MegatronLMPlugin, MSAMPRecipeKwargs, TERecipeKwargs,
                                  TorchDynamoPlugin)
    from accelerate.utils.dataclasses import FP8BackendType
    from deepspeed.runtime.config import DeepSpeedConfig

    def flag(name):
        return env.get(name, "false").lower() == "true"

    TorchDynamoPlugin()
    if flag("ACCELERATE_USE_DEEPSPEED"):
        plugin = DeepSpeedPlugin()
        if env.get("ACCELERATE_DEEPSPEED_CONFIG_FILE", "none") == "none":
            # The config the plugin built from its own fields goes to DeepSpeed at prepare. (A
            # named JSON file is a case of its own, judged with the Trainer's filling.)
            plugin.set_mixed_precision(env.get("ACCELERATE_MIXED_PRECISION", "no"))
            accelerate_prepare_fill(plugin, micro=8, world=1)
            WORLD.size = 1
            DeepSpeedConfig(plugin.deepspeed_config)
    if flag("ACCELERATE_USE_FSDP"):
        FullyShardedDataParallelPlugin()
    if flag("ACCELERATE_USE_MEGATRON_LM"):
        MegatronLMPlugin()
    if flag("ACCELERATE_USE_PARALLELISM_CONFIG"):
        ParallelismConfig()
    if env.get("ACCELERATE_MIXED_PRECISION") == "fp8":
        backend = FP8BackendType(env.get("ACCELERATE_FP8_BACKEND", "NO").upper())
        recipe = {FP8BackendType.AO: AORecipeKwargs, FP8BackendType.TE: TERecipeKwargs,
                  FP8BackendType.MSAMP: MSAMPRecipeKwargs}.get(backend)
        if recipe is not None:
            recipe()


def judge_oracle(case, accelerate):
    """None when the tool accepts the file, else its error text."""
    if case.kind == "yaml":
        return accelerate(case, case.source_path)
    try:
        with quiet():
            deepspeed_oracle(load(case.path))
    except (Exception, SystemExit) as e:
        return describe_error(e)
    return None


def describe_error(e):
    """`Type: first line`, pydantic's errors as `Model: field: kind` each."""
    errors = getattr(e, "errors", None)
    if type(e).__name__ == "ValidationError" and callable(errors):
        parts = [f"{'.'.join(str(x) for x in err['loc'])}: {err['type']}" for err in errors()]
        return f"ValidationError: {e.title}: " + "; ".join(parts)
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"


def error_pattern(text, work_dir):
    """The oracle's message with what varies from case to case (paths, numbers, lists) blanked,
    so that a class of refusals reads as one line."""
    text = text.replace(work_dir, "<work>")
    text = re.sub(r"`[^`]+` not found in kwargs.*", "`<key>` not found in kwargs", text)
    if text.startswith("ValidationError: "):  # Model: field: kind; ... -> Model: kinds
        model, _, errors = text[len("ValidationError: "):].partition(": ")
        kinds = sorted({e.rpartition(": ")[2] for e in errors.split("; ")})
        return f"ValidationError: {model}: " + ", ".join(kinds)
    text = re.sub(r"(/[^\s'`\"(),]+)+", "<path>", text)
    text = re.sub(r"\[[^\]]*\]", "[...]", text)
    text = re.sub(r"-?\b\d+(\.\d+)?(e[+-]?\d+)?\b", "N", text)
    return text[:160]


# ---------------------------------------------------------------------------------------------
# Allowed differences


class Entry:
    def __init__(self, line_number, cls, pattern, glob, nightly, reason):
        self.line_number = line_number
        self.cls = cls
        self.pattern = pattern
        self.glob = glob
        self.nightly = nightly  # only the nightly sample meets it: not stale in a smaller run
        self.reason = reason
        self.used = 0

    def matches(self, cls, key, texts, case_id):
        """`texts`: what else the pattern may match (`CODE: message` of each of accelc's errors
        with that code, or the oracle's whole message)."""
        return (cls == self.cls and fnmatch.fnmatchcase(case_id, self.glob)
                and any(fnmatch.fnmatchcase(t, self.pattern) for t in [key] + texts))


def read_allowed(path):
    """Lines `CLASS CODE_OR_PATTERN [FILE_GLOB] — reason`, shell-quoted where a pattern has
    spaces; allowed_differences.txt says what each part matches."""
    entries = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            head, sep, reason = line.partition(" — ")
            words = shlex.split(head) if sep else []
            nightly = bool(words) and words[-1] == "nightly"
            words = words[:-1] if nightly else words
            if not sep or not reason.strip() or len(words) not in (2, 3) or words[0] not in ("false-alarm", "miss"):
                raise SystemExit(f"{path}:{number}: expected `false-alarm|miss CODE_OR_PATTERN [CASE_GLOB] [nightly] — reason`")
            entries.append(Entry(number, words[0], words[1], words[2] if len(words) == 3 else "*", nightly, reason.strip()))
    return entries


# ---------------------------------------------------------------------------------------------
# Judging


def classify(case, work_dir):
    """[(class, key, texts)] of a case's disagreements: a false alarm per accelc error code when
    the oracle accepts, a miss (keyed by the oracle's error pattern) when accelc has no error."""
    if case.oracle is None:
        codes = sorted({code for code, _ in case.errors})
        return [("false-alarm", code, [f"{code}: {m}" for c, m in case.errors if c == code]) for code in codes]
    if not case.errors:
        return [("miss", error_pattern(case.oracle, work_dir), [case.oracle])]
    return []


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("accelc")
    p.add_argument("repo_root")
    p.add_argument("work_dir")
    p.add_argument("--cases", type=int, default=CI_CASES, help="number of mutants")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED)
    p.add_argument("--show", type=int, default=3, help="examples printed per disagreement class")
    p.add_argument("--allow", default=ALLOWED, help="the allow-list")
    return p.parse_args(argv)


def main(argv):
    opts = parse_args(argv)
    started = time.monotonic()
    work_dir = os.path.abspath(opts.work_dir)
    shutil.rmtree(os.path.join(work_dir, "mutants"), ignore_errors=True)
    os.makedirs(work_dir, exist_ok=True)
    os.environ["DS_ACCELERATOR"] = "cpu"
    sys.path.insert(0, HERE)
    try:
        with quiet():
            import accelerate.commands.launch  # noqa: F401
            import deepspeed.runtime.config  # noqa: F401
            import transformers.integrations.deepspeed  # noqa: F401
            import yaml  # noqa: F401
    except ImportError as e:
        print(f"skipped: the tools cannot be imported ({e})")
        return SKIP_EXIT
    WORLD.install()
    entries = read_allowed(opts.allow)

    files = input_files(os.path.abspath(opts.repo_root))
    cases = published_cases(files) + mutant_cases(files, opts.cases, opts.seed, os.path.join(work_dir, "mutants"))
    finish_accelc = start_accelc(os.path.abspath(opts.accelc), cases)
    accelerate = AccelerateOracle(work_dir)
    for case in cases:
        case.oracle = judge_oracle(case, accelerate)
    oracle_done = time.monotonic()
    finish_accelc()
    return report(opts, cases, entries, work_dir, started, oracle_done)


def report(opts, cases, entries, work_dir, started, oracle_done):
    groups = collections.defaultdict(list)   # (class, key) -> cases
    unlisted = collections.defaultdict(list)
    agree = 0
    for case in cases:
        found = classify(case, work_dir)
        if not found:
            agree += 1
        for cls, key, texts in found:
            groups[(cls, key)].append(case)
            hits = [e for e in entries if e.matches(cls, key, texts, case.id)]
            for e in hits:
                e.used += 1
            if not hits:
                unlisted[(cls, key)].append(case)

    kinds = collections.Counter()  # disagreements by the kind of the first entry that allows them
    for (cls, key), members in groups.items():
        for case in members:
            texts = [t for c, k, t in classify(case, work_dir) if (c, k) == (cls, key)][0]
            entry = next((e for e in entries if e.matches(cls, key, texts, case.id)), None)
            kinds[entry.reason.split(":")[0] if entry else "not listed"] += 1
    published = [c for c in cases if c.mutation is None]
    refused = sum(c.oracle is not None for c in cases)
    elapsed = time.monotonic() - started
    print(f"{len(cases)} cases ({len(published)} files (published and probes), {len(cases) - len(published)} mutants, "
          f"seed {opts.seed}); the tools refuse {refused}; {elapsed:.1f}s "
          f"(oracle done at {oracle_done - started:.1f}s)")
    print(f"agreement: {agree}/{len(cases)} = {100.0 * agree / max(len(cases), 1):.1f}%  "
          f"(files: {sum(not classify(c, work_dir) for c in published)}/{len(published)})")
    print("disagreements by kind (allowed_differences.txt): "
          + ", ".join(f"{k} {n}" for k, n in kinds.most_common()))
    for cls, title in (("false-alarm", "false alarms (the tool accepts, accelc errs), by accelc code"),
                       ("miss", "misses (the tool refuses, accelc has no error), by the tool's error")):
        keys = sorted((k for k in groups if k[0] == cls), key=lambda k: -len(groups[k]))
        print(f"\n{title}: {sum(len(groups[k]) for k in keys)} in {len(keys)} classes")
        for key in keys:
            members = groups[key]
            mark = "  " if key not in unlisted else "! "
            print(f"{mark}{len(members):5d}  {key[1]}")
            for case in members[:opts.show]:
                detail = case.oracle if cls == "miss" else "; ".join(
                    m for c, m in case.errors if c == key[1])
                print(f"           {case.id}\n               {detail[:300]}")
    # Staleness is judged on the default seed's sample, whose cases a larger run includes; an
    # entry marked nightly only on the nightly sample or larger.
    stale = [e for e in entries if not e.used and opts.seed == DEFAULT_SEED
             and (not e.nightly or opts.cases >= NIGHTLY_CASES)]
    if unlisted:
        print(f"\nFAIL: {sum(len(v) for v in unlisted.values())} disagreements in {len(unlisted)} classes "
              f"are not in {os.path.relpath(opts.allow)} (marked ! above):")
        for (cls, code), members in unlisted.items():
            for case in members[:opts.show]:
                detail = case.oracle if cls == "miss" else "; ".join(m for c, m in case.errors if c == code)
                print(f"  {cls} {code} {case.id}\n      {detail[:300]}")
    for e in stale:
        print(f"FAIL: stale entry {opts.allow}:{e.line_number}: {e.cls} {e.pattern} {e.glob} matches no case")
    with open(os.path.join(work_dir, "cases.json"), "w") as f:
        json.dump([{"id": c.id, "path": c.path, "oracle": c.oracle, "accelc_errors": c.errors} for c in cases],
                  f, indent=1)
    return 1 if unlisted or stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
