#!/usr/bin/env python3
"""Writes classifier.pt, the TorchScript model of named_classifier.accel: a bag-of-tokens
classifier that takes its batch as one dict of named tensors and computes its own loss.

`forward(batch)` reads `input_ids`, `attention_mask` and `labels` from the dict, averages the
token embeddings where the mask is 1 (padding is ignored), and returns a dict with `loss`
(cross entropy), `logits` and `accuracy` (a 0-dim metric). Needs the pinned torch (`.venv/bin/python`, scripts/setup.sh).
Usage: make_model.py [OUTPUT]
"""
import os
import sys
from typing import Dict

import torch
import torch.nn.functional as F


class BagClassifier(torch.nn.Module):
    def __init__(self, vocab: int = 32, width: int = 16, classes: int = 2):
        super().__init__()
        self.embedding = torch.nn.Embedding(vocab, width)
        self.head = torch.nn.Linear(width, classes)

    def forward(self, batch: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        mask = batch["attention_mask"].unsqueeze(-1).float()
        tokens = self.embedding(batch["input_ids"]) * mask
        pooled = tokens.sum(1) / mask.sum(1).clamp(min=1.0)
        logits = self.head(torch.tanh(pooled))
        labels = batch["labels"]
        return {
            "loss": F.cross_entropy(logits, labels),
            "logits": logits,
            "accuracy": (logits.argmax(-1) == labels).float().mean(),
        }


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "classifier.pt")
    torch.manual_seed(0)
    torch.jit.save(torch.jit.script(BagClassifier()), out)


if __name__ == "__main__":
    main()
