#!/usr/bin/env python3
"""Every published Accelerate config that builds into a plan for an accelerator (FSDP, DeepSpeed,
MULTI_GPU on one or two machines, MULTI_XPU, FSDP2 with a tensor-parallel x HSDP mesh: device
other than `cpu`), imported and built as
tests/corpus/build_published.sh does (with 2 training steps), then run by
`accelrun plan.json --device cpu`: a rehearsal on CPU processes over Gloo, with the plan's world
size, every machine's processes on this host. Each run must say it is a rehearsal and save a
valid `model.safetensors` (its header, offsets and sizes read by e2e_support's reader).

The imported workload is a placeholder MLP. `latest_fsdp.yaml` wraps `BertLayer` modules
(`fsdp_transformer_layer_cls_to_wrap`), which the MLP lacks: its build must fail naming BertLayer
and the MLP's classes (A3018), before any process starts, as Accelerate fails ("Could not find
the transformer layer class"); with the placeholder replaced by a small TorchScript model whose
layers are a class `BertLayer`, the wrap units must be those layers. With TRANSFORMER_BASED_WRAP and no class named, the MLP trains
as one unit (Accelerate wraps the root alone when the model has no `_no_split_modules`).

A plan for an accelerator other than CUDA GPUs is refused without `--device cpu`, naming it.

Usage: corpus_rehearsal_test.py ACCELC ACCELRUN CORPUS_DIR WORKDIR
  CORPUS_DIR: tests/corpus (holds published/native-builds.txt and published/accelerate)
Runs with the Python of the pinned torch (torch writes the TorchScript model).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from e2e_support import read_safetensors, scheduler_free_env  # noqa: E402

STEPS = 2
# The layers' classes of the TorchScript stand-in for a BERT model: two BertLayer blocks.
BERT_MODEL = r"""
import sys
import torch
from torch import nn


