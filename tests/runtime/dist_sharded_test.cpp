// The collectives of sharded data parallelism over Gloo, on 2 and 4 ranks (threads of this
// process on loopback): reduce-scatter, its asynchronous form, the asynchronous all-gather,
// scatter and gather, and subgroups for hybrid sharding.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <chrono>
#include <functional>
#include <future>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/distributed/collectives.h"
#include "tests/support/gloo_ranks.h"

namespace accel::rt::distributed {
namespace {

using Group = std::unique_ptr<Collectives>;

// Rank r's input: element i is (i + 1) × (r + 1)². Every rank weighs differently (1, 4, 9, 16),
// so a rank left out or counted twice changes every sum, and every element differs, so a wrong
// chunk changes the result too.
at::Tensor RankInput(int rank, int64_t numel, at::ScalarType dtype) {
  return ((at::arange(numel, at::kDouble) + 1) * ((rank + 1) * (rank + 1))).to(dtype);
}

// Chunk `rank` of the sum of every rank's RankInput: (rank × chunk + j + 1) × Σ (r + 1)².
at::Tensor ExpectedSumChunk(int rank, int world, int64_t chunk, at::ScalarType dtype) {
  double weights = 0;
  for (int r = 0; r < world; ++r) weights += (r + 1) * (r + 1);
  return ((at::arange(chunk, at::kDouble) + rank * chunk + 1) * weights).to(dtype);
}

void ExpectReduceScatterSums(int world, ShardedPath path = ShardedPath::kComposed) {
  RunGlooRanks(world, [world](int rank, Group& group) {
    for (at::ScalarType dtype : {at::kFloat, at::kDouble, at::kHalf, at::kInt}) {
      const int64_t chunk = 5;
      at::Tensor output = at::full({chunk}, -1, dtype);
      group->ReduceScatter(RankInput(rank, chunk * world, dtype), output, ReduceOp::kSum);
      EXPECT_EQ(output.scalar_type(), dtype);
      EXPECT_TRUE(at::equal(output, ExpectedSumChunk(rank, world, chunk, dtype)))
          << c10::toString(dtype) << " on rank " << rank << ": " << output;
    }
  }, 10000, path);
}

TEST(ReduceScatter, EachRankGetsTheSumOfItsChunkOnTwoRanks) { ExpectReduceScatterSums(2); }

TEST(ReduceScatter, EachRankGetsTheSumOfItsChunkOnFourRanks) { ExpectReduceScatterSums(4); }

// A 2-D input is taken as its flat elements; the output keeps its own shape.
TEST(ReduceScatter, TakesTheInputAsFlatElements) {
  RunGlooRanks(2, [](int rank, Group& group) {
    at::Tensor output = at::empty({2, 3}, at::kFloat);
    group->ReduceScatter(RankInput(rank, 12, at::kFloat).view({4, 3}), output, ReduceOp::kSum);
    EXPECT_TRUE(at::equal(output, ExpectedSumChunk(rank, 2, 6, at::kFloat).view({2, 3})));
  });
}

TEST(ReduceScatter, MaxAndMinPickAcrossRanks) {
  RunGlooRanks(4, [](int rank, Group& group) {
    // Odd ranks negative: the maximum comes from rank 2, the minimum from rank 3.
    auto input = [](int r) { return RankInput(r, 8, at::kFloat) * (r % 2 == 0 ? 1 : -1); };
    at::Tensor max = at::empty({2});
    at::Tensor min = at::empty({2});
    group->ReduceScatter(input(rank), max, ReduceOp::kMax);
    group->ReduceScatter(input(rank), min, ReduceOp::kMin);
    EXPECT_TRUE(at::equal(max, input(2).narrow(0, 2 * rank, 2))) << max;
    EXPECT_TRUE(at::equal(min, input(3).narrow(0, 2 * rank, 2))) << min;
  });
}

// float16 chunks are summed in float32 and rounded once: 2048 + 1 + 1 + 1 is 2051, which rounds
// to 2052; summed in float16, each + 1 would round back to 2048.
TEST(ReduceScatter, SumsHalfPrecisionInFloat32) {
  RunGlooRanks(4, [](int rank, Group& group) {
    at::Tensor input = at::full({4}, rank == 0 ? 2048.0 : 1.0, at::kHalf);
    at::Tensor output = at::empty({1}, at::kHalf);
    group->ReduceScatter(input, output, ReduceOp::kSum);
    EXPECT_EQ(output.item<float>(), 2052.0f);
  });
}

TEST(ReduceScatter, RefusesAnInputThatIsNotWorldSizeChunksOfTheOutput) {
  RunGlooRanks(2, [](int, Group& group) {
    at::Tensor output = at::empty({3});
    EXPECT_THROW(group->ReduceScatter(at::ones({5}), output, ReduceOp::kSum), std::invalid_argument);
    at::Tensor doubles = at::empty({3}, at::kDouble);
    EXPECT_THROW(group->ReduceScatter(at::ones({6}), doubles, ReduceOp::kSum), std::invalid_argument);
  });
}

// NCCL's path (the back end's own reduce-scatter and all-gather into one buffer), run on Gloo,
// which has both.
TEST(ReduceScatter, TheBackEndsOwnReduceScatterGivesTheSameSums) {
  ExpectReduceScatterSums(2, ShardedPath::kNative);
  ExpectReduceScatterSums(4, ShardedPath::kNative);
}

// Both asynchronous operations in flight at once, waited for in the other order: each result is
// there once its own Wait returns; on either path.
void ExpectAsyncReduceScatterAndAllGatherOverlap(ShardedPath path) {
  RunGlooRanks(4, [](int rank, Group& group) {
    at::Tensor input = RankInput(rank, 4 * 3, at::kFloat);
    at::Tensor reduced = at::empty({3});
    std::unique_ptr<PendingWork> reduce = group->ReduceScatterAsync(input, reduced, ReduceOp::kSum);
    at::Tensor mine = at::full({2}, 10.0f * rank + 1);
    at::Tensor gathered = at::empty({8});
    std::unique_ptr<PendingWork> gather = group->AllGatherAsync(mine, gathered);
    gather->Wait();
    reduce->Wait();
    EXPECT_TRUE(at::equal(reduced, ExpectedSumChunk(rank, 4, 3, at::kFloat))) << reduced;
    EXPECT_TRUE(at::equal(gathered, at::tensor(std::vector<float>{1, 1, 11, 11, 21, 21, 31, 31})))
        << gathered;
  }, 10000, path);
}

TEST(ReduceScatter, AsyncReduceScatterAndAllGatherOverlap) {
  ExpectAsyncReduceScatterAndAllGatherOverlap(ShardedPath::kComposed);
}

TEST(ReduceScatter, AsyncReduceScatterAndAllGatherOverlapOnTheBackEndsOwn) {
  ExpectAsyncReduceScatterAndAllGatherOverlap(ShardedPath::kNative);
}

// Rank 0 of 2 calls `collective` after rank 1 has left: it must throw a CollectiveError
// containing `message` well within the test's bound, not hang.
void ExpectFailsOnceThePeerLeft(const std::function<void(Group&)>& collective, const std::string& message) {
  int port = launch::PickFreePort();
  std::promise<void> rank0_connected;
  std::promise<void> rank1_gone;
  auto rank1 = std::async(std::launch::async, [&] {
    Group group = ConnectGloo(LoopbackOptions(1, 2, port, 2000));
    rank0_connected.get_future().wait();  // leaving earlier would fail rank 0's connect
    group.reset();
    rank1_gone.set_value();
  });
  Group group;
  try {
    group = ConnectGloo(LoopbackOptions(0, 2, port, 2000));
  } catch (...) {
    rank0_connected.set_value();
    throw;
  }
  rank0_connected.set_value();
  rank1_gone.get_future().wait();
  rank1.get();
  auto started = std::chrono::steady_clock::now();
  try {
    collective(group);
    FAIL() << "the collective completed without rank 1";
  } catch (const CollectiveError& error) {
    EXPECT_NE(std::string(error.what()).find(message), std::string::npos) << error.what();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), 10.0);
}

TEST(ReduceScatter, PeerThatLeavesMakesItFailInsteadOfHanging) {
  ExpectFailsOnceThePeerLeft(
      [](Group& group) {
        at::Tensor output = at::empty({4});
        group->ReduceScatter(at::ones({8}), output, ReduceOp::kSum);
      },
      "reduce_scatter failed on rank 0 of 2 (timeout 2000 ms)");
}

// Chunk r of the root's is element i = 100 r + i: a rank that got another's chunk, or a part of
// two, reads different numbers.
std::vector<at::Tensor> NumberedChunks(int world, int64_t numel) {
  std::vector<at::Tensor> chunks;
  for (int r = 0; r < world; ++r) chunks.push_back(at::arange(numel, at::kFloat) + 100.0f * r);
  return chunks;
}

void ExpectScatterDeliversEachRanksChunk(int world, int root) {
  RunGlooRanks(world, [&](int rank, Group& group) {
    at::Tensor output = at::full({5}, -1.0f);
    group->Scatter(rank == root ? NumberedChunks(world, 5) : std::vector<at::Tensor>{}, output, root);
    EXPECT_TRUE(at::equal(output, NumberedChunks(world, 5)[rank])) << "rank " << rank << ": " << output;
  });
}

TEST(Scatter, EachRankGetsItsChunkFromTheRootOnTwoRanks) { ExpectScatterDeliversEachRanksChunk(2, 0); }

TEST(Scatter, EachRankGetsItsChunkFromTheRootOnFourRanks) { ExpectScatterDeliversEachRanksChunk(4, 2); }

// A back end without a scatter or gather of its own: Collectives' defaults.
class WithoutScatter final : public Collectives {
 public:
  explicit WithoutScatter(Collectives& inner) : inner_(inner) {}
  int rank() const override { return inner_.rank(); }
  int world_size() const override { return inner_.world_size(); }
  void AllReduce(std::vector<at::Tensor>& tensors, ReduceOp op) override { inner_.AllReduce(tensors, op); }
  void Broadcast(std::vector<at::Tensor>& tensors, int root) override { inner_.Broadcast(tensors, root); }
  void AllGather(const at::Tensor& input, at::Tensor& output) override { inner_.AllGather(input, output); }
  void Barrier() override { inner_.Barrier(); }

