#!/usr/bin/env python3
"""Writes a text file's bytes as a flat uint16 token file, the format of nanoGPT's train.bin
that accelrun's TokenStream dataset reads: one token per byte, ids 0-255.

Usage: tokenize_bytes.py TEXT_FILE OUTPUT
"""
import sys

import numpy


def main():
    source, output = sys.argv[1], sys.argv[2]
    with open(source, "rb") as f:
        ids = numpy.frombuffer(f.read(), dtype=numpy.uint8).astype(numpy.uint16)
    ids.tofile(output)
    print(f"{output}: {len(ids)} tokens from {source}")


if __name__ == "__main__":
    main()
