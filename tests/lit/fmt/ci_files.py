"""Checks the CI integration files at the repository root against the accelc they name:
.pre-commit-hooks.yaml (the pre-commit framework's hook list) and action.yml (a composite
GitHub Action). Each hook's entry is run as pre-commit would run it, on a formatted and on an
unformatted copy of a spec; the action's check step is run as a shell script.

usage: ci_files.py REPOSITORY_ROOT ACCELC SCRATCH_DIR
"""
import os
import shutil
import subprocess
import sys

import yaml


def run(command, **kwargs):
    return subprocess.run(command, capture_output=True, text=True, **kwargs)


def main():
    root, accelc, scratch = sys.argv[1:4]
    bin_dir = os.path.dirname(os.path.abspath(accelc))
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"])

    hooks = {hook["id"]: hook for hook in yaml.safe_load(open(os.path.join(root, ".pre-commit-hooks.yaml")))}
    assert sorted(hooks) == ["accelc-check", "accelc-fmt"], sorted(hooks)
    for hook in hooks.values():
        assert hook["language"] == "system", hook
        assert hook["files"] == r"\.accel$", hook
        assert hook["entry"].split()[0] == "accelc", hook
    spec = os.path.join(scratch, "job.accel")
    shutil.copy(os.path.join(root, "specs", "quickstart.accel"), spec)
    # pre-commit runs `entry` with the staged file names appended.
    check = run(hooks["accelc-check"]["entry"].split() + [spec], env=env)
    print(f"accelc-check on a good spec: exit {check.returncode}")
    with open(spec, "a") as f:
        f.write("job extra { train { steps = 0; log_every = 1 } }\n")
    check = run(hooks["accelc-check"]["entry"].split() + [spec], env=env)
    print(f"accelc-check on a bad spec: exit {check.returncode}")
    before = open(spec).read()
    fmt = run(hooks["accelc-fmt"]["entry"].split() + [spec], env=env)
    changed = open(spec).read() != before
    print(f"accelc-fmt on an unformatted spec: exit {fmt.returncode}, file changed: {changed}")

    action = yaml.safe_load(open(os.path.join(root, "action.yml")))
    assert action["runs"]["using"] == "composite", action["runs"]
    steps = action["runs"]["steps"]
    uploads = [s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload-sarif@")]
    assert len(uploads) == 1 and uploads[0]["with"]["sarif_file"] == "${{ inputs.sarif-file }}", uploads
    check_step = next(s for s in steps if s.get("id") == "check")
    output = os.path.join(scratch, "github_output")
    sarif = os.path.join(scratch, "out.sarif")
    step_env = dict(env, ACCELC="accelc", ACCELC_ARGS="--werror", ACCELC_INPUTS=spec, SARIF_FILE=sarif,
                    GITHUB_OUTPUT=output)
    step = run(["bash", "-c", check_step["run"]], env=step_env)
    print(f"action check step: exit {step.returncode}, {open(output).read().strip()}")
    report = open(sarif).read()
    print("sarif:", "2.1.0" in report and '"ruleId"' in report)


if __name__ == "__main__":
    main()