 private:
  Collectives& inner_;
};

TEST(Scatter, TheDefaultGivesEachRankItsChunkToo) {
  RunGlooRanks(4, [](int rank, Group& group) {
    WithoutScatter plain(*group);
    at::Tensor output = at::full({3}, -1.0f);
    plain.Scatter(rank == 1 ? NumberedChunks(4, 3) : std::vector<at::Tensor>{}, output, 1);
    EXPECT_TRUE(at::equal(output, NumberedChunks(4, 3)[rank])) << "rank " << rank << ": " << output;
  });
}

TEST(Scatter, RefusesChunksThatDoNotFitBeforeSendingAnything) {
  RunGlooRanks(2, [](int rank, Group& group) {
    at::Tensor output = at::empty({4});
    if (rank == 0) {
      EXPECT_THROW(group->Scatter(NumberedChunks(1, 4), output, 0), std::invalid_argument);
      EXPECT_THROW(group->Scatter(NumberedChunks(2, 5), output, 0), std::invalid_argument);
    } else {
      EXPECT_THROW(group->Scatter(NumberedChunks(2, 4), output, 0), std::invalid_argument);
    }
  });
}

// Gather: the root receives rank r's NumberedChunks(world, n)[r] at slot r, in order.
void ExpectGatherDeliversEveryChunkToTheRoot(int world, int root, bool through_default) {
  RunGlooRanks(world, [&](int rank, Group& group) {
    WithoutScatter plain(*group);
    Collectives& collectives = through_default ? static_cast<Collectives&>(plain) : *group;
    at::Tensor output = rank == root ? at::full({world * 3}, -1.0f) : at::Tensor();
    collectives.Gather(NumberedChunks(world, 3)[rank], output, root);
    if (rank == root) {
      EXPECT_TRUE(at::equal(output, at::cat(NumberedChunks(world, 3)))) << output;
    }
  });
}

TEST(Gather, TheRootGetsEveryRanksInputInRankOrderOnTwoRanks) {
  ExpectGatherDeliversEveryChunkToTheRoot(2, 0, false);
}

TEST(Gather, TheRootGetsEveryRanksInputInRankOrderOnFourRanks) {
  ExpectGatherDeliversEveryChunkToTheRoot(4, 3, false);
}

TEST(Gather, TheDefaultGivesTheRootTheSame) { ExpectGatherDeliversEveryChunkToTheRoot(4, 1, true); }

TEST(Gather, RefusesAnOutputThatDoesNotFitBeforeSendingAnything) {
  RunGlooRanks(2, [](int rank, Group& group) {
    at::Tensor input = at::ones({3});
    if (rank == 0) {
      at::Tensor small = at::empty({5});
      EXPECT_THROW(group->Gather(input, small, 0), std::invalid_argument);
      at::Tensor none;
      EXPECT_THROW(group->Gather(input, none, 0), std::invalid_argument);
    } else {
      at::Tensor output = at::empty({6});
      EXPECT_THROW(group->Gather(input, output, 0), std::invalid_argument);
    }
  });
}

TEST(Gather, RootThatLeavesMakesItFailInsteadOfHanging) {
  ExpectFailsOnceThePeerLeft(
      [](Group& group) {
        at::Tensor none;
        group->Gather(at::ones({4}), none, 1);
      },
      "gather failed on rank 0 of 2 (timeout 2000 ms)");
}

TEST(Scatter, RootThatLeavesMakesItFailInsteadOfHanging) {
  ExpectFailsOnceThePeerLeft(
      [](Group& group) {
        at::Tensor output = at::empty({4});
        group->Scatter({}, output, 1);
      },
      "scatter failed on rank 0 of 2 (timeout 2000 ms)");
}

// Hybrid sharding on 4 ranks: shard groups {0, 1} and {2, 3}, then replicate groups {0, 2} and
// {1, 3}, formed in that order on every rank. The world group is gone before the subgroups are
// used: they hold what they need themselves.
TEST(NewGroup, ShardAndReplicateGroupsReduceWithinThemselves) {
  RunGlooRanks(4, [](int rank, Group& world) {
    Group shard = world->NewGroup(rank < 2 ? std::vector<int>{0, 1} : std::vector<int>{2, 3});
    Group replicate = world->NewGroup(rank % 2 == 0 ? std::vector<int>{0, 2} : std::vector<int>{1, 3});
    world.reset();
    EXPECT_EQ(shard->rank(), rank % 2);
    EXPECT_EQ(shard->world_size(), 2);
    EXPECT_EQ(replicate->rank(), rank / 2);
    EXPECT_EQ(replicate->world_size(), 2);

    std::vector<at::Tensor> sums = {at::full({2}, rank + 1.0f)};
    shard->AllReduceSum(sums);
    EXPECT_TRUE(at::equal(sums[0], at::full({2}, rank < 2 ? 1.0f + 2 : 3.0f + 4))) << sums[0];
    sums = {at::full({2}, rank + 1.0f)};
    replicate->AllReduceSum(sums);
    EXPECT_TRUE(at::equal(sums[0], at::full({2}, rank % 2 == 0 ? 1.0f + 3 : 2.0f + 4))) << sums[0];

    // Within the shard group, element i of world rank w's input is (i + 1) × (w + 1)².
    at::Tensor output = at::empty({3});
    shard->ReduceScatter(RankInput(rank, 6, at::kFloat), output, ReduceOp::kSum);
    int first = rank < 2 ? 0 : 2;
    at::Tensor expected = RankInput(first, 6, at::kFloat) + RankInput(first + 1, 6, at::kFloat);
    EXPECT_TRUE(at::equal(output, expected.narrow(0, 3 * shard->rank(), 3))) << output;
  });
}

// A member of a subgroup that leaves fails the other one's collective, and the error names the
// subgroup by the world's ranks. The other subgroup goes on.
TEST(NewGroup, ASubgroupsErrorNamesItsMembersByWorldRank) {
  RunGlooRanks(
      4,
      [](int rank, Group& world) {
        Group shard = world->NewGroup(rank < 2 ? std::vector<int>{0, 1} : std::vector<int>{2, 3});
        // Every rank is past new_group before rank 3 leaves: else a rank still forming the groups
        // over the world can see rank 3's world connections close, and fail there instead.
        world->Barrier();
        at::Tensor output = at::empty({2});
        if (rank == 3) return;  // leaves: its subgroup closes
        if (rank < 2) {
          shard->ReduceScatter(RankInput(rank, 4, at::kFloat), output, ReduceOp::kSum);
          EXPECT_TRUE(at::equal(
              output, (RankInput(0, 4, at::kFloat) + RankInput(1, 4, at::kFloat)).narrow(0, 2 * rank, 2)));
          return;
        }
        try {
          shard->ReduceScatter(RankInput(rank, 4, at::kFloat), output, ReduceOp::kSum);
          FAIL() << "the reduce-scatter completed without world rank 3";
        } catch (const CollectiveError& error) {
          EXPECT_NE(std::string(error.what())
                        .find("reduce_scatter failed on rank 0 of 2 in the group of world ranks 2, 3 "
                              "(timeout 2000 ms)"),
                    std::string::npos)
              << error.what();
        }
      },
      2000);
}

TEST(NewGroup, RefusesRanksThatAreNotAnAscendingListHoldingThisRank) {
  RunGlooRanks(2, [](int rank, Group& group) {
    EXPECT_THROW(group->NewGroup({1, 0}), std::invalid_argument);
    EXPECT_THROW(group->NewGroup({0, 2}), std::invalid_argument);
    EXPECT_THROW(group->NewGroup({1 - rank}), std::invalid_argument);
    EXPECT_THROW(group->NewGroup({}), std::invalid_argument);
  });
}

TEST(NewGroup, ASingleProcessFormsOnlyItself) {
  Group single = MakeSingleProcess();
  EXPECT_EQ(single->NewGroup({0})->world_size(), 1);
  EXPECT_THROW(single->NewGroup({0, 1}), std::logic_error);
}

}  // namespace
}  // namespace accel::rt::distributed
