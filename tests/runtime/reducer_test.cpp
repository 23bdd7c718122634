// The hook-driven gradient reducer (runtime/engine/reducer.h) at world sizes 2 and 4: ranks are
// threads of this process joined in a Gloo group over loopback, each training its own copy of a
// small torch::nn model; every rank also computes every other rank's gradients on its own to
// know what the mean must be.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "runtime/distributed/collectives.h"
#include "runtime/engine/reducer.h"
#include "runtime/launch/launcher.h"
#include "runtime/launch/rendezvous_port.h"
#include "tests/support/gloo_ranks.h"

namespace accel::rt::train {
namespace {

// Parameter sizes (fp32 bytes), in model order: fc1.weight 512, fc1.bias 64, fc2.weight 256,
// fc2.bias 16, extra.weight 64, extra.bias 16. `extra` is used only when forward is asked to.
struct NetImpl : torch::nn::Module {
  NetImpl() {
    fc1 = register_module("fc1", torch::nn::Linear(8, 16));
    fc2 = register_module("fc2", torch::nn::Linear(16, 4));
    extra = register_module("extra", torch::nn::Linear(4, 4));
    // The same values on every rank without the process-wide seed (ranks are threads).
    torch::NoGradGuard no_grad;
    double k = 0;
    for (torch::Tensor& p : parameters()) {
      p.copy_((torch::sin(torch::arange(p.numel(), torch::kFloat) * 0.37 + ++k) * 0.5).view_as(p));
    }
  }
  torch::Tensor forward(const torch::Tensor& x, bool use_extra) {
    torch::Tensor h = fc2(torch::tanh(fc1(x)));
    return use_extra ? h + extra(h) : h;
  }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr}, extra{nullptr};
};
TORCH_MODULE(Net);

std::vector<std::pair<std::string, at::Tensor>> NamedParameters(Net& net) {
  std::vector<std::pair<std::string, at::Tensor>> named;
  for (const auto& item : net->named_parameters()) named.emplace_back(item.key(), item.value());
  return named;
}

// Rank `rank`'s loss on micro-batch `step`: the data differ per rank and per step.
torch::Tensor Loss(Net& net, int rank, int step, bool use_extra = true) {
  torch::Tensor x = torch::cos(torch::arange(32, torch::kFloat).view({4, 8}) * (0.1 * (rank + 1)) + step);
  torch::Tensor out = net->forward(x, use_extra);
  return (out * out).mean() + out.sum() * 0.1;
}

// The gradients rank `rank` gets alone, summed over micro-batches `steps`, in parameter order.
std::vector<at::Tensor> LocalGradients(int rank, const std::vector<int>& steps, bool use_extra = true) {
  Net net;
  for (int step : steps) Loss(net, rank, step, use_extra).backward();
  std::vector<at::Tensor> grads;
  for (torch::Tensor& p : net->parameters()) {
    grads.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
  }
  return grads;
}

std::vector<at::Tensor> MeanGradients(int world, const std::vector<int>& steps) {
  std::vector<at::Tensor> mean;
  for (int r = 0; r < world; ++r) {
    std::vector<at::Tensor> grads = LocalGradients(r, steps);
    if (mean.empty()) {
      mean = grads;
    } else {
      for (size_t i = 0; i < grads.size(); ++i) mean[i] += grads[i];
    }
  }
  for (at::Tensor& g : mean) g /= world;
  return mean;
}

void ExpectGradients(Net& net, const std::vector<at::Tensor>& expected, double rtol, double atol) {
  std::vector<torch::Tensor> params = net->parameters();
  ASSERT_EQ(params.size(), expected.size());
  for (size_t i = 0; i < params.size(); ++i) {
    ASSERT_TRUE(params[i].grad().defined()) << "parameter " << i;
    EXPECT_TRUE(torch::allclose(params[i].grad(), expected[i], rtol, atol))
        << "parameter " << i << "\ngot\n"
        << params[i].grad() << "\nexpected\n"
        << expected[i];
  }
}

// Forwards to a real group and calls `on_launch` before each asynchronous all-reduce starts.
class Recording final : public distributed::Collectives {
 public:
  Recording(distributed::Collectives& inner, std::function<void()> on_launch)
      : inner_(inner), on_launch_(std::move(on_launch)) {}
  int rank() const override { return inner_.rank(); }
  int world_size() const override { return inner_.world_size(); }
  bool distributed() const override { return inner_.distributed(); }
  void AllReduce(std::vector<at::Tensor>& tensors, distributed::ReduceOp op) override {
    ++calls;
    inner_.AllReduce(tensors, op);
  }
  std::unique_ptr<distributed::PendingWork> AllReduceAsync(std::vector<at::Tensor>& tensors,
                                                           distributed::ReduceOp op) override {
    ++calls;
    on_launch_();
    return inner_.AllReduceAsync(tensors, op);
  }
  void Broadcast(std::vector<at::Tensor>& tensors, int root) override { inner_.Broadcast(tensors, root); }
  void AllGather(const at::Tensor& input, at::Tensor& output) override { inner_.AllGather(input, output); }
  void Barrier() override { inner_.Barrier(); }
  int calls = 0;

