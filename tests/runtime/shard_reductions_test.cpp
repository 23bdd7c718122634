// The sharded engine's gradient reductions (runtime/engine/shard_reductions.h) over Gloo, on 2
// and 4 ranks (threads of this process): units coalesce into buckets in launch order, and
// whatever the buckets and whatever order the units become ready in, each rank gets exactly its
// shard of the sum, and stage 1 keeps each unit's whole gradient buffer.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <random>
#include <vector>

#include "runtime/engine/flat_units.h"
#include "runtime/engine/shard_groups.h"
#include "runtime/engine/shard_reductions.h"
#include "tests/support/fault_injection.h"
#include "tests/support/gloo_ranks.h"

namespace accel::rt::train {
namespace {

using distributed::RunGlooRanks;

// Units of the given parameter sizes (one parameter each), laid out for `shards` ranks.
std::vector<FlatUnit> Units(const std::vector<int64_t>& numels, int shards) {
  std::vector<FlatUnit> units;
  for (size_t i = 0; i < numels.size(); ++i) {
    FlatUnit& unit = units.emplace_back();
    unit.parameters = {i};
  }
  LayOut(units, numels, shards);
  return units;
}

// Rank r's flat gradient of unit u: every element distinct across units and ranks, so a chunk
// taken from the wrong unit, offset or rank changes the result. Padding stays zero.
at::Tensor Flat(const FlatUnit& unit, size_t u, int rank) {
  at::Tensor flat = at::zeros({unit.padded}, at::kFloat);
  flat.narrow(0, 0, unit.numel)
      .copy_((at::arange(unit.numel, at::kFloat) + 1) * static_cast<float>((rank + 1) * (rank + 1)) +
             static_cast<float>(1000 * u));
  return flat;
}

at::Tensor Sum(const FlatUnit& unit, size_t u, int world) {
  at::Tensor sum = at::zeros({unit.padded}, at::kFloat);
  for (int r = 0; r < world; ++r) sum += Flat(unit, u, r);
  return sum;
}

TEST(ShardReductions, CoalescesUnitsIntoBucketsInLaunchOrder) {
  std::unique_ptr<distributed::Collectives> world = distributed::MakeSingleProcess();
  ShardGroups groups(*world, false, 1);
  std::vector<FlatUnit> units = Units({4, 8, 4, 12}, 1);
  // Launch order 3, 2, 1, 0; at most 12 elements: 3 alone, then 2 and 1, then 0.
  ShardReductions reductions(units, groups, false, 12);
  EXPECT_EQ(reductions.buckets(), (std::vector<std::vector<size_t>>{{3}, {2, 1}, {0}}));
  // A unit larger than the bucket is a bucket of its own.
  ShardReductions small(units, groups, false, 1);
  EXPECT_EQ(small.buckets(), (std::vector<std::vector<size_t>>{{3}, {2}, {1}, {0}}));
  ShardReductions one(units, groups, false, 1000);
  EXPECT_EQ(one.buckets(), (std::vector<std::vector<size_t>>{{3, 2, 1, 0}}));
}

// Only small units coalesce: a unit of kAloneElements or more is reduced alone, whatever the
// bucket size allows.
TEST(ShardReductions, ReducesLargeUnitsAlone) {
  std::unique_ptr<distributed::Collectives> world = distributed::MakeSingleProcess();
  ShardGroups groups(*world, false, 1);
  std::vector<FlatUnit> units = Units({4, kAloneElements, 4, 4, kAloneElements - 16}, 1);
  ShardReductions reductions(units, groups, false, int64_t{1} << 40);
  EXPECT_EQ(reductions.buckets(), (std::vector<std::vector<size_t>>{{4, 3, 2}, {1}, {0}}));
}

TEST(ShardReductions, RefusesToFinishWithAUnitNotReady) {
  std::unique_ptr<distributed::Collectives> world = distributed::MakeSingleProcess();
  ShardGroups groups(*world, false, 1);
  std::vector<FlatUnit> units = Units({4, 8}, 1);
  ShardReductions reductions(units, groups, false, 1000);
  reductions.Begin();
  reductions.Ready(1, Flat(units[1], 1, 0));
  EXPECT_THROW(reductions.Finish(), std::logic_error);
}

// Hybrid sharding where the back end forms no subgroups (NCCL's cannot here): the world stands in
// for them, and a sum over a shard group is the group's, not the world's. The replicas hold the
// same shards, so the world's sum is the group's times the machines.
TEST(ShardGroups, WithoutSubgroupsASumOverTheShardGroupIsTheGroupsNotTheWorlds) {
  distributed::RunGlooRanks(4, [&](int rank, std::unique_ptr<distributed::Collectives>& world) {
    using distributed::Fault;
    auto refusing = std::make_unique<distributed::FaultInjectingCollectives>(
        std::move(world), std::vector<Fault>{{"new_group", 1, Fault::Action::kThrow, {}},
                                             {"new_group", 2, Fault::Action::kThrow, {}}});
    {
      ShardGroups groups(*refusing, /*hybrid=*/true, /*processes_per_machine=*/2);
      // Two machines of two: local ranks 0 and 1 hold 1.5 and 2.5 on both machines.
      double local = 1.5 + rank % 2;
      EXPECT_DOUBLE_EQ(groups.SumOverShardGroup(local * local), 1.5 * 1.5 + 2.5 * 2.5) << "rank " << rank;
    }
    world = std::move(refusing);
  });
}

// Every rank makes its units ready in its own shuffled order, twice (two backwards).
void ExpectShardsOfTheSum(int world_size, bool whole, int64_t bucket_elements) {
  // Sizes that are not multiples of the rank count: every unit is padded.
  const std::vector<int64_t> numels{7, 13, 5, 22, 3};
  RunGlooRanks(world_size, [&](int rank, std::unique_ptr<distributed::Collectives>& world) {
    ShardGroups groups(*world, false, 1);
    std::vector<FlatUnit> units = Units(numels, world_size);
    ShardReductions reductions(units, groups, whole, bucket_elements);
    std::mt19937 shuffle(static_cast<unsigned>(rank) + 11);
    for (int backward = 0; backward < 2; ++backward) {
      reductions.Begin();
      std::vector<size_t> order{0, 1, 2, 3, 4};
      std::shuffle(order.begin(), order.end(), shuffle);
      std::vector<at::Tensor> flats(units.size());
      for (size_t u : order) {
        flats[u] = Flat(units[u], u, rank);
        reductions.Ready(u, flats[u]);
      }
      std::vector<ShardReductions::Reduced> reduced = reductions.Finish();
      ASSERT_EQ(reduced.size(), units.size());
      for (size_t u = 0; u < units.size(); ++u) {
        at::Tensor sum = Sum(units[u], u, world_size);
        at::Tensor expected = sum.narrow(0, units[u].shard_size * rank, units[u].shard_size);
        EXPECT_TRUE(at::equal(reduced[u].shard, expected))
            << "unit " << u << " on rank " << rank << ": " << reduced[u].shard << " against " << expected;
        if (whole) {
          // Stage 1 holds the whole gradient buffer it was given, until the step.
          EXPECT_TRUE(reduced[u].whole.is_same(flats[u])) << "unit " << u << " on rank " << rank;
        } else {
          EXPECT_FALSE(reduced[u].whole.defined());
        }
      }
    }
  });
}

TEST(ShardReductions, ReduceScatterEachUnitAloneOnTwoRanks) { ExpectShardsOfTheSum(2, false, 1); }
TEST(ShardReductions, ReduceScatterInBucketsOnTwoRanks) { ExpectShardsOfTheSum(2, false, 40); }
TEST(ShardReductions, ReduceScatterInOneBucketOnFourRanks) { ExpectShardsOfTheSum(4, false, 1000); }
TEST(ShardReductions, ReduceScatterInBucketsOnFourRanks) { ExpectShardsOfTheSum(4, false, 30); }
TEST(ShardReductions, StageOneKeepsWholeGradientsInBucketsOnTwoRanks) { ExpectShardsOfTheSum(2, true, 40); }
TEST(ShardReductions, StageOneKeepsWholeGradientsEachAloneOnFourRanks) { ExpectShardsOfTheSum(4, true, 1); }

}  // namespace
}  // namespace accel::rt::train
