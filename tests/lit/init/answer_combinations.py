"""Answers `accelc init` over many combinations of answers and checks that every file it writes
passes `accelc check --werror` and is in `accelc fmt`'s layout: the questionnaire's guarantee.

Usage: answer_combinations.py ACCELC WORKDIR [RUNS]

Each run talks to accelc through pipes as a person would: it reads a prompt, picks that run's
answer for it (some of them wrong on purpose, which must be re-asked), and writes it.
"""
import itertools
import os
import random
import select
import subprocess
import sys

# Answers per question, by words of the question (the first key found in the prompt wins). The
# first answer of each list is valid; "" takes the default; the wrong ones must be re-asked.
CHOICES = {
    "type of machine": ["no", "multi-CPU", "multi-GPU", "multi-NPU", "multi-XPU", "MULTI-gpu", "tpu"],
    "CPU only": ["", "yes", "no"],
    "different machines": ["1", "2", "3", "0"],
    "rank of this machine": ["0", "1", "9"],
    "IP address": ["10.0.0.1", "head-node", "", "a b"],
    "port": ["", "29400", "70000"],
    "checked while running": ["", "yes"],
    "Which engine": ["DDP", "FSDP", "DeepSpeed", "deepspeed", "horovod"],
    # These two questions name ZeRO stage 3 too.
    "16-bit model": ["", "yes"],
    "zero.Init": ["", "yes"],
    "ZeRO": ["0", "1", "2", "3", "4"],
    # The NVMe questions name what they offload too: their keys come first.
    "NVMe path to offload optimizer": ["", "/mnt/nvme0"],
    "NVMe path to offload parameters": ["", "/mnt/nvme1"],
    "offload optimizer": ["none", "cpu", "nvme", "disk"],
    "offload parameters?": ["none", "cpu", "nvme"],
    "gradient accumulation": ["", "4", "0"],
    "use gradient clipping": ["", "yes", "no"],
    "clipping value": ["", "0.5", "-1"],
    "launcher": ["", "standard", "slurm", "nossh", "openmpi"],
    "hostfile": ["", "/etc/hosts.ds"],
    "FSDP version": ["", "1", "2", "3"],
    "sharding strategy": ["", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD", "HYBRID_SHARD_ZERO2"],
    "resharding": ["", "no"],
    "offload parameters and gradients": ["", "yes"],
    "auto wrap policy": ["", "SIZE_BASED_WRAP", "NO_WRAP"],
    "layer class names": ["", "BertLayer", "BertLayer,T5Block", "Bert Layer"],
    "minimum number of parameters": ["", "1000", "-5"],
    "state dict type": ["", "FULL_STATE_DICT", "LOCAL_STATE_DICT", "SHARDED_STATE_DICT"],
    "How many processes": ["", "6", "12", "1"],
    "mixed precision": ["", "bf16", "fp16", "fp8", "int8"],
    "seed": ["", "0", "4294967295", "-1"],
    "job's name": ["", "my_job", "2fast"],
}


def key_of(prompt):
    for key in CHOICES:
        if key in prompt:
            return key
    raise SystemExit(f"a question no CHOICES entry matches: {prompt!r}")


def converse(accelc, out_path, extra_args, pick):
    """Runs one questionnaire; `pick(key, attempt)` gives the answer. Returns (rc, transcript)."""
    process = subprocess.Popen([accelc, "init", "-o", out_path] + extra_args, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
    transcript = b""
    attempts = {}
    while True:
        ready, _, _ = select.select([process.stdout], [], [], 20)
        if not ready:
            process.kill()
            raise SystemExit(f"accelc init stopped answering; so far:\n{transcript.decode()}")
        chunk = os.read(process.stdout.fileno(), 65536)
        if not chunk:
            break
        transcript += chunk
        # accelc flushes exactly when it waits for an answer, after the prompt's ": ".
        if transcript.endswith(b": "):
            prompt = transcript.decode().rsplit("\n", 1)[-1]
            key = key_of(prompt)
            attempt = attempts.get(key, 0)
            attempts[key] = attempt + 1
            process.stdin.write((pick(key, attempt) + "\n").encode())
    stderr = process.stderr.read().decode()
    return process.wait(timeout=20), transcript.decode() + stderr


def run_checks(accelc, path):
    for command in ([accelc, "check", "--werror", path],) + (([accelc, "fmt", "--check", path],)
                                                            if path.endswith(".accel") else ()):
        result = subprocess.run(command, capture_output=True, text=True, timeout=60)
        if result.returncode != 0:
            return f"{' '.join(command[1:])} failed:\n{result.stderr}"
    return ""


def main():
    accelc, workdir = sys.argv[1], sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    os.makedirs(workdir, exist_ok=True)
    rng = random.Random(20240601)
    # A run: one answer index per question, then, when the answer is refused, the default.
    plans = []
    # Every answer of every question at least once (the others at their first choice)...
    for key, answers in CHOICES.items():
        for index in range(len(answers)):
            plans.append({key: index})
    # ...and random combinations of all of them.
    for _ in range(runs):
        plans.append({key: rng.randrange(len(answers)) for key, answers in CHOICES.items()})
    # Make the engine questions come up in the deterministic pass too.
    for machine, engine in itertools.product([2, 5], [0, 1, 2]):
        plans.append({"type of machine": machine, "Which engine": engine})
    failures = []
    written = 0
    for number, plan in enumerate(plans):
        for extra, suffix in (([], ".accel"), (["--format", "accelerate-yaml"], ".yaml")):
            if suffix == ".yaml" and number % 3:
                continue  # the YAML path shares the spec's check; a third of the runs suffice
            path = os.path.join(workdir, f"run{number}{suffix}")
            if os.path.exists(path):
                os.remove(path)

            def pick(key, attempt, plan=plan):
                answers = CHOICES[key]
                # A refused answer is followed by the first, valid one: never more than two tries.
                return answers[plan.get(key, 0)] if attempt == 0 else answers[0]

            rc, transcript = converse(accelc, path, extra, pick)
            if rc != 0:
                failures.append(f"run {number} {extra}: exit {rc}\n{transcript}")
                continue
            problem = run_checks(accelc, path)
            if problem:
                failures.append(f"run {number} {extra}: {problem}\n{transcript}")
            written += 1
    for failure in failures[:5]:
        print(failure)
    print(f"{written} files written, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
