#include "compiler/lower/data.h"

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "compiler/lower/plan_records.h"

namespace accel::lower {
namespace {

using sema::Value;

// The columns the padding fields name are columns the dataset reads, when the spec lists them
// (without a list every file's column is read, and the runtime checks the names).
template <typename NamedColumnsView>
void CheckPaddingColumns(Lowering& lowering, const NamedColumnsView& data) {
  const Value& columns = data.columns();
  if (columns.items.empty()) return;
  std::vector<std::string> read;
  std::string listed;
  for (const Value& column : columns.items) {
    read.push_back(column.text);
    listed += (listed.empty() ? "`" : ", `") + column.text + "`";
  }
  auto check = [&](const Value& where, const std::string& field, const std::string& name) {
    if (std::find(read.begin(), read.end(), name) != read.end()) return;
    lowering.Emit(diag::Kind::PaddingColumnNotRead, where, field, name,
                  fmt::format("; it reads {}: add `{}` there, or correct the name", listed, name));
  };
  const Value& pad_values = data.pad_values();
  for (size_t i = 0; i < pad_values.keys.size(); ++i) check(pad_values.items[i], "`pad_values`", pad_values.keys[i]);
  if (std::optional<std::string> mask = data.attention_mask_from())
    check(data.attention_mask_from_value(), "`attention_mask_from`", *mask);
  for (const Value& name : data.same_length().items) check(name, "`same_length`", name.text);
}

// Whether the dataset yields named columns (for a model that computes its own loss) rather
// than one features tensor and one targets tensor.
bool NamedColumns(const plan::Dataset& dataset) {
  return std::visit(plan::Overloaded{[](const plan::SyntheticRegression&) { return false; },
                                     [](const plan::CsvDataset&) { return false; },
                                     [](const plan::NpyDataset&) { return false; },
                                     [](const plan::SafetensorsDataset&) { return false; },
                                     [](const plan::SafetensorsColumns&) { return true; },
                                     [](const plan::NpyColumns&) { return true; },
                                     [](const plan::TokenStream&) { return true; }},
                    dataset);
}

// The dataset's plan record, and what the spec asks of it that the runtime cannot read.
plan::Dataset LowerDataset(Lowering& lowering, const spec::Job& job, bool class_labels) {
  auto data = job.data();
  plan::Dataset dataset = FromSpecUnion<plan::Dataset>(data);
  std::visit(plan::Overloaded{
                 [&](const spec::SyntheticRegression&) {
                   // The targets are as wide as the model's output.
                   std::get<plan::SyntheticRegression>(dataset).outputs =
                       std::visit(plan::Overloaded{[](const spec::MLP& mlp) { return mlp.outputs(); },
                                                   [](const spec::Transformer& t) { return t.outputs(); },
                                                   [](const spec::TorchScript&) { return int64_t{1}; }},
                                  job.model());
                   if (class_labels) {
                     lowering.Unsupported(
                         diag::Kind::NativeLossOnSynthetic, job.train().loss_value(),
                         "`train.loss = cross_entropy` on `SyntheticRegression`",
                         "; its targets are real numbers: use `mse`, or a dataset file with integer class labels");
                   }
                 },
                 [&](const spec::CsvDataset& csv) {
                   if (class_labels && csv.target_columns().items.size() != 1) {
                     lowering.Unsupported(diag::Kind::NativeTargetColumns, csv.target_columns_value(),
                                          "several `target_columns` with `train.loss = cross_entropy`",
                                          "; cross entropy reads one column of class indices");
                   }
                 },
                 [&](const spec::NpyColumns& columns) { CheckPaddingColumns(lowering, columns); },
                 [&](const spec::SafetensorsColumns& columns) { CheckPaddingColumns(lowering, columns); },
                 [](const spec::NpyDataset&) {},
                 [](const spec::SafetensorsDataset&) {},
                 [](const spec::TokenStream&) {},
             },
             data);
  return dataset;
}

}  // namespace

plan::BuildDataloader LowerData(Lowering& lowering) {
  spec::Job job = lowering.job();
  spec::Accelerator accelerator = job.accelerator();
  auto data = job.data();
  plan::BuildDataloader build;
  build.batch_size = std::visit([](const auto& d) { return d.batch_size(); }, data);
  build.shuffle = std::visit([](const auto& d) { return d.shuffle(); }, data);
  bool class_labels = job.train().loss() == spec::Loss::CROSS_ENTROPY;
  build.targets = class_labels ? plan::TargetKind::class_labels : plan::TargetKind::regression;
  build.dataset = LowerDataset(lowering, job, class_labels);
  // Only the dataset files have a last incomplete batch to drop.
  std::visit(plan::Overloaded{[](const spec::SyntheticRegression&) {},
                              [&](const auto& file) { build.drop_last = file.drop_last(); }},
             data);
  spec::DataLoaderConfiguration config = accelerator.dataloader_config();
  build.split_batches = config.split_batches();
  // Unset: true exactly for iterable datasets; every Accel dataset is map-style.
  build.dispatch_batches = config.dispatch_batches().value_or(false);
  build.even_batches = config.even_batches();
  build.use_seedable_sampler = config.use_seedable_sampler();
  // SeedableRandomSampler without data_seed uses torch.initial_seed(): the job seed after
  // set_seed, else torch's fixed default seed of the CPU generator. data_seed means nothing
  // without the seedable sampler (DL-006): the synchronized RandomSampler follows the job seed.
  constexpr int64_t kTorchDefaultSeed = 67280421310721;
  std::optional<int64_t> data_seed = config.data_seed();
  build.data_seed = data_seed && build.use_seedable_sampler ? *data_seed
                                                             : accelerator.seed().value_or(kTorchDefaultSeed);
  build.non_blocking = config.non_blocking();
  build.use_stateful_dataloader = config.use_stateful_dataloader();
  int64_t processes = std::max<int64_t>(job.compute().num_processes(), 1);
  if (!build.even_batches && !build.drop_last && processes > 1 && !build.dispatch_batches) {
    // Ranks would then run different numbers of steps per epoch; Accelerate needs
    // join_uneven_inputs for that, which a plan cannot express.
    lowering.Unsupported(
        diag::Kind::NativeUnevenBatches, config.even_batches_value(),
        "`accelerator.dataloader_config.even_batches = false` on several processes",
        "; ranks would draw different numbers of batches and their collectives would no longer pair "
        "up: keep `even_batches = true` (or set `drop_last`)" +
            std::string(kExport));
  }
  return build;
}

void FitModelToData(Lowering& lowering, const plan::Dataset& dataset, plan::TrainLoop& loop) {
  spec::Job job = lowering.job();
  auto model = job.model();
  const Value& model_value = std::visit([](const auto& m) -> const Value& { return m.value(); }, model);
  spec::Train train = job.train();
  const Value& loss = train.loss_value();
  const std::string& data_type = std::visit([](const auto& d) -> const std::string& { return d.value().type_name; },
                                            job.data());
  if (NamedColumns(dataset)) {
    if (!std::holds_alternative<spec::TorchScript>(model)) {
      lowering.Unsupported(diag::Kind::NativeNamedColumnsModel, model_value,
                           fmt::format("`model = {}` on the named columns of `{}`", model_value.type_name, data_type),
                           "; built-in models read one float matrix of features: bring a TorchScript model "
                           "whose `forward` takes the columns by name and returns its loss");
    }
    if (SetInSpec(loss) && train.loss() != spec::Loss::MODEL) {
      lowering.Unsupported(
          diag::Kind::NativeModelLoss, loss,
          fmt::format("`train.loss = {}` on the named columns of `{}`", sema::views::SerializedValue(train.loss()),
                      data_type),
          "; a model reading named columns returns its own loss: drop `train.loss` or set `model`");
    }
    loop.loss = plan::Loss::model;
    return;
  }
  if (loop.loss == plan::Loss::model) {
    lowering.Unsupported(diag::Kind::NativeModelLoss, loss, fmt::format("`train.loss = model` on `{}`", data_type),
                         "; a model returns its own loss only from named columns (`SafetensorsColumns`, "
                         "`NpyColumns`, `TokenStream`): choose `mse` or `cross_entropy`");
  }
  const auto* torchscript = std::get_if<spec::TorchScript>(&model);
  if (torchscript != nullptr && !torchscript->inputs().keys.empty()) {
    lowering.Unsupported(diag::Kind::NativeModelInputs, torchscript->inputs(),
                         fmt::format("`model.inputs` on `{}`", data_type),
                         "; it maps named columns to `forward` inputs, and this dataset feeds `forward` one "
                         "tensor of features: drop it, or read the data as named columns");
  }
}

}  // namespace accel::lower
