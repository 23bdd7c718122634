#include "runtime/train/evaluation.h"

#include <ATen/ATen.h>

#include <cmath>

namespace accel::rt::train {

llvm::Expected<EvalResult> Evaluate(Trainer& trainer, data::DataLoader& loader, int64_t samples,
                                    distributed::DataOps& ops) {
  if (llvm::Error error = loader.Restore(0, 0)) return error;
  std::vector<at::Tensor> gathered;
  bool classes = false;
  std::vector<std::string> metrics;
  for (int64_t i = 0; i < loader.batches_per_epoch(); ++i) {
    data::Batch batch = loader.Next();
    if (!batch.columns.empty()) {
      ModelOutputs outputs = trainer.Evaluate(batch.columns);
      std::vector<at::Tensor> values{outputs.loss.detach()};
      metrics.clear();
      for (const auto& [name, value] : outputs.metrics) {
        metrics.push_back(name);
        values.push_back(value);
      }
      // [loss, metric...] once per sample of the batch.
      at::Tensor rows = at::stack(values).unsqueeze(0).expand({batch.size(), -1}).contiguous();
      gathered.push_back(ops.Gather(distributed::Value::Tensor(rows)).tensor());
      continue;
    }
    Evaluation local = trainer.Evaluate(batch.features, batch.targets);
    classes = local.correct.defined();
    // One gather per batch carries both columns: [loss, correct] per sample.
    at::Tensor both =
        at::stack({local.losses, classes ? local.correct : at::zeros_like(local.losses)}, 1).contiguous();
    gathered.push_back(ops.Gather(distributed::Value::Tensor(both)).tensor());
  }
  at::Tensor all = at::cat(gathered).narrow(0, 0, samples).to(at::kDouble);
  EvalResult result;
  result.loss = all.select(1, 0).mean().item<double>();
  if (loader.dataset().columns.empty()) {
    if (classes) result.accuracy = all.select(1, 1).mean().item<double>();
    return result;
  }
  result.perplexity = std::exp(result.loss);
  for (size_t m = 0; m < metrics.size(); ++m) {
    result.metrics.emplace_back(metrics[m], all.select(1, static_cast<int64_t>(m) + 1).mean().item<double>());
  }
  return result;
}

}  // namespace accel::rt::train
