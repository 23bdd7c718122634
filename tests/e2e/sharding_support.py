"""Plans with `train.sharding` for the sharded engine's end-to-end tests: a spec compiled by
accelc, then its sharding record set in the plan's text and the plan rehashed, as accelc would
have written it (the hash is the sha256 of the plan's text with an empty hash)."""
import hashlib
import json
import os
import subprocess

from e2e_support import free_port, run


# The job the checkpoint chains train (sharded_resume_test.py, sharded_checkpoint_test.py): an MLP
# checkpointed every 4 steps under automatic naming, on `procs` processes of distributed type
# `dtype`, `steps` steps of a global batch of 64.
CHAIN_SPEC = """job chain {{
  compute {{ distributed_type = {dtype}; num_processes = {procs} }}
  accelerator {{
    seed = 5
    init_process_group {{ timeout = 60s }}
    dataloader_config {{ use_seedable_sampler = true }}
    project_config {{ project_dir = "{project}"; automatic_checkpoint_naming = true }}
  }}
  model = MLP {{ inputs = 8; hidden = [32, 31]; outputs = 2 }}
  data = SyntheticRegression {{ samples = 549; features = 8; batch_size = {batch}; seed = 9 }}
  train {{
    steps = {steps}
    optimizer = AdamW {{ lr = 0.01 }}
    max_grad_norm = 5.0
    log_every = 4
    checkpoint_every = 4
  }}
  output {{ dir = "{out}" }}
}}
"""


def _closing_brace(text, opening):
    depth = 0
    for i in range(opening, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i + 1
    raise AssertionError("unbalanced plan text")


def rehash(text):
    old = json.loads(text)["hash"]
    digest = hashlib.sha256(text.replace(f'"hash": "{old}"', '"hash": ""', 1).encode()).hexdigest()
    return text.replace(f'"hash": "{old}"', f'"hash": "sha256:{digest}"', 1)


def set_sharding(plan_path, **fields):
    """Sets fields of the train loop's `sharding` record in the compiled plan at `plan_path`."""
    with open(plan_path) as f:
        text = f.read()
    assert rehash(text) == text, f"{plan_path}: the plan's hash does not reproduce; the test cannot edit it"
    key = text.index('"sharding": {', text.index('"steps"'))
    opening = text.index("{", key)
    closing = _closing_brace(text, opening)
    record = json.loads(text[opening:closing])
    unknown = set(fields) - set(record)
    assert not unknown, f"the plan's sharding record has no {sorted(unknown)}"
    record.update(fields)
    indent = key - (text.rfind("\n", 0, key) + 1)
    body = json.dumps(record, indent=2, sort_keys=True).replace("\n", "\n" + " " * indent)
    with open(plan_path, "w") as f:
        f.write(rehash(text[:opening] + body + text[closing:]))


def compile_plan(accelc, spec_text, out_dir, **sharding):
    os.makedirs(out_dir, exist_ok=True)
    spec = os.path.join(out_dir, "job.accel")
    with open(spec, "w") as f:
        f.write(spec_text)
    plan = os.path.join(out_dir, "job.plan.json")
    run([accelc, "build", spec, "-o", plan])
    if sharding:
        set_sharding(plan, **sharding)
    return plan


def run_nodes(accelrun, plan, out_dir, nodes, env=None, extra=()):
    """Runs `plan` as `nodes` machines on this host (one accelrun per node rank); node 0's output
    directory is `out_dir`."""
    if nodes == 1:
        return run([accelrun, plan, "--output-dir", out_dir, *extra], env=env).stdout
    port = str(free_port())
    launches = [subprocess.Popen([accelrun, plan, "--node-rank", str(n), "--master-addr", "127.0.0.1",
                                  "--master-port", port, "--output-dir",
                                  out_dir if n == 0 else f"{out_dir}-node{n}", *extra],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
                for n in reversed(range(nodes))]
    outputs = [launch.communicate(timeout=240)[0] for launch in launches]
    for launch, output in zip(launches, outputs):
        print(output)
        assert launch.returncode == 0, f"a node's accelrun exited {launch.returncode}"
    return outputs[-1]