 private:
  distributed::Collectives& inner_;
  std::function<void()> on_launch_;
};

// Runs `body(rank, group)` on `world` threads joined into one Gloo group; world 1 is one
// process without a backend.
template <typename Body>
void RunRanks(int world, Body body, int timeout_ms = 10000) {
  if (world == 1) {
    std::unique_ptr<distributed::Collectives> single = distributed::MakeSingleProcess();
    body(0, *single);
    return;
  }
  distributed::RunGlooRanks(
      world, [body](int rank, std::unique_ptr<distributed::Collectives>& group) { body(rank, *group); },
      timeout_ms);
}

class ReducerRanks : public testing::TestWithParam<int> {};
INSTANTIATE_TEST_SUITE_P(World, ReducerRanks, testing::Values(2, 4),
                         [](const testing::TestParamInfo<int>& info) {
                           return "ranks" + std::to_string(info.param);
                         });

TEST_P(ReducerRanks, AveragesGradientsForEveryBucketCap) {
  int world = GetParam();
  std::vector<at::Tensor> expected = MeanGradients(world, {0});
  // One bucket; four with fc1.weight over the cap; six, every parameter alone.
  std::vector<std::pair<int64_t, size_t>> caps{{1 << 20, 1}, {300, 4}, {64, 6}};
  RunRanks(world, [&](int rank, distributed::Collectives& group) {
    for (auto [cap, buckets] : caps) {
      Net net;
      Reducer reducer(NamedParameters(net), {cap, plan::DDPCommunicationHookType::no, false}, group);
      EXPECT_EQ(reducer.bucket_count(), buckets);
      reducer.PrepareForBackward(true);
      Loss(net, rank, 0).backward();
      reducer.Finalize();
      ExpectGradients(net, expected, 1e-6, 1e-7);
    }
  });
}

TEST_P(ReducerRanks, StartsEveryBucketBeforeBackwardReturns) {
  int world = GetParam();
  RunRanks(world, [&](int rank, distributed::Collectives& group) {
    Net net;
    std::vector<bool> first_layer_done;
    Recording recording(group, [&] { first_layer_done.push_back(net->fc1->weight.grad().defined()); });
    Reducer reducer(NamedParameters(net), {64, plan::DDPCommunicationHookType::no, false}, recording);
    reducer.PrepareForBackward(true);
    Loss(net, rank, 0).backward();
    // All six all-reduces were started from the hooks, and the first before backward had
    // reached the first layer: communication overlaps the rest of backward.
    EXPECT_EQ(reducer.buckets_launched_in_backward(), 6u);
    ASSERT_EQ(first_layer_done.size(), 6u);
    EXPECT_FALSE(first_layer_done.front());
    EXPECT_TRUE(first_layer_done.back());
    reducer.Finalize();
    EXPECT_EQ(recording.calls, 6);
  });
}

// torch's fp16/bf16 compress hooks: cast to `dtype`, divide by the world size in it, sum in it.
// `half_ulp`: the relative error of one rounding to `dtype`.
void ExpectCompressionHookEqualsManual(int world, plan::DDPCommunicationHookType hook, at::ScalarType dtype,
                                       double half_ulp) {
  std::vector<at::Tensor> expected;
  // What each rounding of a partial sum can be off by, summed: |c| summed over ranks.
  std::vector<at::Tensor> magnitude;
  for (int r = 0; r < world; ++r) {
    std::vector<at::Tensor> grads = LocalGradients(r, {0});
    for (size_t i = 0; i < grads.size(); ++i) {
      at::Tensor compressed = grads[i].to(dtype).div_(world);
      if (r == 0) {
        expected.push_back(compressed);
        magnitude.push_back(compressed.to(at::kFloat).abs());
      } else {
        expected[i] = (expected[i].to(at::kFloat) + compressed.to(at::kFloat)).to(dtype);
        magnitude[i] += compressed.to(at::kFloat).abs();
      }
    }
  }
  for (at::Tensor& g : expected) g = g.to(at::kFloat);
  std::vector<at::Tensor> exact = MeanGradients(world, {0});
  RunRanks(world, [&](int rank, distributed::Collectives& group) {
    Net net;
    Reducer reducer(NamedParameters(net), {300, hook, false}, group);
    reducer.PrepareForBackward(true);
    Loss(net, rank, 0).backward();
    reducer.Finalize();
    std::vector<torch::Tensor> params = net->parameters();
    if (world == 2) {
      // One rounding of one sum: bit-equal.
      ExpectGradients(net, expected, 0, 0);
    } else {
      // Gloo's ring adds the four in another order than ours; each side rounds world - 1
      // partial sums (half an ulp each).
      for (size_t i = 0; i < params.size(); ++i) {
        at::Tensor bound = magnitude[i] * (2.0 * (world - 1) * half_ulp) + 1e-7;
        EXPECT_TRUE(((params[i].grad() - expected[i]).abs() <= bound).all().item<bool>())
            << "parameter " << i;
      }
    }
    bool differs = false;
    for (size_t i = 0; i < params.size(); ++i) {
      EXPECT_TRUE(params[i].grad().equal(params[i].grad().to(dtype).to(at::kFloat)));
      differs = differs || !params[i].grad().equal(exact[i]);
    }
    EXPECT_TRUE(differs) << c10::toString(dtype) << " compression left every gradient exact";
  });
}

TEST_P(ReducerRanks, Fp16HookEqualsManualCompression) {
  ExpectCompressionHookEqualsManual(GetParam(), plan::DDPCommunicationHookType::fp16, at::kHalf, 1.0 / 2048);
}

TEST_P(ReducerRanks, Bf16HookEqualsManualCompression) {
  ExpectCompressionHookEqualsManual(GetParam(), plan::DDPCommunicationHookType::bf16, at::kBFloat16, 1.0 / 256);
}

TEST_P(ReducerRanks, NoSyncAccumulatesThenAveragesTheSum) {
  int world = GetParam();
  std::vector<at::Tensor> expected = MeanGradients(world, {0, 1, 2, 3});
  RunRanks(world, [&](int rank, distributed::Collectives& group) {
    Net net;
    Recording recording(group, [] {});
    Reducer reducer(NamedParameters(net), {300, plan::DDPCommunicationHookType::no, false}, recording);
    for (int step = 0; step < 3; ++step) {
      reducer.PrepareForBackward(false);
      Loss(net, rank, step).backward();
      reducer.Finalize();  // nothing to do after a no_sync backward
    }
    EXPECT_EQ(recording.calls, 0);
    std::vector<at::Tensor> local = LocalGradients(rank, {0, 1, 2});
    EXPECT_TRUE(torch::allclose(net->fc1->weight.grad(), local[0], 1e-6, 1e-7));
    reducer.PrepareForBackward(true);
    Loss(net, rank, 3).backward();
    reducer.Finalize();
    ExpectGradients(net, expected, 1e-5, 1e-6);
  });
}

TEST_P(ReducerRanks, UnusedParameterIsAnErrorThatNamesItAndTheFix) {
  int world = GetParam();
  RunRanks(world, [&](int rank, distributed::Collectives& group) {
    Net net;
    Reducer reducer(NamedParameters(net), {64, plan::DDPCommunicationHookType::no, false}, group);
    reducer.PrepareForBackward(true);
    Loss(net, rank, 0, /*use_extra=*/false).backward();
    try {
      reducer.Finalize();
      ADD_FAILURE() << "no error for unused parameters";
    } catch (const UnusedParametersError& error) {
      EXPECT_EQ(
          std::string(error.what()),
          "parameters `extra.weight`, `extra.bias` received no gradient in this backward on rank " +
              std::to_string(rank) +
              "; if the model leaves parameters unused, set accelerator.ddp.find_unused_parameters = true");
    }
    // The next step works once every parameter is used again.
    reducer.PrepareForBackward(true);
    Loss(net, rank, 0).backward();
    reducer.Finalize();
  });
}

TEST_P(ReducerRanks, ParameterUnusedOnOneRankFailsWithinTheTimeoutInsteadOfHanging) {
  int world = GetParam();
  auto start = std::chrono::steady_clock::now();
  RunRanks(
      world,
      [&](int rank, distributed::Collectives& group) {
        // Ranks 1.. fail on their own and leave: each rank must be past the rendezvous first,
        // or rank 0 can see their connections close while it still connects.
        group.Barrier();
        Net net;
        Reducer reducer(NamedParameters(net), {1 << 20, plan::DDPCommunicationHookType::no, false}, group);
        reducer.PrepareForBackward(true);
        Loss(net, rank, 0, /*use_extra=*/rank == 0).backward();
        if (rank == 0) {
          EXPECT_THROW(reducer.Finalize(), distributed::CollectiveError);
        } else {
          EXPECT_THROW(reducer.Finalize(), UnusedParametersError);
        }
      },
      /*timeout_ms=*/2000);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

TEST_P(ReducerRanks, FindUnusedParametersReducesZerosAndLeavesGloballyUnusedAlone) {
  int world = GetParam();
  // `extra` is used on rank 0 only: its mean is rank 0's gradient over the world size.
  std::vector<at::Tensor> expected = LocalGradients(0, {0});
  for (int r = 1; r < world; ++r) {
    std::vector<at::Tensor> grads = LocalGradients(r, {0}, /*use_extra=*/false);
    for (size_t i = 0; i < grads.size(); ++i) expected[i] += grads[i];
  }
  for (at::Tensor& g : expected) g /= world;
  RunRanks(world, [&](int rank, distributed::Collectives& group) {
    Net net;
    std::vector<std::pair<std::string, at::Tensor>> named = NamedParameters(net);
    // Unused on every rank: one without a gradient, one whose gradient is rank-specific.
    at::Tensor never = torch::zeros({3}, torch::requires_grad());
    at::Tensor stale = torch::zeros({2}, torch::requires_grad());
    stale.mutable_grad() = torch::full({2}, float(rank));
    named.emplace_back("never", never);
    named.emplace_back("stale", stale);
    Reducer reducer(named, {64, plan::DDPCommunicationHookType::no, true}, group);
    reducer.PrepareForBackward(true);
    Loss(net, rank, 0, /*use_extra=*/rank == 0).backward();
    reducer.Finalize();
    ExpectGradients(net, expected, 1e-6, 1e-7);
    EXPECT_FALSE(never.grad().defined());
    EXPECT_TRUE(stale.grad().equal(torch::full({2}, float(rank))));
  });
}

// Against averaging after backward (one flat buffer, all-reduced once backward is done: what
// the executor did before the reducer), on a model large
// enough for communication to matter: the same gradients, and the time each takes from the
// start of backward to averaged gradients (reported, not asserted: the machine is shared).
TEST(Reducer, MatchesAveragingAfterBackwardAndReportsTheTimeOfBothOnALargerModel) {
  constexpr int kWorld = 2;
  constexpr int kSteps = 5;
  std::vector<double> overlapped_ms(kWorld), after_ms(kWorld);
  RunRanks(kWorld, [&](int rank, distributed::Collectives& group) {
    torch::nn::Sequential net;
    for (int i = 0; i < 4; ++i) net->push_back(torch::nn::Linear(768, 768));
    {
      torch::NoGradGuard no_grad;
      double k = 0;
      for (torch::Tensor& p : net->parameters()) {
        p.copy_((torch::sin(torch::arange(p.numel(), torch::kFloat) * 0.01 + ++k) * 0.05).view_as(p));
      }
    }
    std::vector<std::pair<std::string, at::Tensor>> named;
    for (const auto& item : net->named_parameters()) named.emplace_back(item.key(), item.value());
    torch::Tensor x = torch::cos(torch::arange(64 * 768, torch::kFloat).view({64, 768}) * 0.001 * (rank + 1));
    auto loss = [&] { return net->forward(x).pow(2).mean(); };
    auto clear = [&] {
      for (torch::Tensor& p : net->parameters()) p.mutable_grad() = at::Tensor();
    };
    int64_t cap = int64_t{1} << 20;

    auto average_after_backward = [&] {
      std::vector<torch::Tensor> grads;
      for (torch::Tensor& p : net->parameters()) grads.push_back(p.grad().reshape({-1}));
      std::vector<at::Tensor> flat{torch::cat(grads)};
      group.AllReduceSum(flat);
      flat[0].div_(kWorld);
      int64_t offset = 0;
      for (torch::Tensor& p : net->parameters()) {
        p.mutable_grad().copy_(flat[0].narrow(0, offset, p.numel()).view_as(p));
        offset += p.numel();
      }
    };
    std::vector<at::Tensor> reference;
    for (int step = 0; step <= kSteps; ++step) {
      clear();
      torch::Tensor l = loss();
      auto start = std::chrono::steady_clock::now();
      l.backward();
      average_after_backward();
      // Step 0 warms up the connections.
      if (step > 0)
        after_ms[rank] +=
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    }
    for (torch::Tensor& p : net->parameters()) reference.push_back(p.grad().clone());

    Reducer reducer(named, {cap, plan::DDPCommunicationHookType::no, false}, group);
    for (int step = 0; step <= kSteps; ++step) {
      clear();
      torch::Tensor l = loss();
      auto start = std::chrono::steady_clock::now();
      reducer.PrepareForBackward(true);
      l.backward();
      reducer.Finalize();
      if (step > 0)
        overlapped_ms[rank] +=
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    }
    std::vector<torch::Tensor> params = net->parameters();
    for (size_t i = 0; i < params.size(); ++i) {
      EXPECT_TRUE(torch::allclose(params[i].grad(), reference[i], 1e-6, 1e-9)) << "parameter " << i;
    }
  });
  std::printf(
      "backward + averaging, mean over %d steps on rank 0: %.1f ms overlapped (reducer), %.1f ms after "
      "backward (one buffer)\n",
      kSteps, overlapped_ms[0] / kSteps, after_ms[0] / kSteps);
}

TEST(Reducer, WorldSizeOneLeavesGradientsAsBackwardMadeThem) {
  std::vector<at::Tensor> expected = LocalGradients(0, {0});
  RunRanks(1, [&](int rank, distributed::Collectives& group) {
    Net net;
    Recording recording(group, [] {});
    Reducer reducer(NamedParameters(net), {300, plan::DDPCommunicationHookType::fp16, false}, recording);
    reducer.PrepareForBackward(true);
    Loss(net, rank, 0).backward();
    reducer.Finalize();
    ExpectGradients(net, expected, 0, 0);
    EXPECT_EQ(recording.calls, 0);
  });
}

TEST(Reducer, RejectsABucketCapBelowOneByte) {
  std::unique_ptr<distributed::Collectives> single = distributed::MakeSingleProcess();
  Net net;
  EXPECT_THROW(Reducer(NamedParameters(net), {0, plan::DDPCommunicationHookType::no, false}, *single),
               std::invalid_argument);
}

}  // namespace
}  // namespace accel::rt::train
