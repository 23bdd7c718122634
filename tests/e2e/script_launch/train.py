"""A tiny Accelerate training script for script_launch_test.py: the same under `accelerate launch`
and `accelrun`, it prints one JSON line per step per rank, {"rank": r, "step": s, "loss": l}
(json writes the float l as repr(l), so equal text is an equal float).

Every line names the process twice: "rank" is accelerator.process_index, "launched_as" is the
launcher's RANK (without CUDA, a MULTI_GPU launch starts processes that are all process_index 0).

Options (the script's own, after it on the command line):
  --steps N              steps to train (default 4; one pass over the data at most)
  --save DIR             after each step s: accelerator.save_state(DIR/step-s), then, once every
                         rank has saved, rank 0 writes s to DIR/latest
  --resume DIR           when DIR/latest exists: accelerator.load_state(DIR/step-<latest>), then
                         train from the step after it
  --die-at-step N        the rank --die-rank R (default 1) exits 7 at step N (after the step
  --die-rank R           before it is in DIR/latest, with --save), unless this is a restart
                         (TORCHELASTIC_RESTART_COUNT > 0), so that a restarted job succeeds
  --exit-early-rank R    rank R returns 0 early, where --exit-early-at says:
  --exit-early-at WHERE    start: before Accelerator(), so that the others wait for it in the
                           process group's rendezvous (they block, as in a NCCL collective);
                           barrier (default): after it, as the others enter wait_for_everyone()
                           (over Gloo they fail at once: `Connection closed by peer`)
  --print-env            print the launch variables the script was given (ENV_NAMES)
  --print-state          print the AcceleratorState and its FSDP or DeepSpeed plugin
  --no-train             stop after those lines (DeepSpeed cannot prepare on CPU)
  --marker TEXT          ignored: a unique word on the command line, for pgrep -f
"""
import argparse
import json
import os
import sys
import time

import torch
from accelerate import Accelerator
from accelerate.utils import FullyShardedDataParallelPlugin, set_seed


def emit(record):
    """One line in one write, so that lines of processes sharing a stdout never run together."""
    sys.stdout.flush()
    os.write(sys.stdout.fileno(), (json.dumps(record, sort_keys=True) + "\n").encode())


