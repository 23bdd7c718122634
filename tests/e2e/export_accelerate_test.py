"""Judges the Accelerate configs Accel writes by Accelerate itself.

Every spec that `accelc export --to accelerate-yaml` exports (the specs, the examples and the
passing rule specs), and what `accelc init --format accelerate-yaml` writes for an FSDP and a
DeepSpeed answer set, is launched by Accelerate's own `launch_command` (in this process, with
the host probes of accelerate_launch_oracle_test.py patched and nothing started). Each must:
- launch, where `accelc check` passes the written file;
- give worker 0 an environment from which Accelerate's own plugin, built as `Accelerator()`
  builds it, carries what the YAML says: the FSDP plugin's layer classes, wrap policy, version,
  state dict type and offload; the DeepSpeed plugin's stage, accumulation and offload devices.

Usage: export_accelerate_test.py <accelc> <repo_root> <work_dir>
Exit 0 pass, 1 fail, 77 when Accelerate cannot be imported.
"""
import glob
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

# Answers to `accelc init`'s questionnaire (as tests/lit/init/*.test give them).
INIT_ANSWERS = {
    "init_fsdp2": "multi-GPU\n\n\nFSDP\n2\nno\nyes\n\nBertLayer,T5Block\n\n\n8\n2\nbf16\n\n\n",
    "init_fsdp1": "multi-GPU\n\n\nfsdp\n1\nshard_grad_op\n\nSIZE_BASED_WRAP\n2000000\n\n\n\n\n\n\n",
}


def specs(repo_root):
    found = sorted(glob.glob(os.path.join(repo_root, "specs", "*.accel")))
    found += sorted(glob.glob(os.path.join(repo_root, "examples", "*", "*.accel")))
    found += sorted(glob.glob(os.path.join(repo_root, "tests", "lit", "rules", "*", "*.pass.accel")))
    return found


def folder_copy(folder, repo_root, work_dir):
    """A copy of `folder` (a spec's, in the checkout) under `work_dir`, made once."""
    copy = os.path.join(work_dir, "folders", os.path.relpath(folder, repo_root))
    if not os.path.isdir(copy):
        shutil.copytree(folder, copy, symlinks=True)
    return copy


def written_configs(accelc, repo_root, work_dir):
    """(name, yaml path, folder to launch in) of every config Accel writes for Accelerate."""
    out = []
    for spec in specs(repo_root):
        name = os.path.relpath(spec, repo_root).replace(os.sep, "_")
        path = os.path.join(work_dir, name + ".yaml")
        done = subprocess.run([accelc, "export", "--to", "accelerate-yaml", spec, "-o", path],
                              capture_output=True, text=True)
        if done.returncode == 0:
            # Launched in a copy of the spec's folder: the paths it names are relative to there,
            # and a launch writes files where it runs (`.deepspeed_env` for several machines).
            out.append((os.path.relpath(spec, repo_root), path, folder_copy(os.path.dirname(spec), repo_root, work_dir)))
    for name, answers in INIT_ANSWERS.items():
        path = os.path.join(work_dir, name + ".yaml")
        done = subprocess.run([accelc, "init", "--format", "accelerate-yaml", "-o", path], input=answers,
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"FAIL: accelc init ({name}) failed: {done.stderr}")
        out.append((name, path, work_dir))
    return out


def names(value):
    """The layer class names a YAML value means: a list, or one comma-separated string."""
    if value is None:
        return None
    if isinstance(value, list):
        return [str(v) for v in value]
    return [n.strip() for n in str(value).split(",")]


def fsdp_expectations(section):
    """(plugin attribute, expected value, how to read the attribute) for an fsdp_config."""
    out = []
    classes = names(section.get("fsdp_transformer_layer_cls_to_wrap"))
    policy = section.get("fsdp_auto_wrap_policy")
    if classes is not None and policy == "TRANSFORMER_BASED_WRAP":
        out.append(("transformer_cls_names_to_wrap", classes, lambda v: v))
    if policy is not None:
        out.append(("auto_wrap_policy", policy, policy_name))
    if "fsdp_version" in section:
        out.append(("fsdp_version", int(section["fsdp_version"]), lambda v: v))
    if "fsdp_state_dict_type" in section:
        out.append(("state_dict_type", section["fsdp_state_dict_type"], lambda v: v.name))
    if "fsdp_offload_params" in section:
        out.append(("cpu_offload", bool(section["fsdp_offload_params"]), offload_on))
    return out


def policy_name(policy):
    import torch.distributed.fsdp.wrap as wrap
    if policy is None:
        return "NO_WRAP"
    function = getattr(policy, "func", policy)
    return {wrap.transformer_auto_wrap_policy: "TRANSFORMER_BASED_WRAP",
            wrap.size_based_auto_wrap_policy: "SIZE_BASED_WRAP"}.get(function, repr(policy))


def offload_on(offload):
    if hasattr(offload, "offload_params"):  # FSDP1's CPUOffload
        return bool(offload.offload_params)
    # FSDP2: a CPUOffloadPolicy, or the plain OffloadPolicy that offloads nothing.
    return type(offload).__name__ == "CPUOffloadPolicy"


