#!/usr/bin/env python3
"""Writes specs/data/blobs.csv, the data of specs/torchscript.accel: 600 samples of 4 features
around 3 class centres, with the class index in the `label` column. Standard library only;
the CSV is committed so the example runs without Python.
Usage: make_blobs.py [OUTPUT]
"""
import os
import random
import sys


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "blobs.csv")
    rng = random.Random(7)
    centres = [[rng.uniform(-3, 3) for _ in range(4)] for _ in range(3)]
    with open(out, "w") as f:
        f.write("x0,x1,x2,x3,label\n")
        for i in range(600):
            label = i % 3
            row = [c + rng.gauss(0, 1.0) for c in centres[label]]
            f.write(",".join(f"{v:.6f}" for v in row) + f",{label}\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
