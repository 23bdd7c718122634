// The collective data operations at world sizes 1 (no backend), 2 and 4: ranks are threads of
// this process joined in a Gloo group over loopback, with short timeouts.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cstdlib>
#include <future>

#include <fmt/format.h>

#include "runtime/distributed/environment.h"
#include "runtime/distributed/operations.h"
#include "runtime/distributed/random.h"
#include "runtime/launch/launcher.h"
#include "runtime/launch/rendezvous_port.h"
#include "tests/support/fault_injection.h"
#include "tests/support/gloo_ranks.h"

namespace accel::rt::distributed {
namespace {

Value T(at::Tensor tensor) { return Value::Tensor(std::move(tensor)); }

// Runs `body(rank, ops)` on `world` threads joined into one group. World 0 means one process
// without a backend (distributed type NO).
template <typename Body>
void RunRanks(int world, Body body, int timeout_ms = 10000) {
  if (world == 0) {
    std::unique_ptr<Collectives> single = MakeSingleProcess();
    DataOps ops(*single);
    body(0, ops);
    return;
  }
  RunGlooRanks(
      world,
      [body](int rank, std::unique_ptr<Collectives>& group) {
        DataOps ops(*group);
        body(rank, ops);
      },
      timeout_ms);
}

// Runs `body(rank, ops, counted)` on `world` threads whose group counts its collectives, and
// returns each rank's result in rank order.
template <typename Body>
auto RunCountedRanks(int world, Body body) {
  using Result = decltype(body(0, std::declval<DataOps&>(), std::declval<FaultInjectingCollectives&>()));
  int port = launch::PickFreePort();
  std::vector<std::future<Result>> ranks;
  for (int rank = 0; rank < world; ++rank) {
    ranks.push_back(std::async(std::launch::async, [=] {
      FaultInjectingCollectives counted(ConnectGloo(LoopbackOptions(rank, world, port, 10000)), {});
      DataOps ops(counted);
      return body(rank, ops, counted);
    }));
  }
  std::vector<Result> results;
  for (auto& rank : ranks) results.push_back(rank.get());
  return results;
}

std::string ErrorOf(const std::function<void()>& body) {
  try {
    body();
  } catch (const std::exception& error) {
    return error.what();
  }
  return "";
}

class Ops : public testing::TestWithParam<int> {};
INSTANTIATE_TEST_SUITE_P(World, Ops, testing::Values(1, 2, 4), [](const testing::TestParamInfo<int>& info) {
  return "ranks" + std::to_string(info.param);
});
// Disagreement needs two ranks.
class MultiRank : public testing::TestWithParam<int> {};
INSTANTIATE_TEST_SUITE_P(World, MultiRank, testing::Values(2, 4),
                         [](const testing::TestParamInfo<int>& info) {
                           return "ranks" + std::to_string(info.param);
                         });

TEST_P(Ops, GatherConcatenatesEveryLeafInRankOrder) {
  int world = GetParam();
  RunRanks(world, [world](int rank, DataOps& ops) {
    Value data = Value::Dict({
        {"logits", T(at::full({2, 3}, float(rank)))},
        {"labels", T(at::full({2}, int64_t(rank)))},
        {"scalar", T(at::scalar_tensor(rank + 0.5, at::kDouble))},             // 0-dim → [1]
        {"transposed", T(at::arange(6, at::kFloat).view({2, 3}).t() + rank)},  // non-contiguous
        {"mixed", Value::Tuple({T(at::full({1}, rank, at::kBFloat16)), T(at::full({3}, rank % 2 == 1))})},
    });
    Value gathered = ops.Gather(data);
    EXPECT_EQ(Layout(gathered),
              fmt::format("{{\"logits\": float32[{0}, 3], \"labels\": int64[{0}], \"scalar\": float64[{1}], "
                          "\"transposed\": float32[{2}, 2], \"mixed\": (bfloat16[{1}], bool[{2}])}}",
                          2 * world, world, 3 * world));
    for (int r = 0; r < world; ++r) {
      EXPECT_TRUE(
          at::equal(gathered.Find("logits")->tensor().narrow(0, 2 * r, 2), at::full({2, 3}, float(r))));
      EXPECT_EQ(gathered.Find("scalar")->tensor()[r].item<double>(), r + 0.5);
      EXPECT_TRUE(at::equal(gathered.Find("transposed")->tensor().narrow(0, 3 * r, 3),
                            at::arange(6, at::kFloat).view({2, 3}).t() + r));
      EXPECT_EQ(gathered.Find("mixed")->items()[0].tensor()[r].item<float>(), float(r));
      EXPECT_EQ(gathered.Find("mixed")->items()[1].tensor()[3 * r].item<bool>(), r % 2 == 1);
    }
  });
}

TEST(Ops, GatherWithoutABackendReturnsTheInputAsIs) {
  RunRanks(0, [](int, DataOps& ops) {
    at::Tensor scalar = at::scalar_tensor(3.0);
    Value gathered = ops.Gather(T(scalar));
    EXPECT_TRUE(gathered.tensor().is_same(scalar));  // no unsqueeze of 0-dim tensors in NO mode
    EXPECT_EQ(Describe(ops.GatherObject(Value::String("x"))), "\"x\"");  // not wrapped
  });
}

TEST_P(MultiRank, MismatchedShapesAreAnErrorOnEveryRankNamingEachLayout) {
  RunRanks(GetParam(), [](int rank, DataOps& ops) {
    std::string error = ErrorOf([&] { ops.Gather(Value::List({T(at::ones({rank == 1 ? 3 : 2, 4}))})); });
    EXPECT_NE(error.find("gather: the ranks disagree"), std::string::npos) << error;
    EXPECT_NE(error.find("rank 0: gather [float32[2, 4]]"), std::string::npos) << error;
    EXPECT_NE(error.find("rank 1: gather [float32[3, 4]]"), std::string::npos) << error;
    // The group is still usable afterwards: the error was agreed, nothing was left half done.
    Value after = ops.Reduce(T(at::ones({2})), "sum");
    EXPECT_EQ(after.tensor()[0].item<float>(), float(ops.world_size()));
  });
}

// The layout check travels with the payload once a gather of that size has been seen: the
// second gather of a small tensor is one all-gather, as a raw all_gather is; a larger one falls
// back to header + data, with the right values either way.
TEST_P(Ops, RepeatedSmallGathersCarryTheLayoutCheckInTheirOwnAllGather) {
  int world = GetParam();
  auto calls = RunCountedRanks(world, [world](int rank, DataOps& ops, FaultInjectingCollectives& counted) {
    std::vector<int> calls;
    for (int64_t size : {1024, 1024, 1024, 4096, 4096}) {
      int before = counted.calls("all_gather");
      at::Tensor mine = at::arange(size, at::kFloat) + 10000.0f * static_cast<float>(rank);
      at::Tensor all = ops.Gather(T(mine)).tensor();
      calls.push_back(counted.calls("all_gather") - before);
      for (int r = 0; r < world; ++r)
        EXPECT_TRUE(all.narrow(0, r * size, size).equal(at::arange(size, at::kFloat) + 10000.0f * r)) << size;
    }
    return calls;
  });
  // First gather: header, then data. Same size again: one. Larger: header, then data; then one.
  for (const std::vector<int>& rank : calls) EXPECT_EQ(rank, (std::vector<int>{2, 1, 1, 2, 1}));
}

TEST_P(MultiRank, MismatchedShapesAfterAnInlinedGatherAreStillAnErrorOnEveryRank) {
  RunRanks(GetParam(), [](int rank, DataOps& ops) {
    ops.Gather(T(at::ones({2, 4})));  // agrees on an inline capacity of 32 bytes
    std::string error = ErrorOf([&] { ops.Gather(T(at::ones({rank == 1 ? 3 : 2, 4}))); });
    EXPECT_NE(error.find("gather: the ranks disagree"), std::string::npos) << error;
    EXPECT_NE(error.find("rank 1: gather float32[3, 4]"), std::string::npos) << error;
    Value after = ops.Gather(T(at::full({1}, rank, at::kLong)));
    EXPECT_TRUE(after.tensor().equal(at::arange(ops.world_size(), at::kLong)));
  });
}

TEST(Ops, RanksCallingDifferentOperationsAreToldSo) {
  RunRanks(2, [](int rank, DataOps& ops) {
    std::string error = ErrorOf([&] {
      if (rank == 0)
        ops.Gather(T(at::ones({2})));
      else
        ops.Reduce(T(at::ones({2})), "sum");
    });
    EXPECT_NE(error.find("rank 0: gather"), std::string::npos) << error;
    EXPECT_NE(error.find("rank 1: reduce"), std::string::npos) << error;
  });
}

TEST_P(Ops, NonTensorLeavesAreRejectedBeforeAnyCollective) {
  RunRanks(GetParam(), [](int, DataOps& ops) {
    std::string error = ErrorOf([&] { ops.Gather(Value::List({T(at::ones({1})), Value::String("id")})); });
    EXPECT_NE(error.find("gather: the leaf at [1] is a string"), std::string::npos) << error;
    error = ErrorOf([&] { ops.Reduce(Value::Dict({{"n", Value::Int(3)}})); });
    EXPECT_NE(error.find("reduce: the leaf at [\"n\"] is a int"), std::string::npos) << error;
    // Nobody waited on a collective: the next one works.
    ops.WaitForEveryone();
  });
}

TEST_P(Ops, GatherObjectFlattensListsOneLevelAndAppendsOtherObjects) {
  int world = GetParam();
  RunRanks(world, [world](int rank, DataOps& ops) {
    Value mine = rank % 2 == 0 ? Value::List({Value::Int(rank), Value::String(std::string(rank + 1, 'x'))})
                               : Value::Dict({{"rank", Value::Int(rank)}});
    Value all = ops.GatherObject(mine);
    std::string expected = "[";
    for (int r = 0; r < world; ++r) {
      if (r > 0) expected += ", ";
      expected += r % 2 == 0 ? fmt::format("{}, \"{}\"", r, std::string(r + 1, 'x'))
                             : fmt::format("{{\"rank\": {}}}", r);
    }
    EXPECT_EQ(Describe(all), expected + "]");
  });
}

TEST_P(Ops, BroadcastOverwritesEveryLeafInPlaceFromTheSource) {
  int world = GetParam();
  int source = world - 1;
  RunRanks(world, [source](int rank, DataOps& ops) {
    at::Tensor weights = at::full({3, 2}, float(rank));
    at::Tensor transposed = at::zeros({2, 3}).t();  // non-contiguous receiver
    transposed.fill_(rank);
    at::Tensor flags = at::full({4}, rank == source);
    at::Tensor half = at::full({5}, rank, at::kBFloat16);
    Value data = Value::List({T(weights), Value::Tuple({T(transposed), T(flags)}), T(half)});
    Value out = ops.Broadcast(data, source);
    EXPECT_TRUE(out.items()[0].tensor().is_same(weights));
    EXPECT_TRUE(at::equal(weights, at::full({3, 2}, float(source))));
    EXPECT_TRUE(at::equal(transposed, at::full({3, 2}, float(source))));
    EXPECT_TRUE(flags.all().item<bool>());
    EXPECT_EQ(half[4].item<float>(), float(source));
    // A single leaf takes the direct path.
    at::Tensor one = at::full({7}, rank, at::kLong);
    ops.Broadcast(T(one), 0);
    EXPECT_EQ(one.sum().item<int64_t>(), 0);
    EXPECT_NE(ErrorOf([&] { ops.Broadcast(T(one), 9); }).find("not a rank"), std::string::npos);
  });
}

TEST_P(Ops, BroadcastObjectListReplacesTheListWithTheSources) {
  RunRanks(GetParam(), [](int rank, DataOps& ops) {
    std::vector<Value> objects = {Value::Int(rank)};
    if (rank == 0)
      objects = {Value::String("config"), Value::Dict({{"lr", Value::Float(0.1)}}), T(at::ones({2}))};
    ops.BroadcastObjectList(objects, 0);
    ASSERT_EQ(objects.size(), 3u);
    EXPECT_EQ(Describe(Value::List(objects)), "[\"config\", {\"lr\": 0.1}, float32[2]]");
  });
}

TEST_P(Ops, ReduceSumsMeansAndTakesExtremes) {
  int world = GetParam();
  RunRanks(world, [world](int rank, DataOps& ops) {
    double sum_of_ranks = world * (world - 1) / 2.0;
    Value data = Value::Dict({{"f", T(at::full({3}, float(rank)))},
                              {"d", T(at::full({2}, double(rank)))},
                              {"b", T(at::full({2}, rank, at::kBFloat16))},
                              {"s", T(at::scalar_tensor(float(rank)))}});
    at::Tensor before = data.Find("f")->tensor().clone();
    Value sum = ops.Reduce(data, "sum");
    EXPECT_TRUE(at::equal(data.Find("f")->tensor(), before));  // the input is untouched
    EXPECT_EQ(sum.Find("f")->tensor()[0].item<float>(), sum_of_ranks);
    EXPECT_EQ(sum.Find("b")->tensor().scalar_type(), at::kBFloat16);
    EXPECT_EQ(sum.Find("b")->tensor()[1].item<float>(), sum_of_ranks);
    EXPECT_EQ(sum.Find("s")->tensor().dim(), 0);
    Value mean = ops.Reduce(data, "mean");
    EXPECT_DOUBLE_EQ(mean.Find("d")->tensor()[0].item<double>(), sum_of_ranks / world);
    EXPECT_EQ(ops.Reduce(data, "none").Find("f")->tensor()[2].item<float>(), sum_of_ranks);  // as Accelerate
    EXPECT_EQ(ops.Reduce(data, "max").Find("d")->tensor()[0].item<double>(), world - 1);
    EXPECT_EQ(ops.Reduce(data, "min").Find("s")->tensor().item<float>(), 0);
    EXPECT_EQ(ops.Reduce(data, "sum", 0.5).Find("f")->tensor()[0].item<float>(), sum_of_ranks / 2);
    Value ints =
        ops.Reduce(Value::List({T(at::full({2}, int64_t(rank + 1))), T(at::full({1}, rank == 0))}), "max");
    EXPECT_EQ(ints.items()[0].tensor()[0].item<int64_t>(), world);
    EXPECT_TRUE(ints.items()[1].tensor()[0].item<bool>());
  });
}

TEST_P(Ops, ReduceRejectsIntegerMeansAndUnknownReductionsOnEveryRank) {
  RunRanks(GetParam(), [](int, DataOps& ops) {
    std::string error = ErrorOf([&] {
      ops.Reduce(Value::List({T(at::ones({2})), T(at::ones({2}, at::kLong))}));
    });
    EXPECT_NE(error.find("`mean` of the Long tensor at [1]"), std::string::npos) << error;
    EXPECT_NE(ErrorOf([&] { ops.Reduce(T(at::ones({2})), "avg"); }).find("unknown reduction `avg`"),
              std::string::npos);
    ops.WaitForEveryone();
  });
}

TEST(Ops, ReduceWithoutABackendReturnsAnUnreducedCopy) {
  RunRanks(0, [](int, DataOps& ops) {
    at::Tensor input = at::full({2}, 4.0f);
    Value out = ops.Reduce(T(input), "mean", 10.0);
    EXPECT_FALSE(out.tensor().is_same(input));
    EXPECT_TRUE(at::equal(out.tensor(), input));  // no division, no scale (Accelerate's NO path)
  });
}

TEST_P(Ops, PadAcrossProcessesGrowsToTheLargestRank) {
  int world = GetParam();
  RunRanks(world, [world](int rank, DataOps& ops) {
    at::Tensor rows = at::full({rank + 1, 2}, float(rank + 1));
    at::Tensor flags = at::ones({rank + 1}, at::kBool);
    at::Tensor ids = at::ones({2, rank + 1}, at::kLong);
    at::Tensor fixed = at::ones({3});
    at::Tensor scalar = at::scalar_tensor(1.0);
    Value data = Value::List({T(rows), T(flags), T(ids), T(fixed), T(scalar)});
    Value padded = ops.PadAcrossProcesses(data, 0, -1);
    const at::Tensor& grown = padded.items()[0].tensor();
    EXPECT_EQ(grown.sizes(), (std::vector<int64_t>{world, 2}));
    EXPECT_TRUE(at::equal(grown.narrow(0, 0, rank + 1), rows));
    if (rank + 1 < world) {
      EXPECT_EQ(grown[world - 1][0].item<float>(), -1);
      EXPECT_EQ(padded.items()[1].tensor().scalar_type(), at::kLong);  // bool + int → int64, as torch
    } else {
      EXPECT_TRUE(grown.is_same(rows));  // already the largest: the same tensor
      EXPECT_TRUE(padded.items()[1].tensor().is_same(flags));
    }
    EXPECT_EQ(padded.items()[2].tensor().size(0), 2);  // dim 0 agrees
    EXPECT_TRUE(padded.items()[3].tensor().is_same(fixed));
    EXPECT_TRUE(padded.items()[4].tensor().is_same(scalar));  // 0-dim: unchanged
    // Padding first, along the last dimension, with a float into an integer tensor → float.
    Value front = ops.PadAcrossProcesses(T(ids), -1, 0.5, /*pad_first=*/true);
    const at::Tensor& f = front.tensor();
    EXPECT_EQ(f.size(1), world);
    if (rank + 1 < world) {
      EXPECT_EQ(f.scalar_type(), at::kFloat);
      EXPECT_EQ(f[0][0].item<float>(), 0.5f);
      EXPECT_EQ(f[0][world - 1].item<float>(), 1.0f);
    }
    // A dim no leaf has: no collective at all, everything unchanged.
    Value untouched = ops.PadAcrossProcesses(T(rows), 5);
    EXPECT_TRUE(untouched.tensor().is_same(rows));
  });
}

TEST_P(Ops, CoalescesManyLeavesIntoFewCollectives) {
  auto counts = RunCountedRanks(GetParam(), [](int, DataOps& ops, FaultInjectingCollectives& counted) {
    std::vector<Value> leaves;
    for (int i = 0; i < 100; ++i)
      leaves.push_back(T(at::full({4 + i % 3}, float(i), i % 2 ? at::kFloat : at::kHalf)));
    Value nested = Value::List(leaves);
    ops.Gather(nested);
    int gathers = counted.calls("all_gather");
    ops.Reduce(nested, "sum");
    int reduces = counted.calls("all_reduce");
    ops.Broadcast(nested, 0);
    int broadcasts = counted.calls("broadcast");
    return std::vector<int>{gathers, reduces, broadcasts, counted.calls("all_gather")};
  });
  // gather: the layout check + one data all-gather; reduce: one call for both dtypes;
  // broadcast: one buffer. Accelerate would run 100 collectives for each.
  for (const std::vector<int>& rank : counts) EXPECT_EQ(rank, (std::vector<int>{2, 1, 1, 4}));
}

TEST(Random, SynchronizeRngStatesGivesEveryRankRankZerosStream) {
  int port = launch::PickFreePort();
  std::vector<std::future<std::vector<float>>> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    ranks.push_back(std::async(std::launch::async, [=] {
      std::unique_ptr<Collectives> group = ConnectGloo(LoopbackOptions(rank, 2, port, 10000));
      at::Generator generator = at::detail::createCPUGenerator(100 + rank);
      SynchronizeRngStates(*group, {"generator"}, &generator);
      at::Tensor drawn = at::rand({4}, generator);
      return std::vector<float>(drawn.data_ptr<float>(), drawn.data_ptr<float>() + 4);
    }));
  }
  std::vector<float> rank0 = ranks[0].get();
  EXPECT_EQ(ranks[1].get(), rank0);
  at::Generator reference = at::detail::createCPUGenerator(100);
  at::Tensor expected = at::rand({4}, reference);
  EXPECT_EQ(rank0, std::vector<float>(expected.data_ptr<float>(), expected.data_ptr<float>() + 4));
}

TEST(Random, BadRngTypesFailBeforeAnyCollective) {
  std::unique_ptr<Collectives> single = MakeSingleProcess();
  EXPECT_NE(ErrorOf([&] {
              SynchronizeRngStates(*single, {"torch", "numpy"});
            }).find("unknown RNG type `numpy`"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { SynchronizeRngStates(*single, {"xla"}); }).find("not available"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { SynchronizeRngStates(*single, {"generator"}); }).find("no generator was passed"),
            std::string::npos);
  if (!IsCudaAvailable()) {
    EXPECT_NE(ErrorOf([&] { SynchronizeRngStates(*single, {"cuda"}); }).find("CUDA is not available"),
              std::string::npos);
  }
}

TEST(Random, SetSeedAddsTheProcessIndexWhenDeviceSpecific) {
  EXPECT_EQ(SetSeed(42, /*device_specific=*/true, 3), 45u);
  at::Tensor a = at::rand({3});
  SetSeed(45);
  EXPECT_TRUE(at::equal(a, at::rand({3})));
  EXPECT_EQ(SetSeed(42, /*device_specific=*/false, 3), 42u);
}

TEST(Environment, AvailabilityChecksDescribeThisBuild) {
  EXPECT_TRUE(IsGlooAvailable());
  EXPECT_FALSE(IsTorchXlaAvailable());
  EXPECT_FALSE(IsNpuAvailable());
  if (!IsCudaAvailable()) {
    EXPECT_TRUE(IsBf16Available());  // the CPU is assumed capable
  }
}

TEST(FaultInjection, ParsesFaultListsAndRejectsBadOnes) {
  std::vector<Fault> faults = ParseFaults("all_gather:2:kill,broadcast:1:delay=500ms,*:3:skip");
  ASSERT_EQ(faults.size(), 3u);
  EXPECT_EQ(faults[0].action, Fault::Action::kKill);
  EXPECT_EQ(faults[1].delay, std::chrono::milliseconds(500));
  EXPECT_EQ(faults[2].primitive, "*");
  EXPECT_EQ(ParseFaults("gather:1:kill,scatter:2:skip")[1].primitive, "scatter");
  EXPECT_THROW(ParseFaults("all_to_all:1:kill"), std::invalid_argument);
  EXPECT_THROW(ParseFaults("barrier:x:kill"), std::invalid_argument);
  EXPECT_THROW(ParseFaults("barrier:1:explode"), std::invalid_argument);
}

TEST(FaultInjection, AnInjectedFailureSurfacesAsACollectiveError) {
  FaultInjectingCollectives faulty(MakeSingleProcess(), ParseFaults("barrier:2:throw"));
  faulty.Barrier();
  EXPECT_THROW(faulty.Barrier(), CollectiveError);
  EXPECT_EQ(faulty.calls("barrier"), 2);
}

}  // namespace
}  // namespace accel::rt::distributed

