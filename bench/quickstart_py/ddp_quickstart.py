"""The anchor: the quickstart as a plain PyTorch DDP script under torchrun, with nothing of
Accelerate (init_process_group on Gloo, DistributedSampler, DDP, all_reduce for the logged
loss). Trains quickstart_job.STEPS steps unless stopped first."""
import os
from datetime import timedelta

import torch
import torch.distributed as dist

import quickstart_job as job


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=job.TIMEOUT_S))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(job.SEED)
    data = job.dataset()
    sampler = torch.utils.data.distributed.DistributedSampler(data, world, rank, shuffle=True, seed=job.SEED)
    loader = torch.utils.data.DataLoader(data, batch_size=job.BATCH_SIZE, sampler=sampler)
    model = torch.nn.parallel.DistributedDataParallel(job.model())
    optimizer = job.optimizer(model.parameters())
    step, epoch = 0, 0
    while step < job.STEPS:
        sampler.set_epoch(epoch)
        epoch += 1
        for features, targets in loader:
            step += 1
            loss = torch.nn.functional.mse_loss(model(features), targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if job.is_reported(step):
                mean = loss.detach().clone()
                dist.all_reduce(mean)
                if rank == 0:
                    job.marker(step, mean.item() / world)
            if step == job.STEPS:
                break
    dist.destroy_process_group()


if __name__ == "__main__":
    assert "LOCAL_RANK" in os.environ, "start this under torchrun (bench/first_step.py does)"
    main()
