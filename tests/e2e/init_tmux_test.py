"""`accelc init` as a person uses it: in a tmux session with a real terminal, answering some
questions and taking the defaults of the others, reading the prompts off the screen.

Usage: init_tmux_test.py ACCELC WORKDIR. Exits 77 (skipped) without tmux.
"""
import os
import shutil
import subprocess
import sys
import time

SESSION = f"accel-init-test-{os.getpid()}"


def tmux(*args, check=True):
    return subprocess.run(["tmux", *args], capture_output=True, text=True, timeout=10, check=check)


def screen():
    return tmux("capture-pane", "-p", "-t", SESSION).stdout


def wait_for(predicate, what, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}; the screen:\n{screen()}")


def answer(question, text):
    """Waits until `question` is on the screen, then types `text` and Enter."""
    wait_for(lambda: question in screen(), f"the question {question!r}")
    if text:
        tmux("send-keys", "-t", SESSION, "-l", text)
    tmux("send-keys", "-t", SESSION, "Enter")


def main():
    if shutil.which("tmux") is None:
        print("skipped: tmux is not installed")
        return 77
    accelc, workdir = os.path.abspath(sys.argv[1]), sys.argv[2]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    spec = os.path.join(workdir, "tmux_job.accel")
    try:
        # A wide window: the questions are long, and a wrapped one is harder to find.
        tmux("new-session", "-d", "-s", SESSION, "-x", "250", "-y", "50", "-c", workdir,
             f"{accelc} init -o tmux_job.accel; echo init-exited-$?; sleep 30")
        answer("Which type of machine are you using?", "multi-GPU")
        answer("How many different machines", "")
        answer("checked while running for errors", "")
        answer("Which engine should distribute the model?", "FSDP")
        answer("What should be your FSDP version?", "")
        answer("resharding after forward", "")
        answer("offload parameters and gradients to CPU", "")
        answer("auto wrap policy", "")
        answer("transformer layer class names", "LlamaDecoderLayer")
        answer("state dict type", "")
        answer("How many processes should be used", "8")
        answer("How many gradient accumulation steps", "")
        # A wrong answer first: the reason is shown and the question asked again.
        answer("Do you wish to use mixed precision?", "bf17")
        wait_for(lambda: "`bf17` is not one of no, fp8, fp16, bf16; try again" in screen(), "the refusal")
        answer("`bf17` is not one of", "bf16")
        answer("Which seed", "")
        answer("What is the job's name?", "")
        wait_for(lambda: "init-exited-" in screen(), "accelc init to finish")
        shown = screen()
        assert "init-exited-0" in shown, shown
        # The defaults are shown in brackets, as accelerate config shows them.
        assert "[_no_split_modules]" in shown and "[YES/no]" in shown, shown
        with open(spec) as f:
            text = f.read()
        for expected in ("job tmux_job {", "distributed_type = FSDP", "num_processes = 8",
                         "mixed_precision = BF16", 'transformer_cls_names_to_wrap = ["LlamaDecoderLayer"]',
                         "state_dict_type = SHARDED_STATE_DICT", "seed = 42"):
            assert expected in text, f"{expected!r} not in:\n{text}"
        subprocess.run([accelc, "check", "--werror", spec], check=True, timeout=60)
        print("accelc init in tmux: ok")
        return 0
    finally:
        tmux("kill-session", "-t", SESSION, check=False)


if __name__ == "__main__":
    sys.exit(main())
