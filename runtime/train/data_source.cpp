#include "runtime/train/data_source.h"

#include <fmt/format.h>

namespace accel::rt::train {

llvm::Expected<data::DataLoader> OpenDataLoader(const plan::BuildDataloader& spec, int rank, int world_size) {
  data::TargetKind kind =
      spec.targets == "class_labels" ? data::TargetKind::kClassLabels : data::TargetKind::kRegression;
  llvm::Expected<data::Dataset> dataset = [&]() -> llvm::Expected<data::Dataset> {
    if (spec.kind == "synthetic_regression")
      return data::GenerateSyntheticRegression(spec.samples, spec.features, spec.outputs, spec.noise,
                                               spec.seed);
    if (spec.kind == "csv") return data::LoadCsv(spec.path, spec.feature_columns, spec.target_columns, kind);
    if (spec.kind == "npy") return data::LoadNpy(spec.path, spec.targets_path, kind);
    if (spec.kind == "safetensors")
      return data::LoadSafetensors(spec.path, spec.features_key, spec.targets_key, kind);
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "unknown dataset kind `%s`",
                                   spec.kind.c_str());
  }();
  if (!dataset) return dataset.takeError();
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
  return data::DataLoader::Create(std::move(*dataset), shard);
}

int64_t DataIdentitySeed(const plan::BuildDataloader& spec) {
  return spec.kind == "synthetic_regression" ? spec.seed : spec.data_seed;
}

}  // namespace accel::rt::train