namespace accel::rt::distributed {
namespace {

// A CPU group of two identical ranks (its all-gather plays both, for the agreement exchange)
// given tensors on another device (meta); no data collective may be reached.
class TwinGroup final : public Collectives {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 2; }
  void AllReduce(std::vector<at::Tensor>&, ReduceOp) override { ADD_FAILURE() << "all_reduce reached"; }
  void Broadcast(std::vector<at::Tensor>&, int) override { ADD_FAILURE() << "broadcast reached"; }
  void AllGather(const at::Tensor& input, at::Tensor& output) override {
    output.view({2, -1}).copy_(input.reshape({1, -1}).expand({2, -1}));
  }
  void Barrier() override {}
};

TEST(Ops, TensorsOnAnotherDeviceThanTheGroupAreRejectedBeforeAnyDataMoves) {
  TwinGroup group;
  DataOps ops(group);
  Value data = Value::Dict({{"x", T(at::ones({2}, at::TensorOptions().device(c10::kMeta)))}});
  std::string error = ErrorOf([&] { ops.Gather(data); });
  EXPECT_NE(error.find("gather: the tensor at [\"x\"] is on meta but this process group communicates on cpu"),
            std::string::npos)
      << error;
  EXPECT_NE(ErrorOf([&] { ops.Reduce(data, "sum"); }).find("reduce: the tensor at [\"x\"] is on meta"),
            std::string::npos);
  EXPECT_NE(ErrorOf([&] { ops.Broadcast(data); }).find("is on meta"), std::string::npos);
  EXPECT_NE(ErrorOf([&] { ops.PadAcrossProcesses(data); }).find("is on meta"), std::string::npos);
}

TEST(Connect, ChoosesTheBackendByNameAndExplainsAMissingOne) {
  RendezvousOptions options = LoopbackOptions(0, 1, launch::PickFreePort(), 5000);
  EXPECT_NE(ErrorOf([&] { Connect("mpi", options, 0); }).find("unknown process-group backend `mpi`"),
            std::string::npos);
  // The NCCL back end is built with every runtime; without a GPU it says so before the rendezvous.
  EXPECT_TRUE(IsNcclAvailable());
  if (!IsCudaAvailable()) {
    EXPECT_NE(ErrorOf([&] {
                Connect("nccl", options, 0);
              }).find("rank 0 cannot use CUDA: no CUDA device is visible"),
              std::string::npos);
  }
  std::unique_ptr<Collectives> gloo = Connect("gloo", options, 0);
  EXPECT_EQ(gloo->device(), c10::Device(c10::kCPU));
  EXPECT_TRUE(gloo->distributed());
}

}  // namespace
}  // namespace accel::rt::distributed

