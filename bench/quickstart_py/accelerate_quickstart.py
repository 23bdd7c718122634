"""The quickstart as a user writes it with Accelerate: Accelerator on CPU over Gloo, prepare,
accelerator.backward, reduce for the logged loss. Started by `accelerate launch` or torchrun
(bench/first_step.py); trains quickstart_job.STEPS steps unless stopped first."""
from datetime import timedelta

import torch
from accelerate import Accelerator
from accelerate.utils import InitProcessGroupKwargs, set_seed

import quickstart_job as job


def main():
    group = InitProcessGroupKwargs(backend="gloo", timeout=timedelta(seconds=job.TIMEOUT_S))
    accelerator = Accelerator(cpu=True, mixed_precision="no", kwargs_handlers=[group])
    set_seed(job.SEED)
    loader = torch.utils.data.DataLoader(job.dataset(), batch_size=job.BATCH_SIZE, shuffle=True)
    model = job.model()
    optimizer = job.optimizer(model.parameters())
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    model.train()
    step = 0
    while step < job.STEPS:
        for features, targets in loader:
            step += 1
            loss = torch.nn.functional.mse_loss(model(features), targets)
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
            if job.is_reported(step):
                mean = accelerator.reduce(loss.detach(), "mean").item()
                if accelerator.is_main_process:
                    job.marker(step, mean)
            if step == job.STEPS:
                break
    accelerator.end_training()


if __name__ == "__main__":
    main()
