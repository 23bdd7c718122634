"""Scatters comments, line breaks, blank lines, tabs and CRLFs between the tokens of each file
(a fixed seed, never inside strings or comments), then checks that `accelc fmt` formats the
result without an internal error (its own check that the layout kept every token and comment
and the syntax tree) and that formatting the result again changes nothing.

usage: perturbed.py ACCELC SEED FILE...
"""
import random
import subprocess
import sys

NOISE = [" /* c */ ", " // d\n", " /* e */\n", "\n  // f\n  ", "\n/// g\n", "\n    ", "  ", "\t", "\n\n  "]
LINE_ENDS = ["\n\n", "   \n", "\r\n"]


def perturb(text, rnd):
    out = []
    in_string = in_comment = False
    for i, c in enumerate(text):
        if c == "\n":
            in_comment = False
        if not in_string and text.startswith(("//", "/*"), i):
            in_comment = True
        if c == '"' and not in_comment and (i == 0 or text[i - 1] != "\\"):
            in_string = not in_string
        if in_comment and c == "/" and i > 0 and text[i - 1] == "*":
            out.append(c)
            in_comment = False
            continue
        if not in_string and not in_comment and c == " " and rnd.random() < 0.15:
            out.append(rnd.choice(NOISE))
        elif not in_string and not in_comment and c == "\n" and rnd.random() < 0.2:
            out.append(rnd.choice(LINE_ENDS))
        else:
            out.append(c)
    return "".join(out).encode()


def main():
    accelc, seed, files = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    rnd = random.Random(seed)
    formatted = problems = 0
    for path in files:
        text = perturb(open(path, encoding="utf-8").read(), rnd)
        first = subprocess.run([accelc, "fmt", "-"], input=text, capture_output=True)
        if b"internal error" in first.stderr:
            problems += 1
            print(f"{path}: {first.stderr.decode(errors='replace').strip()}")
        if first.returncode != 0:
            continue
        formatted += 1
        second = subprocess.run([accelc, "fmt", "-"], input=first.stdout, capture_output=True)
        if second.stdout != first.stdout:
            problems += 1
            print(f"{path}: formatting the formatted text changes it again")
    print(f"{formatted} of {len(files)} perturbed files formatted, {problems} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