def describe(value):
    """A plugin field as JSON: enums by name, callables and classes by name, the rest as str."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple, set)):
        return [describe(v) for v in value]
    if hasattr(value, "name") and type(value).__module__.startswith("torch"):
        return value.name
    if callable(value) and hasattr(value, "__name__"):
        return value.__name__
    return type(value).__name__ + ":" + str(value)


def state_record(accelerator):
    state = accelerator.state
    record = {
        "distributed_type": str(state.distributed_type),
        "num_processes": state.num_processes,
        "mixed_precision": str(state.mixed_precision),
        "backend": state.backend,
        "device": str(state.device),
    }
    fsdp = getattr(state, "fsdp_plugin", None)
    if fsdp is None and os.environ.get("ACCELERATE_USE_FSDP", "false").lower() == "true":
        # Without CUDA the state keeps no FSDP plugin (distributed_type is NO or MULTI_CPU), but
        # Accelerator() built one from the launcher's FSDP_* variables first: build it the same way.
        fsdp = FullyShardedDataParallelPlugin()
        record["fsdp_plugin_from"] = "env"
    if fsdp is not None:
        record["fsdp_plugin"] = {
            name: describe(getattr(fsdp, name, None))
            for name in ["fsdp_version", "sharding_strategy", "reshard_after_forward", "cpu_offload",
                         "auto_wrap_policy", "transformer_cls_names_to_wrap", "min_num_params",
                         "state_dict_type", "use_orig_params", "sync_module_states", "forward_prefetch",
                         "backward_prefetch", "activation_checkpointing", "cpu_ram_efficient_loading"]
        }
    deepspeed = getattr(state, "deepspeed_plugin", None)
    if deepspeed is not None:
        record["deepspeed_plugin"] = {
            name: describe(getattr(deepspeed, name, None))
            for name in ["zero_stage", "gradient_accumulation_steps", "gradient_clipping",
                         "offload_optimizer_device", "offload_param_device", "zero3_init_flag",
                         "zero3_save_16bit_model"]
        }
    return record


# What a launcher hands the script: compared between the two launchers (the test leaves out the
# ones that may differ, such as the port).
ENV_PREFIXES = ("ACCELERATE_", "FSDP_", "TORCHELASTIC_", "KMP_")
ENV_NAMES = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "ROLE_RANK", "ROLE_NAME",
             "GROUP_WORLD_SIZE", "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "OMP_NUM_THREADS",
             "CUDA_VISIBLE_DEVICES", "TORCH_NCCL_ASYNC_ERROR_HANDLING", "PYTHONPATH"]


def launch_env():
    return {k: v for k, v in sorted(os.environ.items()) if k in ENV_NAMES or k.startswith(ENV_PREFIXES)}


def wait_for_checkpoint(directory, step, timeout_s=30):
    """Until rank 0 has marked the checkpoint of `step` complete, so that a rank that dies next
    leaves it behind whatever the launcher stops first."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with open(os.path.join(directory, "latest")) as f:
                if int(f.read()) >= step:
                    return
        except (OSError, ValueError):
            pass
        time.sleep(0.01)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--save")
    parser.add_argument("--resume")
    parser.add_argument("--die-at-step", type=int)
    parser.add_argument("--die-rank", type=int, default=1)
    parser.add_argument("--exit-early-rank", type=int)
    parser.add_argument("--exit-early-at", choices=["start", "barrier"], default="barrier")
    parser.add_argument("--print-state", action="store_true")
    parser.add_argument("--print-env", action="store_true")
    parser.add_argument("--no-train", action="store_true")
    parser.add_argument("--marker")
    args = parser.parse_args()

    if args.exit_early_rank == int(os.environ.get("RANK", "0")) and args.exit_early_at == "start":
        emit({"launched_as": args.exit_early_rank, "event": "exit_early"})
        return 0

    set_seed(1234)
    accelerator = Accelerator()
    rank = accelerator.process_index
    # --die-rank and --exit-early-rank pick processes by the launcher's rank.
    launched_as = int(os.environ.get("RANK", "0"))
    restarts = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))

    def say(**fields):
        emit({"rank": rank, "launched_as": launched_as, **fields})

    say(event="start", restart_count=restarts, world_size=accelerator.num_processes, pid=os.getpid(),
        threads=torch.get_num_threads(), python=sys.executable)
    if args.print_env:
        say(env=launch_env())
    if args.print_state:
        say(state=state_record(accelerator))
    if args.no_train:
        return 0

    if args.exit_early_rank is not None:
        if launched_as == args.exit_early_rank:
            say(event="exit_early")
            return 0
        say(event="waiting")
        accelerator.wait_for_everyone()  # the rank that left never arrives
        say(event="released")
        return 0

    # The data come from their own generator; the weights from the seed set above.
    generator = torch.Generator().manual_seed(0)
    inputs = torch.randn(64, 8, generator=generator)
    targets = inputs @ torch.randn(8, 1, generator=generator) + 0.1 * torch.randn(64, 1, generator=generator)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(inputs, targets), batch_size=4)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)

    first = 0
    latest = os.path.join(args.resume, "latest") if args.resume else None
    if latest and os.path.exists(latest):
        with open(latest) as f:
            done = int(f.read())
        accelerator.load_state(os.path.join(args.resume, f"step-{done}"))
        first = done + 1
        say(event="loaded", step=done, restart_count=restarts)

    # One pass over the data at most: the first `first` batches were trained on before.
    batches = accelerator.skip_first_batches(loader, first) if first else loader
    for step, (x, y) in enumerate(batches, start=first):
        if step >= args.steps:
            break
        if args.die_at_step == step and args.die_rank == launched_as and restarts == 0:
            if args.save and step > 0:
                wait_for_checkpoint(args.save, step - 1)
            say(event="dying", step=step)
            os._exit(7)
        loss = torch.nn.functional.mse_loss(model(x), y)
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        say(step=step, loss=loss.item())
        if args.save:
            accelerator.save_state(os.path.join(args.save, f"step-{step}"))
            accelerator.wait_for_everyone()
            if accelerator.is_main_process:
                with open(os.path.join(args.save, "latest.tmp"), "w") as f:
                    f.write(str(step))
                os.replace(os.path.join(args.save, "latest.tmp"), os.path.join(args.save, "latest"))

    accelerator.wait_for_everyone()
    accelerator.end_training()
    say(event="done")
    return 0

if __name__ == "__main__":
    sys.exit(main())
