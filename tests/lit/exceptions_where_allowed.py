"""Fails on a `throw` outside the places the error policy allows (docs/adr/0003-errors.md), and
on a row of the policy's table that names no file that throws. The table's first column holds
the places, each a backticked path: a file, or a folder ending in `/`.

Usage: exceptions_where_allowed.py ROOT
"""
import os
import re
import sys

# A new exception; a bare `throw;` passes on the one being handled and raises nothing new.
THROW = re.compile(r"\bthrow\b(?!\s*;)")
COMMENT = re.compile(r"//.*$")
STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
PATH = re.compile(r"`([^`]+)`")


def allowed_places(root):
    with open(os.path.join(root, "docs", "adr", "0003-errors.md"), encoding="utf-8") as f:
        rows = [line for line in f if line.startswith("| `")]
    return [path for row in rows for path in PATH.findall(row.split("|")[1])]


def throwing_files(root):
    found = {}
    for top in ("compiler", "runtime"):
        for folder, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith((".cpp", ".h")):
                    continue
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as f:
                    for number, line in enumerate(f, 1):
                        code = COMMENT.sub("", STRING.sub('""', line))
                        if THROW.search(code):
                            found.setdefault(os.path.relpath(path, root), number)
    return found


def main(root):
    places = allowed_places(root)
    found = throwing_files(root)
    covered = lambda path, place: path == place or (place.endswith("/") and path.startswith(place))
    failures = 0
    for path, line in sorted(found.items()):
        if not any(covered(path, place) for place in places):
            print(f"{path}:{line}: throws, outside the places docs/adr/0003-errors.md allows")
            failures += 1
    for place in places:
        if not any(covered(path, place) for path in found):
            print(f"docs/adr/0003-errors.md: `{place}` throws nothing now: remove it from the table")
            failures += 1
    print(f"{len(found)} files throw, in {len(places)} allowed places; {failures} problems")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
