#!/usr/bin/env python3
"""Writes each fenced code block of a Markdown file (except shell blocks) to OUT/example_N.accel.

Usage: extract_examples.py MARKDOWN OUT. Fails when the file has no code block at all.
"""
import re
import sys


def main():
    markdown, out = sys.argv[1], sys.argv[2]
    blocks = re.findall(r"```(\w*)\n(.*?)```", open(markdown, encoding="utf-8").read(), re.S)
    count = 0
    for language, body in blocks:
        if language in ("sh", "bash", "json", "text"):
            continue
        count += 1
        with open(f"{out}/example_{count}.accel", "w", encoding="utf-8") as f:
            f.write(body)
    if count == 0:
        sys.exit(f"no code blocks in {markdown}")
    print(f"{count} examples")


if __name__ == "__main__":
    main()