def deepspeed_expectations(section):
    out = []
    if "zero_stage" in section:
        out.append(("zero_stage", int(section["zero_stage"]), lambda v: v))
    if "gradient_accumulation_steps" in section and section["gradient_accumulation_steps"] != "auto":
        out.append(("gradient_accumulation_steps", int(section["gradient_accumulation_steps"]), lambda v: v))
    for key in ("offload_optimizer_device", "offload_param_device"):
        if key in section:
            out.append((key, section[key], lambda v: v))
    return out


def build_plugin(kind, env, cwd):
    """The plugin `Accelerator()` builds from the launch's environment, in the folder the launch
    ran in (a DeepSpeed file's relative path is read from there), and its problem if any."""
    import accelerate.utils as au
    import torch
    # A host probe: the FSDP plugin asks for the current GPU, which this host may lack.
    torch.cuda.current_device = lambda: 0
    saved = dict(os.environ)
    old_cwd = os.getcwd()
    os.chdir(cwd)
    # Values the oracle gives by shape (ports, paths of temporary files) are not what plugins read.
    os.environ.update({k: v for k, v in env.items() if isinstance(v, str)})
    try:
        plugin = au.FullyShardedDataParallelPlugin() if kind == "fsdp" else au.DeepSpeedPlugin()
        if kind == "fsdp" and plugin.auto_wrap_policy is not None:
            # `prepare` resolves the policy and the layer classes; a model with exactly the named
            # classes stands in for the user's.
            plugin.set_auto_wrap_policy(model_with(plugin.transformer_cls_names_to_wrap or []))
        return plugin, None
    except Exception as e:  # what `Accelerator()` / `prepare` would raise
        return None, f"{type(e).__name__}: {e}"
    finally:
        os.chdir(old_cwd)
        os.environ.clear()
        os.environ.update(saved)


def model_with(class_names):
    import torch
    layers = []
    for name in class_names:
        if name.isidentifier():
            layers.append(type(name, (torch.nn.Linear,), {})(2, 2))
    model = torch.nn.Sequential(*layers) if layers else torch.nn.Sequential(torch.nn.Linear(2, 2))
    model._no_split_modules = None
    return model


def judge(oracle, o, label, path, cwd, accelc, failures):
    import yaml
    with open(path) as f:
        config = yaml.safe_load(f)
    if config.get("distributed_type") == "XLA" or config.get("tpu_name") or config.get("tpu_use_cluster"):
        return "not judged: a TPU launch needs torch_xla, which this host lacks"
    checked = subprocess.run([accelc, "check", path], capture_output=True, text=True, cwd=cwd)
    result = oracle.launch(o.Case(label, path), cwd)
    if "error" in result:
        if checked.returncode == 0:
            failures.append(f"{label}: accelc passes the written file, but accelerate launch fails: {result['error']}")
        return "refused"
    env = result["processes"][0]["env"]
    kind = {"FSDP": "fsdp", "DEEPSPEED": "deepspeed"}.get(config.get("distributed_type"))
    if kind is None:
        return "launched"
    section = config.get("fsdp_config" if kind == "fsdp" else "deepspeed_config") or {}
    expectations = fsdp_expectations(section) if kind == "fsdp" else deepspeed_expectations(section)
    plugin, problem = build_plugin(kind, env, cwd)
    if problem:
        failures.append(f"{label}: Accelerate's {kind} plugin, built from the launch's environment, raises {problem}")
        return "plugin raised"
    for attribute, want, read in expectations:
        got = read(getattr(plugin, attribute))
        if got != want:
            failures.append(f"{label}: the file says {attribute} = {want!r}; Accelerate's plugin has {got!r}")
    return f"{kind}: {len(expectations)} values as written"


def checkout_files(repo_root):
    """The files under the folders whose specs are launched (their copies are, not they)."""
    found = set()
    for top in ("specs", "examples", os.path.join("tests", "lit", "rules")):
        for folder, _, names in os.walk(os.path.join(repo_root, top)):
            found.update(os.path.join(folder, name) for name in names)
    return found


def main(argv):
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    accelc, repo_root, work_dir = (os.path.abspath(a) for a in argv[1:4])
    os.environ.setdefault("DS_ACCELERATOR", "cpu")
    try:
        import accelerate  # noqa: F401
        import yaml  # noqa: F401
    except ImportError as e:
        print(f"skipped: Accelerate is not importable ({e}); install python/requirements.txt")
        return 77
    import accelerate_launch_oracle_test as o
    shutil.rmtree(work_dir, ignore_errors=True)  # a rerun writes every file afresh
    os.makedirs(work_dir)
    configs = written_configs(accelc, repo_root, work_dir)
    base = o.base_environment(work_dir)
    o.set_environ(base)
    oracle = o.Oracle(base, cuda_devices=8)
    failures = []
    plugins = 0
    before = checkout_files(repo_root)
    for label, path, cwd in configs:
        verdict = judge(oracle, o, label, path, cwd, accelc, failures)
        plugins += verdict.startswith(("fsdp", "deepspeed"))
        print(f"  {label}: {verdict}")
    for written in sorted(checkout_files(repo_root) - before):
        failures.append(f"a launch wrote {written} into the checkout; launches must run in the work folder")
    print(f"{len(configs)} written configs launched by Accelerate, {plugins} plugins rebuilt from the launch")
    if plugins < 3:
        failures.append(f"only {plugins} FSDP/DeepSpeed configs were judged; the inputs lost their engines")
    for failure in failures:
        print("FAIL: " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
