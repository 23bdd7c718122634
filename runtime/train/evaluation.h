#ifndef ACCEL_RUNTIME_TRAIN_EVALUATION_H_
#define ACCEL_RUNTIME_TRAIN_EVALUATION_H_

#include <cstdint>

#include "llvm/Support/Error.h"
#include "runtime/data/loader.h"
#include "runtime/distributed/operations.h"
#include "runtime/model/trainer.h"

// The worker's evaluation phase over the held-out rows (train.eval_samples).
namespace accel::rt::train {

struct EvalResult {
  double loss = 0;
  double accuracy = -1;  // -1 without class labels
  // A model that computes its own loss: exp(loss), as Accelerate's language-model examples
  // report it, and the means of the 0-dim metrics it returned, by key; -1 and empty otherwise.
  double perplexity = -1;
  std::vector<std::pair<std::string, double>> metrics;
};

// Accelerate's evaluation loop with gather_for_metrics: every rank evaluates its batches of the
// held-out rows, the per-sample results are gathered batch by batch (distributed::DataOps's
// Gather, rank order within a batch as the loader deals them), and the duplicates
// even_batches appended at the end are dropped, so each of the `samples` held-out rows counts
// exactly once. A batch of named columns gives one loss (and one value per metric) for the
// whole batch; as in Accelerate's examples (`gather_for_metrics(loss.repeat(batch_size))`) it
// counts once per sample of its batch, so the mean weighs every held-out sample once. When
// forward returns `logits` [B, T, V] for a `labels` column [B, T] (token classification on
// padded batches), the per-token predictions and labels are padded across processes
// (pad_across_processes along dim 1 with -100, on the dataset's padding side), gathered, and
// give the metric `token_accuracy`: the share of positions whose label is not -100 that the
// argmax of the logits predicts, the same on any number of processes.
// Collective; every rank gets the same result.
llvm::Expected<EvalResult> Evaluate(Trainer& trainer, data::DataLoader& loader, int64_t samples,
                                    distributed::DataOps& ops);

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_TRAIN_EVALUATION_H_
