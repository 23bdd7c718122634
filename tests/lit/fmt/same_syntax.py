"""Checks that `accelc fmt` changes layout only: for each file that parses, the syntax tree of its
formatted text (`accelc dump-ast`, positions left out) equals the original's, and formatting the
formatted text again changes nothing. Files with syntax errors are skipped and counted.

usage: same_syntax.py ACCELC FILE...
"""
import os
import re
import subprocess
import sys
import tempfile

POSITION = re.compile(r" @\d+:\d+$", re.MULTILINE)


def tree(accelc, path):
    run = subprocess.run([accelc, "dump-ast", path], capture_output=True)
    return POSITION.sub("", run.stdout.decode(errors="replace")) if run.returncode == 0 else None


def fmt(accelc, text):
    run = subprocess.run([accelc, "fmt", "-"], input=text, capture_output=True)
    if run.returncode != 0:
        raise SystemExit(f"accelc fmt failed on stdin: {run.stderr.decode(errors='replace')}")
    return run.stdout


def main():
    accelc, files = sys.argv[1], sys.argv[2:]
    checked = changed = skipped = 0
    failures = []
    with tempfile.TemporaryDirectory() as scratch:
        formatted_path = os.path.join(scratch, "formatted.accel")
        for path in files:
            before = tree(accelc, path)
            if before is None:
                skipped += 1
                continue
            with open(path, "rb") as f:
                original = f.read()
            formatted = fmt(accelc, original)
            with open(formatted_path, "wb") as f:
                f.write(formatted)
            checked += 1
            changed += formatted != original
            if tree(accelc, formatted_path) != before:
                failures.append(f"{path}: the formatted text has another syntax tree")
            if fmt(accelc, formatted) != formatted:
                failures.append(f"{path}: formatting the formatted text changes it again")
    for failure in failures:
        print(failure)
    print(f"{checked} files: {changed} reformatted, {len(failures)} problems; {skipped} with syntax errors skipped")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
