"""specs/quickstart.accel in PyTorch terms, shared by the two Python sides of bench/first_step.py:
the model, the data and the optimizer that the spec names, built as a user's script builds them.

The data is drawn as the runtime's SyntheticRegression draws it (features, weights, noise from
one generator seeded 7); the values need not match Accel's bit for bit, only the shapes and
amounts. The marker line is what the driver waits for on every side: rank 0 prints it after
the first optimizer step and the loss averaged over the ranks, as accelrun's first `step 1`
line comes after both.
"""
import torch

SEED, DATA_SEED = 42, 7
SAMPLES, FEATURES, HIDDEN, OUTPUTS, NOISE = 2048, 16, 64, 1, 0.01
BATCH_SIZE, LR, WEIGHT_DECAY, STEPS, LOG_EVERY = 32, 0.003, 0.0, 200, 20
TIMEOUT_S = 60


def dataset():
    generator = torch.Generator().manual_seed(DATA_SEED)
    features = torch.randn(SAMPLES, FEATURES, generator=generator)
    weights = torch.randn(FEATURES, OUTPUTS, generator=generator) / FEATURES**0.5
    targets = features @ weights + NOISE * torch.randn(SAMPLES, OUTPUTS, generator=generator)
    return torch.utils.data.TensorDataset(features, targets)


def model():
    return torch.nn.Sequential(torch.nn.Linear(FEATURES, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, HIDDEN),
                               torch.nn.ReLU(), torch.nn.Linear(HIDDEN, OUTPUTS))


def optimizer(parameters):
    return torch.optim.AdamW(parameters, lr=LR, weight_decay=WEIGHT_DECAY)


def is_reported(step):
    return step == 1 or step % LOG_EVERY == 0 or step == STEPS


def marker(step, mean_loss):
    """The line the driver times: `step N loss X`, printed by rank 0 only."""
    print(f"step {step} loss {mean_loss:.6f}", flush=True)
