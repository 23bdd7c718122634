// A training loop of one's own on Accel's Accelerator: the model, the forward pass and the loss
// are this program's; the plan (custom_loop.accel) decides the data shards, gradient
// accumulation and averaging, clipping, the learning-rate schedule and where the weights go.
// Started by `accelrun --program ./custom_loop custom_loop.accel` on every process of the plan.
#include <accel/accelerator.h>
#include <torch/torch.h>

#include <cstdio>

int main(int argc, char** argv) {
  try {
    accel::Accelerator accelerator(argc, argv);
    // The spec's MLP. Built after the Accelerator seeded the generator, one layer after the
    // other in the built-in executor's order, so both start from the same weights (the layers
    // as constructor arguments would be initialized in an unspecified order).
    torch::nn::Sequential model;
    model->push_back(torch::nn::Linear(16, 64));
    model->push_back(torch::nn::ReLU());
    model->push_back(torch::nn::Linear(64, 64));
    model->push_back(torch::nn::ReLU());
    model->push_back(torch::nn::Linear(64, 1));
    torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(accelerator.learning_rate()));
    accelerator.Prepare(*model, optimizer);

    while (accelerator.step() < accelerator.max_steps()) {
      accel::Batch batch = accelerator.NextBatch();
      torch::Tensor loss = torch::mse_loss(model->forward(batch.features), batch.targets);
      accelerator.Backward(loss);
      if (!accelerator.Step()) continue;  // inside an accumulation cycle
      if (accelerator.ShouldSaveState()) accelerator.SaveState();
      if (accelerator.step() % 10 != 0) continue;
      // The last micro-batch's loss averaged over the processes (every process takes part).
      float mean = accelerator.Reduce(loss.detach().reshape({1})).item<float>();
      if (accelerator.is_main_process())
        std::printf("step %lld loss %.6f\n", (long long)accelerator.step(), mean);
    }
    accelerator.SaveModel();
  } catch (const accel::Error& error) {
    std::fprintf(stderr, "custom_loop: error: %s\n", error.what());
    return 1;
  }
  return 0;
}
