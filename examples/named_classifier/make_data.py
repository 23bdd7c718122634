#!/usr/bin/env python3
"""Writes the named columns of named_classifier.accel as a directory of .npy files:
`input_ids` (int64 [N, 16], sequences of 4 to 16 tokens padded to 16), `attention_mask`
(uint8 [N, 16], 1 on real tokens) and `label` (int64 [N]): 1 when token 7 occurs among the
sequence's real tokens. Padding uses token 7 too, so a model that ignores the mask cannot learn
the task. Needs python3-numpy (Debian).
Usage: make_data.py [OUTPUT_DIR] [--samples N]
"""
import argparse
import os

import numpy


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("output", nargs="?", default=os.path.join(os.path.dirname(__file__), "data"))
    parser.add_argument("--samples", type=int, default=1024)
    args = parser.parse_args()
    rng = numpy.random.default_rng(0)
    length, pad = 16, 7
    ids = numpy.full((args.samples, length), pad, dtype=numpy.int64)
    mask = numpy.zeros((args.samples, length), dtype=numpy.uint8)
    labels = numpy.zeros(args.samples, dtype=numpy.int64)
    for i in range(args.samples):
        n = int(rng.integers(4, length + 1))
        # Half the sequences hold a 7, the rest draw from every other token.
        tokens = rng.choice([t for t in range(32) if t != pad], size=n)
        if i % 2 == 0:
            tokens[int(rng.integers(0, n))] = pad
        ids[i, :n] = tokens
        mask[i, :n] = 1
        labels[i] = int(pad in tokens)
    os.makedirs(args.output, exist_ok=True)
    for name, array in (("input_ids", ids), ("attention_mask", mask), ("label", labels)):
        numpy.save(os.path.join(args.output, name + ".npy"), array)
    print(f"{args.output}: {args.samples} samples")


if __name__ == "__main__":
    main()
