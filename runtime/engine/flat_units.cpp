#include "runtime/engine/flat_units.h"

namespace accel::rt::train {

std::vector<FlatUnit> WrapUnits(const ModuleNode& root, const std::vector<int64_t>& numels,
                                const plan::Sharding& sharding) {
  std::vector<FlatUnit> units;
  for (WrappedModule& wrapped : WrapModules(root, numels, sharding))
    units.push_back(FlatUnit{std::move(wrapped.module), std::move(wrapped.parameters), {}, 0, 0, 0});
  return units;
}

void LayOut(std::vector<FlatUnit>& units, const std::vector<int64_t>& numels, int shard_count) {
  for (FlatUnit& unit : units) {
    unit.offsets.clear();
    unit.numel = 0;
    for (size_t index : unit.parameters) {
      unit.offsets.push_back(unit.numel);
      unit.numel += numels[index];
    }
    unit.shard_size = (unit.numel + shard_count - 1) / shard_count;
    unit.padded = unit.shard_size * shard_count;
  }
}

}  // namespace accel::rt::train
