#include "runtime/train/evaluation.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

namespace accel::rt::train {
namespace {

// The label Hugging Face's losses ignore: padding, and positions without a label.
constexpr int64_t kIgnoreIndex = -100;

// A batch's per-token predictions beside its labels, int64 [B, T, 2], when forward returned
// logits [B, T, V] and the batch has an integer `labels` column [B, T] (token classification);
// undefined otherwise. Every rank decides alike: the model and the columns are the same.
at::Tensor TokenPredictions(const ModelOutputs& outputs, const data::Columns& batch) {
  const at::Tensor& logits = outputs.logits;
  if (!logits.defined() || logits.dim() != 3) return {};
  for (const data::Column& column : batch) {
    const at::Tensor& labels = column.values;
    if (column.name != "labels" || labels.dim() != 2 || !at::isIntegralType(labels.scalar_type(), false) ||
        labels.size(0) != logits.size(0) || labels.size(1) != logits.size(1)) {
      continue;
    }
    return at::stack({logits.argmax(-1).to(at::kLong), labels.to(logits.device(), at::kLong)}, 2).contiguous();
  }
  return {};
}

// `tokens` [B, T, 2] padded along dim 1 to `length` with kIgnoreIndex, before its values when
// `pad_first` (as pad_across_processes pads).
at::Tensor PadTokens(const at::Tensor& tokens, int64_t length, bool pad_first) {
  int64_t missing = length - tokens.size(1);
  return at::constant_pad_nd(tokens, {0, 0, pad_first ? missing : 0, pad_first ? 0 : missing}, kIgnoreIndex);
}

// The share of labelled positions (label not kIgnoreIndex) of the first `samples` gathered rows
// whose prediction is the label; -1 when no position is labelled.
double TokenAccuracy(const std::vector<at::Tensor>& gathered, int64_t samples, bool pad_first) {
  int64_t longest = 0;
  for (const at::Tensor& tokens : gathered) longest = std::max(longest, tokens.size(1));
  std::vector<at::Tensor> padded;
  // Batches differ in length too: the same padding lines them up for one concatenation.
  for (const at::Tensor& tokens : gathered) padded.push_back(PadTokens(tokens, longest, pad_first));
  at::Tensor all = at::cat(padded).narrow(0, 0, samples);
  at::Tensor predictions = all.select(2, 0);
  at::Tensor labels = all.select(2, 1);
  at::Tensor labelled = labels.ne(kIgnoreIndex);
  int64_t total = labelled.sum().item<int64_t>();
  if (total == 0) return -1;
  return static_cast<double>(predictions.eq(labels).logical_and(labelled).sum().item<int64_t>()) /
         static_cast<double>(total);
}

}  // namespace

llvm::Expected<EvalResult> Evaluate(Trainer& trainer, data::DataLoader& loader, int64_t samples,
                                    distributed::DataOps& ops) {
  if (llvm::Error error = loader.Restore(0, 0)) return error;
  std::vector<at::Tensor> gathered;
  bool classes = false;
  std::vector<std::string> metrics;
  std::vector<at::Tensor> token_batches;
  const bool pad_first = loader.dataset().padding.side == data::PadSide::kLeft;
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
      if (at::Tensor tokens = TokenPredictions(outputs, batch.columns); tokens.defined()) {
        // Each rank padded its batch to its own longest row: pad to the longest across ranks
        // first, as Accelerate's token-classification example calls pad_across_processes
        // before gather_for_metrics.
        distributed::Value padded =
            ops.PadAcrossProcesses(distributed::Value::Tensor(tokens), 1, kIgnoreIndex, pad_first);
        token_batches.push_back(ops.Gather(padded).tensor());
      }
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
  if (!token_batches.empty()) {
    double accuracy = TokenAccuracy(token_batches, samples, pad_first);
    if (accuracy >= 0) result.metrics.emplace_back("token_accuracy", accuracy);
  }
  return result;
}

}  // namespace accel::rt::train
