// Tensor parallelism (runtime/engine/tensor_parallel.h): where each rank sits in the
// (dp_replicate, dp_shard, tp) mesh, the groups formed over Gloo (threads of this process on
// loopback), Megatron's two communication operators, and a tensor-parallel MLP on 2 ranks
// against the same MLP whole on one. (Equivalence through accelrun on real processes:
// tests/e2e/tensor_parallel_test.py.)
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <cmath>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "runtime/distributed/collectives.h"
#include "runtime/engine/tensor_parallel.h"
#include "tests/support/gloo_ranks.h"
#include "tests/support/plan_builders.h"

namespace accel::rt::train {
namespace {

using distributed::Collectives;
using distributed::RunGlooRanks;
using Group = std::unique_ptr<Collectives>;

plan::Sharding Mesh(int64_t tp, int64_t shard, bool hybrid) {
  plan::Sharding sharding;
  sharding.tensor_parallel = tp;
  sharding.dp_shard_size = shard;
  sharding.hybrid = hybrid;
  return sharding;
}

// Accelerate's tp_hsdp example: dp_replicate 2 x dp_shard 2 x tp 2 on 8 ranks, tp innermost.
TEST(PlaceInMesh, TheTpHsdpMeshPutsTensorParallelRanksNextToEachOther) {
  for (int rank = 0; rank < 8; ++rank) {
    MeshPlace place = PlaceInMesh(rank, 8, Mesh(2, 2, true), 8);
    EXPECT_EQ(place.tensor_parallel, 2);
    EXPECT_EQ(place.shard, 2);
    EXPECT_EQ(place.replicate, 2);
    EXPECT_EQ(place.dp_size, 4);
    EXPECT_EQ(place.tp_rank, rank % 2);
    EXPECT_EQ(place.dp_rank, rank / 2);
  }
  MeshPlace five = PlaceInMesh(5, 8, Mesh(2, 2, true), 8);
  EXPECT_EQ(five.TensorParallelRanks(5), (std::vector<int>{4, 5}));
  EXPECT_EQ(five.DataParallelRanks(5), (std::vector<int>{1, 3, 5, 7}));
  MeshPlace two = PlaceInMesh(2, 8, Mesh(2, 2, true), 8);
  EXPECT_EQ(two.TensorParallelRanks(2), (std::vector<int>{2, 3}));
  EXPECT_EQ(two.DataParallelRanks(2), (std::vector<int>{0, 2, 4, 6}));
}

TEST(PlaceInMesh, WithoutTensorParallelismTheDataParallelRanksAreTheWorld) {
  MeshPlace place = PlaceInMesh(3, 4, Mesh(1, 0, false), 4);
  EXPECT_EQ(place.tensor_parallel, 1);
  EXPECT_EQ(place.dp_rank, 3);
  EXPECT_EQ(place.dp_size, 4);
  EXPECT_EQ(place.shard, 4);
  EXPECT_EQ(place.DataParallelRanks(3), (std::vector<int>{0, 1, 2, 3}));
  // Hybrid sharding of a machine's processes, divided into tensor-parallel groups.
  MeshPlace hybrid = PlaceInMesh(6, 8, Mesh(2, 0, true), 4);
  EXPECT_EQ(hybrid.shard, 2);
  EXPECT_EQ(hybrid.replicate, 2);
}

TEST(PlaceInMesh, RefusesAMeshThatDoesNotDivideTheWorld) {
  EXPECT_THROW(PlaceInMesh(0, 6, Mesh(4, 0, false), 6), std::invalid_argument);
  EXPECT_THROW(PlaceInMesh(0, 8, Mesh(2, 3, true), 8), std::invalid_argument);
  // Shard groups smaller than the data-parallel ranks need replication (hybrid).
  EXPECT_THROW(PlaceInMesh(0, 8, Mesh(2, 2, false), 8), std::invalid_argument);
  try {
    PlaceInMesh(0, 6, Mesh(4, 0, false), 6);
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("num_processes"), std::string::npos) << error.what();
  }
}

TEST(TensorParallelSlice, TakesRowsOrColumnsInRankOrder) {
  at::Tensor whole = at::arange(24, at::kFloat).view({4, 6});
  EXPECT_TRUE(at::equal(TensorParallelSlice(whole, 0, 1, 2), whole.narrow(0, 2, 2)));
  EXPECT_TRUE(at::equal(TensorParallelSlice(whole, 1, 2, 3), whole.narrow(1, 4, 2)));
  EXPECT_THROW(TensorParallelSlice(whole, 0, 0, 3), std::invalid_argument);
}

// 4 ranks as tp 2 x dp 2: each group sums within itself only.
TEST(FormMeshGroups, TensorAndDataParallelGroupsReduceWithinThemselves) {
  RunGlooRanks(4, [](int rank, Group& world) {
    MeshPlace place = PlaceInMesh(rank, 4, Mesh(2, 2, false), 4);
    MeshGroups groups = FormMeshGroups(*world, place);
    ASSERT_NE(groups.tensor_parallel, nullptr);
    ASSERT_NE(groups.data_parallel, nullptr);
    EXPECT_EQ(groups.tensor_parallel->rank(), rank % 2);
    EXPECT_EQ(groups.data_parallel->rank(), rank / 2);
    std::vector<at::Tensor> sum{at::full({1}, std::pow(10.0f, rank))};
    groups.tensor_parallel->AllReduceSum(sum);
    EXPECT_EQ(sum[0].item<float>(), rank < 2 ? 11.0f : 1100.0f);
    sum = {at::full({1}, std::pow(10.0f, rank))};
    groups.data_parallel->AllReduceSum(sum);
    EXPECT_EQ(sum[0].item<float>(), rank % 2 == 0 ? 101.0f : 1010.0f);
  });
}

// f: identity forward, the gradient summed over the group backward; g: the sum forward,
// identity backward.
TEST(TensorParallelOperators, CopyReducesGradientsAndReduceSumsOutputs) {
  RunGlooRanks(2, [](int rank, Group& group) {
    at::Tensor x = at::full({3}, 1.0f + rank).set_requires_grad(true);
    at::Tensor copied = CopyToTensorParallel(x, *group);
    EXPECT_TRUE(at::equal(copied.detach(), x.detach()));
    (copied * (rank + 2.0f)).sum().backward();
    EXPECT_TRUE(at::equal(x.grad(), at::full({3}, 2.0f + 3.0f))) << x.grad();

    at::Tensor y = at::full({2}, 1.0f + rank).set_requires_grad(true);
    at::Tensor reduced = ReduceFromTensorParallel(y, *group);
    EXPECT_TRUE(at::equal(reduced.detach(), at::full({2}, 3.0f)));
    (reduced * (rank + 2.0f)).sum().backward();
    EXPECT_TRUE(at::equal(y.grad(), at::full({2}, rank + 2.0f))) << y.grad();
  });
}

plan::BuildModel Mlp() {
  plan::BuildModel model;
  // Linear pairs (4 -> 6 -> 4) split, the last Linear (4 -> 2) whole.
  model.model = plan::MLP{/*inputs=*/4, /*hidden=*/{6, 4}, /*outputs=*/2};
  return model;
}

plan::TrainLoop SgdLoop() {
  plan::TrainLoop loop;
  loop.optimizer = testing::OptimizerNamed("sgd", 0.1);
  return loop;
}

void TrainSteps(Trainer& trainer, GradientSync* sync, int steps) {
  for (int step = 0; step < steps; ++step) {
    at::Tensor features = at::cos(at::arange(32, at::kFloat).view({8, 4}) * (0.3 + step));
    at::Tensor targets = at::sin(at::arange(16, at::kFloat).view({8, 2}) + step);
    if (sync != nullptr) sync->PrepareForBackward(true);
    trainer.ForwardBackward(features, targets, 1.0);
    if (sync != nullptr) sync->Finalize();
    trainer.OptimizerStep(false);
  }
}

// A run of one process without tensor parallelism, and what every rank of the tensor-parallel
// run gathers: the same names, shapes and values (float32 summation order aside).
TEST(TensorParallelTrainer, TwoRanksTrainTheWholeModelsWeights) {
  at::manual_seed(7);
  std::unique_ptr<Trainer> whole = MakeTrainer(Mlp(), SgdLoop());
  TrainSteps(*whole, nullptr, 3);
  std::vector<std::pair<std::string, at::Tensor>> expected = whole->NamedParameters();

  std::mutex generator;  // the ranks draw the same weights from the one global generator
  RunGlooRanks(2, [&](int rank, Group& world) {
    MeshPlace place = PlaceInMesh(rank, 2, Mesh(2, 0, false), 2);
    MeshGroups groups = FormMeshGroups(*world, place);
    std::unique_ptr<Trainer> model;
    {
      std::lock_guard<std::mutex> lock(generator);
      at::manual_seed(7);
      model = MakeTrainer(Mlp(), SgdLoop(), {groups.tensor_parallel.get(), place.tp_rank, 2});
    }
    EXPECT_EQ(model->TensorParallelDims(), (std::vector<int>{0, 0, 1, -1, -1, -1}));
    EXPECT_EQ(model->NamedParameters()[0].second.sizes(), (std::vector<int64_t>{3, 4}));
    EXPECT_EQ(model->NamedParameters()[2].second.sizes(), (std::vector<int64_t>{4, 3}));
    std::vector<int> dims = model->TensorParallelDims();
    TensorParallelTrainer tp(std::move(model), dims, *groups.tensor_parallel);
    TrainSteps(tp, &tp, 3);
    tp.BeginFullState();
    std::vector<std::pair<std::string, at::Tensor>> gathered = tp.NamedParameters();
    ASSERT_EQ(gathered.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(gathered[i].first, expected[i].first);
      EXPECT_EQ(gathered[i].second.sizes(), expected[i].second.sizes()) << expected[i].first;
      EXPECT_TRUE(at::allclose(gathered[i].second, expected[i].second, 0, 1e-6)) << expected[i].first;
    }
    // A load writes the whole tensors; this rank keeps its slices of them.
    std::vector<at::Tensor> loaded;
    for (auto& [name, tensor] : gathered) {
      at::NoGradGuard no_grad;
      tensor.copy_(at::arange(tensor.numel(), at::kFloat).view(tensor.sizes()));
      loaded.push_back(tensor.clone());
    }
    tp.EndFullState();
    std::vector<std::pair<std::string, at::Tensor>> mine = tp.NamedParameters();
    for (size_t i = 0; i < mine.size(); ++i) {
      at::Tensor want = dims[i] < 0 ? loaded[i] : TensorParallelSlice(loaded[i], dims[i], rank, 2);
      EXPECT_TRUE(at::equal(mine[i].second, want)) << mine[i].first;
    }
  });
}

TEST(TensorParallelTrainer, ATorchScriptModelIsRefusedForItsMissingPlan) {
  plan::BuildModel scripted;
  scripted.model = plan::TorchScript{"missing.pt"};
  try {
    MakeTrainer(scripted, SgdLoop(), {nullptr, 0, 2});
    FAIL() << "no error";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("tp_plan"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace accel::rt::train
