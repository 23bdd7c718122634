#!/usr/bin/env python3
"""The baseline of bench/gpu/transformer_throughput.accel: the same Transformer (each feature a
token: value x a learned vector plus a learned position, post-norm encoder layers without
dropout, the mean over tokens, a Linear head), the same batch, optimizer and bf16 autocast, in
PyTorch eager, as a user's own loop writes it. Batches are built on the host and moved each
step, as accelrun's loader does; the loss is read back each step, as accelrun reads it.

Prints one JSON line: tokens per second over every step (the first included, as accelrun's
wall_seconds includes it), the step count, and the FLOPs of one training step (3x the forward
pass's matrix products), from which scripts/gpu-check.sh computes MFU for both sides.

Usage: transformer_eager.py [--steps N] [--device cuda]
"""
import argparse
import json
import time

import torch
from torch import nn

# The spec's sizes (bench/gpu/transformer_throughput.accel).
TOKENS, D_MODEL, HEADS, LAYERS, FEEDFORWARD, OUTPUTS, BATCH, LR = 128, 512, 8, 6, 2048, 1, 64, 3e-4


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.value = nn.Linear(1, D_MODEL)
        self.position = nn.Parameter(torch.randn(TOKENS, 1, D_MODEL) * 0.02)
        layer = nn.TransformerEncoderLayer(D_MODEL, HEADS, FEEDFORWARD, dropout=0.0)
        self.encoder = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
        self.head = nn.Linear(D_MODEL, OUTPUTS)

    def forward(self, features):
        tokens = self.value(features.t().unsqueeze(-1)) + self.position  # [tokens, batch, d_model]
        return self.head(self.encoder(tokens).mean(0))


def step_flops(batch=BATCH, tokens=TOKENS, d=D_MODEL, layers=LAYERS, ff=FEEDFORWARD, outputs=OUTPUTS):
    """FLOPs of one training step: forward matrix products x 3 (backward is twice forward)."""
    per_layer = 2 * batch * tokens * d * 3 * d  # q, k, v projections
    per_layer += 2 * 2 * batch * tokens * tokens * d  # scores and the weighted sum of values
    per_layer += 2 * batch * tokens * d * d  # output projection
    per_layer += 2 * 2 * batch * tokens * d * ff  # feed-forward
    forward = layers * per_layer + 2 * batch * tokens * d + 2 * batch * d * outputs
    return 3 * forward


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    torch.manual_seed(42)
    device = torch.device(args.device)
    model = Model().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR)
    generator = torch.Generator().manual_seed(7)
    features = torch.randn(16384, TOKENS, generator=generator)
    targets = torch.randn(16384, OUTPUTS, generator=generator)
    start = time.perf_counter()
    for step in range(args.steps):
        rows = slice((step * BATCH) % 16384, (step * BATCH) % 16384 + BATCH)
        x, y = features[rows].to(device), targets[rows].to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            out = model(x)
        loss = nn.functional.mse_loss(out.float(), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        loss.item()
    if device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    print(json.dumps({"tokens_per_second": args.steps * BATCH * TOKENS / seconds, "steps": args.steps,
                      "seconds": seconds, "step_flops": step_flops()}))


if __name__ == "__main__":
    main()
