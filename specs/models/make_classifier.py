#!/usr/bin/env python3
"""Writes specs/models/classifier.pt, the TorchScript model of specs/torchscript.accel.

A small classifier (Linear -> BatchNorm1d -> ReLU -> Linear) scripted and saved from Python, as
a user would bring their own model to accelrun. The batch-norm running statistics are buffers,
which DDP (and accelrun) broadcast from rank 0 before every forward pass.
Needs the pinned torch (`.venv/bin/python`, scripts/setup.sh); the .pt file is committed so the example runs without Python.
Usage: make_classifier.py [OUTPUT]
"""
import os
import sys

import torch


class Classifier(torch.nn.Module):
    def __init__(self, features: int = 4, hidden: int = 32, classes: int = 3):
        super().__init__()
        # No bias before batch norm: it would be cancelled by the normalization (its gradient is
        # rounding noise, which Adam would turn into full-size steps).
        self.hidden = torch.nn.Linear(features, hidden, bias=False)
        self.norm = torch.nn.BatchNorm1d(hidden)
        self.head = torch.nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.norm(self.hidden(x))))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "classifier.pt")
    torch.manual_seed(1234)
    torch.jit.save(torch.jit.script(Classifier()), out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
