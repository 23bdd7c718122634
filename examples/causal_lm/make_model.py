#!/usr/bin/env python3
"""Writes lm.pt, the TorchScript model of causal_lm.accel: a small byte-level causal language
model that computes its own loss, as Hugging Face causal LMs do.

`forward(input_ids, targets=None)` takes the two columns accelrun's TokenStream dataset yields
(a window of byte ids and the same window shifted by one byte) and returns a dict: `logits`,
and with targets the mean cross entropy as `loss` and the next-byte accuracy as `accuracy` (a
0-dim tensor, which accelrun evaluates as `eval_accuracy`). Needs the pinned torch (`.venv/bin/python`, scripts/setup.sh).
Usage: make_model.py [OUTPUT] [--block-size N]
"""
import argparse
import os
from typing import Dict, Optional

import torch
import torch.nn.functional as F


class Block(torch.nn.Module):
    """Pre-norm self-attention with a causal mask, then a feed-forward layer."""

    def __init__(self, width: int, heads: int):
        super().__init__()
        self.attention_norm = torch.nn.LayerNorm(width)
        self.attention = torch.nn.MultiheadAttention(width, heads, batch_first=True)
        self.feed_forward_norm = torch.nn.LayerNorm(width)
        self.feed_forward = torch.nn.Sequential(
            torch.nn.Linear(width, 4 * width), torch.nn.GELU(), torch.nn.Linear(4 * width, width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        length = x.size(1)
        # Position t attends to positions <= t only; computed here rather than kept as a buffer,
        # so the saved state_dict holds weights only.
        mask = torch.triu(torch.full((length, length), float("-inf")), diagonal=1)
        h = self.attention_norm(x)
        attended, _ = self.attention(h, h, h, attn_mask=mask, need_weights=False)
        x = x + attended
        return x + self.feed_forward(self.feed_forward_norm(x))


class CausalLM(torch.nn.Module):
    def __init__(self, vocab: int = 256, block_size: int = 32, width: int = 64, heads: int = 4, layers: int = 1):
        super().__init__()
        self.tokens = torch.nn.Embedding(vocab, width)
        self.positions = torch.nn.Embedding(block_size, width)
        self.blocks = torch.nn.ModuleList([Block(width, heads) for _ in range(layers)])
        self.norm = torch.nn.LayerNorm(width)
        self.head = torch.nn.Linear(width, vocab)

    def forward(self, input_ids: torch.Tensor, targets: Optional[torch.Tensor] = None) -> Dict[str, torch.Tensor]:
        positions = torch.arange(input_ids.size(1), device=input_ids.device)
        x = self.tokens(input_ids) + self.positions(positions)
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.norm(x))
        out = {"logits": logits}
        if targets is not None:
            out["loss"] = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
            out["accuracy"] = (logits.argmax(-1) == targets).float().mean()
        return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("output", nargs="?", default=os.path.join(os.path.dirname(__file__), "lm.pt"))
    parser.add_argument("--block-size", type=int, default=32)
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.jit.save(torch.jit.script(CausalLM(block_size=args.block_size)), args.output)


if __name__ == "__main__":
    main()
