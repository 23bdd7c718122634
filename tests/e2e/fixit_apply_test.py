#!/usr/bin/env python3
"""Every machine-applicable fix `accelc check` offers, applied and checked again.

Over every spec, config and DeepSpeed JSON of the test corpus (specs/, examples/, tests/lit,
tests/corpus), `accelc check --format sarif` lists its fixes ("help: replace with ..."): the ones
an editor applies with one click (LSP quick fixes) and CI bots apply as suggestions. Each fix is
applied to a copy of its file, alone, and the copy is checked again. It passes when the
diagnostic that offered it is gone and no compile error appears that the file did not have: a fix
that trades one error for another (`optimizer.lr` written into a block where `optimizer` still has
to be chosen, a key that is set already, a JSON key without its quotes) fails.

Usage: fixit_apply_test.py ACCELC ROOT WORKDIR
"""
import json
import os
import re
import shutil
import subprocess
import sys

ACCELC, ROOT, WORKDIR = sys.argv[1:4]
TREES = ["specs", "examples", os.path.join("tests", "lit"), os.path.join("tests", "corpus")]
SUFFIXES = (".accel", ".yaml", ".yml", ".json")


def check(paths, cwd):
    result = subprocess.run([ACCELC, "check", "--format", "sarif", "--max-diagnostics", "0", *paths],
                            cwd=cwd, capture_output=True, text=True, timeout=600)
    if result.returncode not in (0, 1):
        sys.exit(f"accelc check exited {result.returncode} on {paths[:3]}...:\n{result.stderr[-2000:]}")
    return json.loads(result.stdout)["runs"][0]["results"]


def where(result):
    region = result["locations"][0]["physicalLocation"]["region"]
    uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    return uri, region["startLine"], region["startColumn"]


# What "does not compile" means: a syntax error (A1xxx), a name or structure error (A2xxx), or a
# type or value error (A3xxx). A rule the fix lets run (a setting that now takes effect and breaks
# a rule, `eval_every` without held-out samples) is the fix working, and may add its finding.
COMPILE_ERROR = re.compile(r"^A[123][0-9]{3}$")


def compile_errors(results):
    return {(r["ruleId"], where(r)[1]) for r in results
            if r["level"] == "error" and r.get("locations") and COMPILE_ERROR.match(r["ruleId"])}


def apply(text, replacement):
    region = replacement["deletedRegion"]
    lines = text.split("\n")
    line = lines[region["startLine"] - 1]
    assert region["startLine"] == region["endLine"], "a fix over several lines"
    # Columns are 1-based bytes; the corpus files a fix touches are ASCII up to the fix.
    start, end = region["startColumn"] - 1, region["endColumn"] - 1
    lines[region["startLine"] - 1] = line[:start] + replacement["insertedContent"]["text"] + line[end:]
    return "\n".join(lines)


def main():
    tree = os.path.join(WORKDIR, "tree")
    shutil.rmtree(WORKDIR, ignore_errors=True)
    for part in TREES:
        shutil.copytree(os.path.join(ROOT, part), os.path.join(tree, part), symlinks=True)
    files = sorted(os.path.relpath(os.path.join(d, f), tree)
                   for part in TREES for d, _, names in os.walk(os.path.join(tree, part))
                   for f in names if f.endswith(SUFFIXES))
    by_file = {}
    for result in check(files, tree):
        if result.get("locations"):
            by_file.setdefault(where(result)[0], []).append(result)
    offered = [(path, r) for path, results in by_file.items() for r in results if r.get("fixes")]
    failures = []
    for path, result in offered:
        full = os.path.join(tree, path)
        with open(full) as f:
            original = f.read()
        fixed = original
        for change in result["fixes"][0]["artifactChanges"]:
            for replacement in change["replacements"]:
                fixed = apply(fixed, replacement)
        with open(full, "w") as f:
            f.write(fixed)
        try:
            after = check([path], tree)
        finally:
            with open(full, "w") as f:
                f.write(original)
        fix = result["fixes"][0]["description"]["text"]
        line = where(result)[1]
        still = [r for r in after if r.get("locations") and r["ruleId"] == result["ruleId"]
                 and where(r)[1:] == where(result)[1:]]
        new = compile_errors(after) - compile_errors(by_file[path])
        if still or new:
            failures.append(f"{path}:{line}: [{result['ruleId']}] {fix}: "
                            + ("the diagnostic remains; " if still else "")
                            + (f"new errors {sorted(new)}" if new else ""))
    print(f"{len(offered)} fixes offered over {len(files)} files; {len(offered) - len(failures)} fix what they "
          f"say without a new error")
    if not offered:
        sys.exit("no fix was offered: the corpus or the SARIF output changed")
    if failures:
        sys.exit("fixes that do not compile:\n  " + "\n  ".join(failures))


if __name__ == "__main__":
    main()