class BertLayer(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.dense = nn.Linear(width, width)

    def forward(self, x):
        return x + torch.tanh(self.dense(x))


class TinyBert(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.embed = nn.Linear(width, width)
        self.layers = nn.ModuleList([BertLayer(width), BertLayer(width)])
        self.head = nn.Linear(width, 1)

    def forward(self, x):
        x = self.embed(x)
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


torch.manual_seed(0)
torch.jit.save(torch.jit.script(TinyBert(16)), sys.argv[1])
"""


def sh(command, cwd, env, timeout=240):
    started = time.monotonic()
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                            stdin=subprocess.DEVNULL)
    return result, time.monotonic() - started


def build(accelc, config, spec, plan, cwd, env, extra=()):
    result, _ = sh([accelc, "build", spec, "-o", plan, "--set", f"train.steps={STEPS}", *extra], cwd, env)
    assert result.returncode == 0, f"{config}: accelc build failed:\n{result.stderr}"
    with open(os.path.join(cwd, plan)) as f:
        return json.load(f)


def init_step(plan):
    return next(step for step in plan["steps"] if step["op"] == "init_process_group")


def check_rehearsal(name, result, out_dir, world_size, machines):
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"{name}: accelrun exited {result.returncode}:\n{output[-3000:]}"
    assert re.search(r"^accelrun: rehearsal on the CPU of an accelerator job: .* on %d CPU process" % world_size, output, re.M), \
        f"{name}: the log does not say it was a rehearsal on {world_size} processes:\n{output[-3000:]}"
    if machines > 1:
        assert f"its {machines} machines x" in output, f"{name}: the machines are not said to run here"
    with open(os.path.join(out_dir, "metrics.json")) as f:
        metrics = json.load(f)
    assert metrics["world_size"] == world_size, f"{name}: trained on world size {metrics['world_size']}"
    tensors = read_safetensors(os.path.join(out_dir, "model.safetensors"))
    assert tensors, f"{name}: model.safetensors holds no tensor"
    for tensor, (dtype, shape, values) in tensors.items():
        assert all(v == v and abs(v) != float("inf") for v in values), f"{name}: {tensor} is not finite"
    return output, tensors


def main():
    accelc, accelrun, corpus, workdir = (os.path.abspath(a) for a in sys.argv[1:5])
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    shutil.copytree(os.path.join(corpus, "published", "accelerate"), os.path.join(workdir, "accelerate"))
    env = scheduler_free_env()
    env["NO_COLOR"] = "1"
    configs = []
    with open(os.path.join(corpus, "published", "native-builds.txt")) as f:
        for line in f:
            config, _, verdict = line.strip().partition(": ")
            if config and not config.startswith("#") and verdict == "builds":
                configs.append(config)

    rehearsed = {}
    for config in configs:
        stem = os.path.splitext(config)[0]
        spec, plan_file = stem + ".accel", stem + ".plan.json"
        result, _ = sh([accelc, "import", config, "-o", spec], workdir, env)
        assert result.returncode == 0, f"{config}: accelc import failed:\n{result.stderr}"
        plan = build(accelc, config, spec, plan_file, workdir, env)
        init = init_step(plan)
        if init["device"] == "cpu":
            continue
        world = init["num_machines"] * init["processes_per_machine"]
        out_dir = os.path.join(workdir, "runs", os.path.basename(stem))
        result, seconds = sh([accelrun, plan_file, "--device", "cpu", "--output-dir", out_dir], workdir, env)
        output, tensors = check_rehearsal(config, result, out_dir, world, init["num_machines"])
        if init["device"] != "cuda":
            assert f"rehearsal: device {init['device']} -> cpu" in output, f"{config}: no device change said"
        print(f"{config}: device {init['device']}, backend {init['backend']}, {world} processes "
              f"({init['num_machines']} machine(s)): rehearsed in {seconds:.1f} s, {len(tensors)} tensors saved")
        rehearsed[config] = seconds

    expected = {"accelerate/examples/alst_ulysses_sequence_parallelism/sp-alst.accelerate-config.yml",
                "accelerate/examples/config_yaml_templates/deepspeed.yaml",
                "accelerate/examples/config_yaml_templates/fsdp.yaml",
                "accelerate/examples/config_yaml_templates/multi_gpu.yaml",
                "accelerate/examples/config_yaml_templates/multi_node.yaml",
                "accelerate/examples/config_yaml_templates/multi_xpu.yaml",
                "accelerate/examples/slurm/fsdp_config.yaml",
                "accelerate/examples/torch_native_parallelism/configs/tp_hsdp.yaml"}
    assert set(rehearsed) == expected, f"rehearsed {sorted(rehearsed)}, expected {sorted(expected)}"

    # An XPU plan is refused without --device cpu, naming the way to rehearse it.
    xpu_plan = "accelerate/examples/config_yaml_templates/multi_xpu.plan.json"
    result, _ = sh([accelrun, xpu_plan, "--output-dir", os.path.join(workdir, "runs", "xpu-refused")], workdir, env)
    assert result.returncode == 2, f"the XPU plan was not refused: exit {result.returncode}"
    assert "is a job for Intel XPUs (device xpu, backend xccl, 2 processes)" in result.stderr, result.stderr
    assert f"`accelrun {xpu_plan} --device cpu`" in result.stderr, result.stderr
    print("the XPU plan without --device cpu: refused, naming `--device cpu`")

    # latest_fsdp.yaml on the placeholder MLP, which has no BertLayer: refused when it compiles,
    # naming the class and the MLP's.
    config = "accelerate/tests/test_configs/latest_fsdp.yaml"
    result, _ = sh([accelc, "import", config, "-o", "accelerate/tests/test_configs/latest_fsdp.accel"], workdir, env)
    assert result.returncode == 0, f"{config}: accelc import failed:\n{result.stderr}"
    result, _ = sh([accelc, "build", "accelerate/tests/test_configs/latest_fsdp.accel", "-o", "mlp.plan.json"],
                   workdir, env)
    assert result.returncode != 0 and re.search(
        r"`transformer_cls_names_to_wrap` names `BertLayer`, but the built-in `MLP` model has no module of that "
        r"class.*its module classes are `Linear`, `ReLU`.*\[A3018\]", result.stderr), \
        f"{config}: the MLP build is not refused naming BertLayer and the MLP's classes:\n{result.stderr}"
    print(f"{config}: the placeholder MLP is refused when it compiles, naming BertLayer")

    # latest_fsdp.yaml with a model whose layers are BertLayer: those are the wrap units.
    folder = os.path.join(workdir, os.path.dirname(config))
    model_path = os.path.join(folder, "bert.pt")
    # torch.jit.script reads the classes' source: the script is a file.
    script = os.path.join(workdir, "tiny_bert.py")
    with open(script, "w") as f:
        f.write(BERT_MODEL)
    subprocess.run([sys.executable, script, model_path], check=True, timeout=120)
    with open(os.path.join(workdir, "accelerate/tests/test_configs/latest_fsdp.accel")) as f:
        text = f.read()
    assert "model = MLP { inputs = 16 }" in text, "the imported placeholder workload changed"
    with open(os.path.join(folder, "latest_fsdp_bert.accel"), "w") as f:
        f.write(text.replace("model = MLP { inputs = 16 }", 'model = TorchScript { path = "bert.pt" }'))
    spec = "accelerate/tests/test_configs/latest_fsdp_bert.accel"
    build(accelc, config, spec, "bert.plan.json", workdir, env)
    out_dir = os.path.join(workdir, "runs", "latest_fsdp_bert")
    result, seconds = sh([accelrun, "bert.plan.json", "--device", "cpu", "--output-dir", out_dir], workdir, env)
    output, tensors = check_rehearsal(config + " (BertLayer model)", result, out_dir, 1, 1)
    units = re.search(r"^accelrun: wrap units: (.*)$", output, re.M)
    assert units, f"no wrap units line:\n{output[-3000:]}"
    assert units.group(1) == "the root, layers.0 (__torch__.BertLayer), layers.1 (__torch__.BertLayer)", \
        f"the wrap units are not the BertLayer modules: {units.group(1)}"
    assert "layers.0.dense.weight" in tensors and "head.weight" in tensors, sorted(tensors)
    print(f"{config} with a BertLayer model: wrap units {units.group(1)} ({seconds:.1f} s)")

    # TRANSFORMER_BASED_WRAP without a class on the MLP: one unit, the root, no error.
    result, _ = sh([accelc, "build", "accelerate/tests/test_configs/latest_fsdp.accel", "-o", "empty.plan.json",
                    "--set", f"train.steps={STEPS}", "--set", "compute.fsdp_config.transformer_cls_names_to_wrap=[]"],
                   workdir, env)
    assert result.returncode == 0, f"build with no class to wrap failed:\n{result.stderr}"
    out_dir = os.path.join(workdir, "runs", "latest_fsdp_empty")
    result, seconds = sh([accelrun, "empty.plan.json", "--device", "cpu", "--output-dir", out_dir], workdir, env)
    output, _ = check_rehearsal("no class to wrap", result, out_dir, 1, 1)
    assert re.search(r"^accelrun: wrap units: the root$", output, re.M), f"not one root unit:\n{output[-3000:]}"
    print(f"TRANSFORMER_BASED_WRAP with no class on the MLP: one unit, the root ({seconds:.1f} s)")
    print(f"rehearsed {len(rehearsed)} configs in {sum(rehearsed.values()):.1f} s of accelrun")


if __name__ == "__main__":
    main()
