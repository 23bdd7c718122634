"""Fails when user-facing text names a work item (an issue or task number after `#`).

Scans what users and the next engineer read: compiler/ and runtime/ (messages, help,
explanations, READMEs, comments), stdlib/ (doc comments become the reference and rule messages),
docs/, the tests' and benchmarks' sources, scripts/ and editors/ (npm's node_modules aside). A `#N` that continues a reference to a
document (`catalog §9 #17`, `catalog surprise #12`, `perf-baselines.md #6`) is not a work item;
CSS colours (`#1f2328`) do not match. Usage: no_work_items.py ROOT
"""
import os
import re
import sys

WORK_ITEM = re.compile(r"(?<![\w&])#(\d+)\b")
DOCUMENT_REFERENCE = re.compile(r"(§\d+|surprise|\.md)\s*$")


def main(root):
    found = []
    for top in ("compiler", "runtime", "stdlib", "docs", "tests", "bench", "scripts", "editors"):
        for folder, folders, files in os.walk(os.path.join(root, top)):
            # Installed packages, and this test's own fixtures, are not ours to word.
            folders[:] = [f for f in folders if f not in ("node_modules", "Output")]
            for name in sorted(files):
                if name.startswith("no_work_items."):
                    continue  # this check's own sample of a work item
                path = os.path.join(folder, name)
                try:
                    with open(path, encoding="utf-8") as f:
                        text = f.read()
                except UnicodeDecodeError:
                    continue
                for match in WORK_ITEM.finditer(text):
                    if DOCUMENT_REFERENCE.search(text[max(0, match.start() - 40):match.start()]):
                        continue
                    line = text.count("\n", 0, match.start()) + 1
                    found.append(f"{os.path.relpath(path, root)}:{line}: names work item #{match.group(1)}")
    for line in found:
        print(line)
    print(f"{len(found)} work item references")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
