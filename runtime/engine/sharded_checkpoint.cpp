#include "runtime/engine/sharded_checkpoint.h"

#include <ATen/ATen.h>

#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "llvm/Support/Error.h"
#include "runtime/support/progress.h"
#include "runtime/tensor/host_bytes.h"

namespace accel::rt::train {

std::unique_ptr<RankStateSlices> EncodeRankSlices(const ShardedEngine& engine, bool with_buffers) {
  auto out = std::unique_ptr<RankStateSlices>(new RankStateSlices());
  auto add = [&](std::vector<checkpoint::TensorSlice>& to, std::string name, const at::Tensor& tensor,
                 const std::vector<int64_t>& shape, int64_t start, int64_t end) {
    progress::StillWorking();  // a save's copies to the host take long for a large model
    at::Tensor dense = tensor::HostContiguous(tensor);
    const char* dtype = SafetensorsDtype(dense.scalar_type());
    if (dtype == nullptr)
      throw std::invalid_argument(fmt::format("`{}` is {}, which checkpoints do not store", name,
                                              c10::toString(dense.scalar_type())));
    out->tensors_.push_back(dense);
    to.push_back({std::move(name), dtype, shape, static_cast<uint64_t>(start), static_cast<uint64_t>(end),
                  tensor::HostBytes(out->tensors_.back())});
  };
  std::set<std::string> held;
  std::set<std::string> keys;
  if (engine.WritesShardSlices()) {
    for (const ShardedEngine::ShardSlice& slice : engine.ExportShardSlices()) {
      held.insert(slice.name);
      add(out->slices_.model, slice.name, slice.data, slice.shape, slice.start, slice.end);
      for (const auto& [key, tensor] : slice.state) {
        keys.insert(key);
        add(out->slices_.optimizer, fmt::format("state.{}.{}", slice.name, key), tensor, slice.shape,
            slice.start, slice.end);
      }
    }
  }
  if (!with_buffers) return out;
  // Rank 0 holds the first elements of every unit, so it knows every state key; a parameter it
  // holds nothing of gets an empty slice (its shape and dtype), as does its state.
  at::Tensor none = at::empty({0}, at::kFloat);
  for (const auto& [name, parameter] : engine.NamedParameters()) {
    if (held.count(name) != 0) continue;
    std::vector<int64_t> shape = parameter.sizes().vec();
    add(out->slices_.model, name, none, shape, 0, 0);
    for (const std::string& key : keys)
      add(out->slices_.optimizer, fmt::format("state.{}.{}", name, key), none, shape, 0, 0);
  }
  for (const auto& [name, buffer] : engine.NamedBuffers())
    add(out->slices_.model, name, buffer, buffer.sizes().vec(), 0, buffer.numel());
  return out;
}

void ImportShardedResume(const ShardedResume& resume, ShardedEngine& engine) {
  const checkpoint::ShardedStateReader& reader = *resume.reader;
  engine.ImportShardSlices(
      [&](const std::string& name, const std::string& key, int64_t start, int64_t end) {
        checkpoint::ShardedKind kind =
            key.empty() ? checkpoint::ShardedKind::kModel : checkpoint::ShardedKind::kOptimizer;
        std::string tensor = key.empty() ? name : fmt::format("state.{}.{}", name, key);
        at::Tensor out = at::empty({end - start}, at::kFloat);
        // RestoreTrainingState checked every name, dtype and shape: a failure here is a bug.
        if (llvm::Error error =
                reader.CopyRange(kind, tensor, static_cast<uint64_t>(start), static_cast<uint64_t>(end),
                                 {static_cast<char*>(out.data_ptr()), out.nbytes()})) {
          throw std::logic_error(llvm::toString(std::move(error)));
        }
        return out;
      },
      resume.state_keys, resume.counters);
}

}  // namespace accel::rt::train
