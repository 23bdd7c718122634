#include "runtime/train/data_source.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "runtime/checkpoint/dtype.h"
#include "runtime/checkpoint/safetensors.h"
#include "runtime/data/columns.h"

namespace accel::rt::train {
namespace {

// The dtype table's row of a token file's element type: the plan's enum strings are the
// table's names.
checkpoint::Dtype TokenDtype(plan::TokenDtype dtype) {
  for (const checkpoint::DtypeInfo& info : checkpoint::AllDtypes()) {
    if (info.name == plan::EnumName(dtype)) return info.dtype;
  }
  // plan.def names rows of dtypes.def; tests/runtime/train_named_test.cpp opens a stream of each.
  std::abort();
}

// A dataset of named columns with the padding its plan record asks for (SafetensorsColumns and
// NpyColumns share the fields).
template <typename Record>
llvm::Expected<data::Dataset> Padded(llvm::Expected<data::Dataset> dataset, const Record& record,
                                     const std::string& where) {
  if (!dataset) return dataset.takeError();
  data::Padding padding;
  for (const plan::PadValue& pad : record.pad_values) padding.values.emplace_back(pad.column, pad.value);
  padding.multiple_of = record.pad_to_multiple_of;
  padding.side =
      record.padding_side == plan::PaddingSide::left ? data::PadSide::kLeft : data::PadSide::kRight;
  padding.attention_mask_from = record.attention_mask_from;
  return data::WithPadding(std::move(*dataset), std::move(padding), record.same_length, where);
}

struct FeatureWidth {
  std::optional<int64_t> operator()(const plan::SyntheticRegression& data) const { return data.features; }
  std::optional<int64_t> operator()(const plan::CsvDataset& data) const {
    if (!data.feature_columns.empty()) return static_cast<int64_t>(data.feature_columns.size());
    std::ifstream in(data.path);
    std::string line;
    if (!std::getline(in, line) || line.size() > (1u << 20)) return std::nullopt;
    // The loader's rule: a cell between every two commas, no quoting.
    int64_t columns = 1 + std::count(line.begin(), line.end(), ',');
    int64_t features = columns - static_cast<int64_t>(data.target_columns.size());
    return features > 0 ? std::optional<int64_t>(features) : std::nullopt;
  }
  std::optional<int64_t> operator()(const plan::NpyDataset& data) const {
    llvm::Expected<std::vector<int64_t>> shape = data::ReadNpyShape(data.features_file);
    if (!shape) {
      llvm::consumeError(shape.takeError());
      return std::nullopt;
    }
    return shape->size() == 2 ? std::optional<int64_t>((*shape)[1]) : std::nullopt;
  }
  std::optional<int64_t> operator()(const plan::SafetensorsDataset& data) const {
    llvm::Expected<checkpoint::SafetensorsFile> file = checkpoint::SafetensorsFile::Read(data.path);
    if (!file) {
      llvm::consumeError(file.takeError());
      return std::nullopt;
    }
    auto tensor = file->tensors().find(data.features_key);
    if (tensor == file->tensors().end() || tensor->second.shape.size() != 2) return std::nullopt;
    return tensor->second.shape[1];
  }
  std::optional<int64_t> operator()(const plan::SafetensorsColumns&) const { return std::nullopt; }
  std::optional<int64_t> operator()(const plan::NpyColumns&) const { return std::nullopt; }
  std::optional<int64_t> operator()(const plan::TokenStream&) const { return std::nullopt; }
};

}  // namespace

std::optional<int64_t> PeekFeatureWidth(const plan::Dataset& dataset) {
  return std::visit(FeatureWidth{}, dataset);
}

llvm::Expected<DataLoaders> OpenDataLoaders(const plan::BuildDataloader& spec, int64_t eval_samples, int rank,
                                            int world_size) {
  data::TargetKind kind = spec.targets == plan::TargetKind::class_labels ? data::TargetKind::kClassLabels
                                                                         : data::TargetKind::kRegression;
  llvm::Expected<data::Dataset> dataset =
      std::visit(plan::Overloaded{[](const plan::SyntheticRegression& d) -> llvm::Expected<data::Dataset> {
                                    return data::GenerateSyntheticRegression(d.samples, d.features, d.outputs,
                                                                             d.noise, d.seed);
                                  },
                                  [&](const plan::CsvDataset& d) -> llvm::Expected<data::Dataset> {
                                    return data::LoadCsv(d.path, d.feature_columns, d.target_columns, kind);
                                  },
                                  [&](const plan::NpyDataset& d) -> llvm::Expected<data::Dataset> {
                                    return data::LoadNpy(d.features_file, d.targets_file, kind);
                                  },
                                  [&](const plan::SafetensorsDataset& d) -> llvm::Expected<data::Dataset> {
                                    return data::LoadSafetensors(d.path, d.features_key, d.targets_key, kind);
                                  },
                                  [](const plan::SafetensorsColumns& d) -> llvm::Expected<data::Dataset> {
                                    return Padded(data::LoadSafetensorsColumns(d.path, d.columns), d, d.path);
                                  },
                                  [](const plan::NpyColumns& d) -> llvm::Expected<data::Dataset> {
                                    return Padded(data::LoadNpyColumns(d.dir, d.columns), d, d.dir);
                                  },
                                  [](const plan::TokenStream& d) -> llvm::Expected<data::Dataset> {
                                    return data::LoadTokenStream(d.path, TokenDtype(d.dtype), d.block_size);
                                  }},
                 spec.dataset);
  if (!dataset) return dataset.takeError();
  int64_t rows = dataset->size();
  if (eval_samples >= rows) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "`train.eval_samples = %lld` holds out the whole dataset of %lld rows; "
                                   "leave rows to train on",
                                   static_cast<long long>(eval_samples), static_cast<long long>(rows));
  }
  data::Dataset held_out;
  if (eval_samples > 0) {
    held_out = dataset->Rows(rows - eval_samples, eval_samples);
    *dataset = dataset->Rows(0, rows - eval_samples);
  }
  data::ShardSpec shard;
  shard.batch_size = spec.batch_size;
  shard.shuffle = spec.shuffle;
  shard.drop_last = spec.drop_last;
  shard.num_processes = world_size;
  shard.process_index = rank;
  shard.split_batches = spec.split_batches;
  shard.even_batches = spec.even_batches;
  shard.dispatch_batches = spec.dispatch_batches;
  shard.use_seedable_sampler = spec.use_seedable_sampler;
  shard.seed = static_cast<uint64_t>(spec.data_seed);
  llvm::Expected<data::DataLoader> train = data::DataLoader::Create(std::move(*dataset), shard);
  if (!train) return train.takeError();
  DataLoaders loaders{std::move(*train), std::nullopt};
  if (eval_samples > 0) {
    data::ShardSpec eval = shard;
    eval.shuffle = false;
    eval.drop_last = false;
    eval.even_batches = true;  // every rank gathers the same number of equal batches
    llvm::Expected<data::DataLoader> loader = data::DataLoader::Create(std::move(held_out), eval);
    if (!loader) return loader.takeError();
    loaders.eval.emplace(std::move(*loader));
  }
  return loaders;
}

llvm::Expected<data::DataLoader> OpenDataLoader(const plan::BuildDataloader& spec, int rank, int world_size) {
  llvm::Expected<DataLoaders> loaders = OpenDataLoaders(spec, 0, rank, world_size);
  if (!loaders) return loaders.takeError();
  return std::move(loaders->train);
}

}  // namespace accel::rt::train
