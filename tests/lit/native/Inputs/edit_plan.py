"""Edits a compiled plan as a hand would, and rehashes it as accelc would have written it (the
hash is the sha256 of the plan's text with an empty hash). Usage: edit_plan.py PLAN OLD NEW ...,
each OLD text replaced once; one that is not in the plan fails the edit."""
import hashlib
import json
import sys

path, pairs = sys.argv[1], sys.argv[2:]
with open(path) as f:
    text = f.read()
for old, new in zip(pairs[::2], pairs[1::2]):
    if old not in text:
        sys.exit(f"edit_plan: `{old}` is not in {path}")
    text = text.replace(old, new, 1)
stamp = f'"hash": "{json.loads(text)["hash"]}"'
digest = hashlib.sha256(text.replace(stamp, '"hash": ""', 1).encode()).hexdigest()
with open(path, "w") as f:
    f.write(text.replace(stamp, f'"hash": "sha256:{digest}"', 1))