// Edge cases found in review: results must not alias reused buffers, a bad argument on one
// rank must fail every rank, empty and 0-dim tensors, arguments that differ across ranks.
namespace accel::rt::distributed {
namespace {

class Edges : public testing::TestWithParam<int> {};
INSTANTIATE_TEST_SUITE_P(World, Edges, testing::Values(1, 2, 4), [](const testing::TestParamInfo<int>& info) {
  return "ranks" + std::to_string(info.param);
});

TEST_P(Edges, GatheredTensorsDoNotAliasTheStagingBuffers) {
  RunRanks(GetParam(), [](int rank, DataOps& ops) {
    // One leaf fills the whole row: the unpacked slice is contiguous in staging.
    Value first = ops.Gather(Value::List({T(at::full({4}, 1.0f + rank)), T(at::empty({0}))}));
    at::Tensor kept = first.items()[0].tensor().clone();
    ops.Gather(Value::List({T(at::full({4}, 100.0f)), T(at::empty({0}))}));
    ops.GatherObject(Value::String(std::string(64, 'z')));
    EXPECT_TRUE(at::equal(first.items()[0].tensor(), kept));
  });
}

TEST_P(Edges, EmptyAndZeroDimTensorsTakeEveryPath) {
  int world = GetParam();
  RunRanks(world, [world](int rank, DataOps& ops) {
    EXPECT_EQ(Layout(ops.Gather(T(at::empty({0, 3})))), "float32[0, 3]");
    EXPECT_EQ(Layout(ops.Gather(Value::List({T(at::empty({0})), T(at::empty({0}, at::kLong))}))),
              "[float32[0], int64[0]]");
    Value lone = ops.Gather(T(at::scalar_tensor(double(rank), at::kDouble)));  // the single-leaf path
    EXPECT_EQ(Layout(lone), fmt::format("float64[{}]", world));
    EXPECT_EQ(lone.tensor()[world - 1].item<double>(), world - 1);
    at::Tensor scalar = at::scalar_tensor(float(rank));
    ops.Broadcast(T(scalar), 0);
    EXPECT_EQ(scalar.item<float>(), 0.0f);
    ops.Broadcast(Value::List({T(at::empty({0})), T(at::empty({0}))}), 0);
    Value reduced = ops.Reduce(Value::List({T(at::empty({0})), T(at::ones({2}))}), "sum");
    EXPECT_EQ(reduced.items()[0].tensor().numel(), 0);
    EXPECT_EQ(reduced.items()[1].tensor()[0].item<float>(), float(world));
    EXPECT_EQ(ops.Reduce(T(at::empty({0})), "mean").tensor().numel(), 0);
  });
}

TEST_P(Edges, NonContiguousInputsAndOtherReductionDtypes) {
  int world = GetParam();
  RunRanks(world, [world](int rank, DataOps& ops) {
    at::Tensor base = at::arange(6, at::kFloat).view({2, 3}) + rank;
    Value gathered = ops.Gather(T(base.t()));  // single leaf, non-contiguous
    EXPECT_TRUE(at::equal(gathered.tensor().narrow(0, 3 * (world - 1), 3), base.t() - rank + (world - 1)));
    Value summed = ops.Reduce(T(base.t()), "sum");
    EXPECT_TRUE(at::equal(summed.tensor(),
                          (at::arange(6, at::kFloat).view({2, 3}) * world + world * (world - 1) / 2).t()));
    Value half = ops.Reduce(
        Value::List({T(at::full({2}, 2.0 * rank, at::kHalf)), T(at::full({2}, 2.0 * rank, at::kBFloat16))}),
        "mean");
    EXPECT_EQ(half.items()[0].tensor().scalar_type(), at::kHalf);
    EXPECT_EQ(half.items()[0].tensor()[0].item<float>(), float(world - 1));
    EXPECT_EQ(half.items()[1].tensor()[1].item<float>(), float(world - 1));
    Value flags = ops.Reduce(T(at::full({3}, rank != 0)), "min");
    EXPECT_FALSE(flags.tensor()[0].item<bool>());  // rank 0 holds false: min is a logical and
    Value any = ops.Reduce(T(at::full({3}, rank == world - 1)), "sum");
    EXPECT_TRUE(any.tensor().all().item<bool>());
    Value shorts = ops.Reduce(T(at::full({2}, int64_t(rank + 1)).to(at::kShort)), "sum");
    EXPECT_EQ(shorts.tensor().scalar_type(), at::kShort);
    EXPECT_EQ(shorts.tensor()[0].item<int64_t>(), world * (world + 1) / 2);
  });
}

TEST_P(Edges, BroadcastWritesParametersThatRequireGradAndComplexTensors) {
  RunRanks(GetParam(), [](int rank, DataOps& ops) {
    at::Tensor weight = at::full({3}, float(rank)).set_requires_grad(true);
    at::Tensor bias = at::full({1}, float(rank)).set_requires_grad(true);
    at::Tensor phase = at::full({3}, c10::complex<double>(rank, -rank), at::kComplexDouble);
    ops.Broadcast(Value::List({T(weight), T(bias), T(phase)}), 0);
    EXPECT_EQ(weight.sum().item<float>(), 0.0f);
    EXPECT_TRUE(weight.requires_grad());
    EXPECT_EQ(phase.abs().sum().item<double>(), 0.0);
    std::string error = ErrorOf([&] { ops.Broadcast(T(at::ones({1}).expand({4})), 0); });
    EXPECT_NE(error.find("overlaps itself"), std::string::npos) << error;
  });
}

TEST_P(MultiRank, ABadArgumentOnOneRankFailsEveryRankInsteadOfStrandingThem) {
  RunRanks(GetParam(), [](int rank, DataOps& ops) {
    Value data = rank == 1 ? Value::List({T(at::ones({2})), Value::String("oops")})
                           : Value::List({T(at::ones({2})), T(at::ones({2}))});
    std::string error = ErrorOf([&] { ops.Gather(data); });
    if (rank == 1) {
      EXPECT_NE(error.find("gather: the leaf at [1] is a string"), std::string::npos) << error;
    } else {
      EXPECT_NE(error.find(
                    "another rank's arguments were rejected:\n  rank 1: gather: the leaf at [1] is a string"),
                std::string::npos)
          << error;
    }
    // Reduce checks its arguments inside the agreement too: an unknown reduction, a string leaf.
    error = ErrorOf([&] { ops.Reduce(T(at::ones({2})), rank == 1 ? "avg" : "sum"); });
    EXPECT_NE(
        error.find(rank == 1 ? "reduce: unknown reduction `avg`" : "rank 1: reduce: unknown reduction `avg`"),
        std::string::npos)
        << error;
    error = ErrorOf([&] { ops.Reduce(data, "sum"); });
    EXPECT_NE(error.find("the leaf at [1] is a string"), std::string::npos) << error;
    // An object one rank cannot encode.
    Value object = rank == 1 ? T(at::ones({1}, at::kComplexFloat)) : Value::Int(rank);
    error = ErrorOf([&] { ops.GatherObject(object); });
    EXPECT_NE(error.find(rank == 1 ? "cannot be sent as an object" : "rank 1 could not encode its object"),
              std::string::npos)
        << error;
    std::vector<Value> list = {rank == 0 ? T(at::ones({1}, at::kComplexFloat)) : Value()};
    error = ErrorOf([&] { ops.BroadcastObjectList(list, 0); });
    EXPECT_NE(error.find(rank == 0 ? "cannot be sent as an object" : "rank 0 could not encode its list"),
              std::string::npos)
        << error;
    ops.WaitForEveryone();  // and the group still works
  });
}

TEST_P(MultiRank, ArgumentsThatDifferAcrossRanksAreAnErrorOnEveryRank) {
  RunRanks(GetParam(), [](int rank, DataOps& ops) {
    std::string error = ErrorOf([&] { ops.Reduce(T(at::ones({2})), rank == 1 ? "max" : "sum"); });
    EXPECT_NE(error.find("rank 1: reduce float32[2] with reduction=max"), std::string::npos) << error;
    error = ErrorOf([&] { ops.Broadcast(T(at::ones({2})), rank == 1 ? 1 : 0); });
    EXPECT_NE(error.find("with from_process=1"), std::string::npos) << error;
    error = ErrorOf([&] { ops.PadAcrossProcesses(T(at::ones({2, 2})), rank == 1 ? 1 : 0); });
    EXPECT_NE(error.find("pad_across_processes float32[2 dims] with dim=1"), std::string::npos) << error;
    error =
        ErrorOf([&] { ops.PadAcrossProcesses(T(at::ones(std::vector<int64_t>(rank == 1 ? 3 : 2, 2))), 0); });
    EXPECT_NE(error.find("float32[3 dims]"), std::string::npos) << error;
  });
}

}  // namespace
}  // namespace accel::rt::distributed
