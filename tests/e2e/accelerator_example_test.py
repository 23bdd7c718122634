#!/usr/bin/env python3
"""The Accelerator as a user meets it: install Accel's `accelerator` component to a fresh
prefix, build examples/custom_loop against it with find_package(Accel), run it under
`accelrun --program` on 2 processes, and check that its own loop ends with the built-in
executor's weights for the same plan within 1e-6.

The plan uses plain SGD, 2 accumulation micro-batches and clipping, so a gradient that is
scaled wrongly (loss not divided by the accumulation steps, averaged over the wrong ranks,
reduced before the cycle ends) moves the weights by far more than the tolerance. Its
checkpoints (every 20 steps) must match the built-in's, and the custom loop resumed from the
built-in's step-20 checkpoint must end with the same weights.

Usage: accelerator_example_test.py CMAKE ACCEL_BUILD_DIR ACCELRUN EXAMPLE_DIR WORKDIR
"""
import json
import os
import shutil
import sys

from e2e_support import max_abs_difference, rank_digests, read_safetensors, run

TOLERANCE = 1e-6


def build_example(cmake, accel_build, example, workdir):
    prefix = os.path.join(workdir, "prefix")
    run([cmake, "--install", accel_build, "--prefix", prefix, "--component", "accelerator"])
    for must in ["include/accel/accelerator.h", "lib/cmake/Accel/AccelConfig.cmake"]:
        assert os.path.exists(os.path.join(prefix, must)), f"the install lacks {must}"
    build = os.path.join(workdir, "example-build")
    configure = [cmake, "-S", example, "-B", build, "-G", "Ninja", f"-DCMAKE_PREFIX_PATH={prefix}"]
    if shutil.which("ccache"):
        configure.append("-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
    if shutil.which("ld.lld"):
        configure.append("-DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld")
    run(configure, timeout=600)
    run([cmake, "--build", build], timeout=900)
    return os.path.join(build, "custom_loop")


def train(accelrun, spec, out, program=None, resume=None):
    """Runs in `out`; `--output-dir` moves the spec's checkpoints with it, to `out`/checkpoints."""
    os.makedirs(out)
    command = [accelrun, spec, "--output-dir", out]
    if program:
        command[1:1] = ["--program", program]
    if resume:
        command += ["--resume", resume]
    run(command, cwd=out, timeout=300)
    with open(os.path.join(out, "metrics.json")) as f:
        return read_safetensors(os.path.join(out, "model.safetensors")), json.load(f)


def checkpoint(out, number):
    return os.path.join(out, "checkpoints", f"checkpoint_{number}")


def main():
    cmake, accel_build, accelrun, example, workdir = sys.argv[1:6]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    program = build_example(cmake, accel_build, example, workdir)
    spec = os.path.join(example, "custom_loop.accel")

    builtin_out = os.path.join(workdir, "builtin")
    builtin, builtin_metrics = train(accelrun, spec, builtin_out)
    custom_out = os.path.join(workdir, "custom")
    custom, custom_metrics = train(accelrun, spec, custom_out, program=program)

    worst = max_abs_difference(builtin, custom)
    print(f"custom loop vs built-in executor: max |difference| {worst:.3g}")
    assert worst <= TOLERANCE, f"the custom loop's weights differ from the built-in's by {worst:.3g}"
    digests = rank_digests(custom_out, 2)
    assert digests[0] == digests[1], f"the ranks ended with different weights: {digests}"
    assert custom_metrics["steps"] == builtin_metrics["steps"] == 40
    for key in ["first_loss", "final_loss"]:
        assert abs(custom_metrics[key] - builtin_metrics[key]) <= 1e-5, (key, custom_metrics, builtin_metrics)
    assert custom_metrics["final_loss"] < custom_metrics["first_loss"], custom_metrics

    # SaveState: the custom loop's checkpoints (steps 20 and 40) hold the built-in's state.
    for number in [0, 1]:
        for name in ["model.safetensors", "optimizer.safetensors"]:
            a = read_safetensors(os.path.join(checkpoint(builtin_out, number), name))
            b = read_safetensors(os.path.join(checkpoint(custom_out, number), name))
            assert max_abs_difference(a, b) <= TOLERANCE, (number, name)
    # --resume: the custom loop continues the built-in's step-20 checkpoint (weights, RNG, data
    # position, schedule) and ends where the uninterrupted run ended.
    resumed, resumed_metrics = train(accelrun, spec, os.path.join(workdir, "resumed"), program=program,
                                     resume=checkpoint(builtin_out, 0))
    worst = max_abs_difference(builtin, resumed)
    print(f"custom loop resumed at step 20 vs built-in executor: max |difference| {worst:.3g}")
    assert worst <= TOLERANCE, f"the resumed custom loop's weights differ from the built-in's by {worst:.3g}"
    assert resumed_metrics["steps"] == 40

    # What the loop cannot honour is refused on every rank, saying why, before any step.
    with open(spec) as f:
        text = f.read()
    for name, change, message in [
        ("bf16", ("seed = 42", "seed = 42\n    mixed_precision = bf16"),
         "the Accelerator does not apply `train.mixed_precision` to a user's loop"),
        ("adamw", ("SGD { lr = 0.05 }", "AdamW { lr = 0.05 }"),
         "the plan's optimizer is `adamw`, Prepare got `sgd`"),
        ("zero2", ("distributed_type = MULTI_CPU",
                   "distributed_type = DEEPSPEED\n    use_cpu = true\n    deepspeed_config { zero_stage = 2 }"),
         "the Accelerator does not apply `train.sharding.stage > 0 (ZeRO or FSDP)` to a user's loop"),
    ]:
        assert change[0] in text, change
        variant = os.path.join(workdir, f"{name}.accel")
        with open(variant, "w") as f:
            f.write(text.replace(change[0], change[1], 1))
        out = os.path.join(workdir, name)
        os.makedirs(out)
        refused = run([accelrun, "--program", program, variant, "--output-dir", out], cwd=out, check=False)
        assert refused.returncode == 1 and message in refused.stderr, (name, refused.stderr)
        assert not os.path.exists(os.path.join(out, "model.safetensors")), name

    # A program that is not there is a usage error that names it, before anything starts.
    missing = run([accelrun, "--program", os.path.join(workdir, "nope"), spec, "--output-dir",
                   os.path.join(workdir, "missing")], cwd=workdir, check=False)
    assert missing.returncode == 2 and "nope is missing or not executable" in missing.stderr, missing.stderr
    print("ok")


if __name__ == "__main__":
    main()
