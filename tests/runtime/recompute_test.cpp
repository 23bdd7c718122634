// Activation checkpointing in the trainer (runtime/model/recompute.h): the recomputed blocks
// give the same gradients bit for bit, in fp32 and under bf16 autocast, and the training step
// holds less memory at its peak.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "runtime/model/trainer.h"
#include "tests/support/peak_memory.h"
#include "tests/support/plan_builders.h"

namespace accel::rt::train {
namespace {

plan::BuildModel Transformer() {
  return plan::BuildModel{plan::Transformer{/*inputs=*/16, /*d_model=*/32, /*heads=*/4, /*layers=*/3,
                                            /*feedforward=*/128, /*outputs=*/3}};
}

plan::TrainLoop Loop(bool recompute, plan::MixedPrecision precision = plan::MixedPrecision::no) {
  plan::TrainLoop loop;
  loop.optimizer = testing::OptimizerNamed("sgd", 0.1);
  loop.mixed_precision = precision;
  loop.sharding.wrap_policy = plan::WrapPolicy::transformer_based;  // the encoder layers
  loop.sharding.activation_checkpointing = recompute;
  return loop;
}

std::unique_ptr<Trainer> Seeded(const plan::BuildModel& model, const plan::TrainLoop& loop) {
  at::manual_seed(3);
  return MakeTrainer(model, loop);
}

at::Tensor Features(const plan::BuildModel& model) {
  const int64_t width = std::holds_alternative<plan::MLP>(model.model) ? 6 : 16;
  return at::cos(at::arange(64 * width, at::kFloat).view({64, width}) * 0.37);
}
at::Tensor Targets() { return at::sin(at::arange(64 * 3, at::kFloat).view({64, 3})); }

// Every parameter's gradient after one ForwardBackward, cloned.
std::vector<at::Tensor> Gradients(Trainer& trainer, const plan::BuildModel& model) {
  trainer.ForwardBackward(Features(model), Targets(), 1.0);
  std::vector<at::Tensor> grads;
  for (const auto& [name, parameter] : trainer.NamedParameters()) {
    EXPECT_TRUE(parameter.grad().defined()) << name;
    grads.push_back(parameter.grad().clone());
  }
  return grads;
}

bool SameBits(const at::Tensor& a, const at::Tensor& b) {
  return a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type() &&
         std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0;
}

void ExpectSameGradients(const plan::BuildModel& model, const plan::TrainLoop& kept_loop,
                         const plan::TrainLoop& recomputed_loop) {
  std::unique_ptr<Trainer> kept = Seeded(model, kept_loop);
  std::vector<at::Tensor> expected = Gradients(*kept, model);
  std::vector<at::Tensor> grads = Gradients(*Seeded(model, recomputed_loop), model);
  ASSERT_EQ(grads.size(), expected.size());
  std::vector<std::pair<std::string, at::Tensor>> named = kept->NamedParameters();
  for (size_t i = 0; i < grads.size(); ++i) {
    EXPECT_TRUE(SameBits(grads[i], expected[i]))
        << named[i].first << ": max difference " << (grads[i] - expected[i]).abs().max().item<float>();
  }
}

TEST(Recompute, TransformerLayersGiveTheSameGradientsInFp32) {
  ExpectSameGradients(Transformer(), Loop(false), Loop(true));
}

// Backward runs outside forward's autocast region: a recomputation in fp32 would differ.
TEST(Recompute, TransformerLayersGiveTheSameGradientsUnderBf16Autocast) {
  ExpectSameGradients(Transformer(), Loop(false, plan::MixedPrecision::bf16),
                      Loop(true, plan::MixedPrecision::bf16));
}

// The recomputation takes forward's autocast dtype too: fp16 recomputed in bf16 would differ.
TEST(Recompute, TransformerLayersGiveTheSameGradientsUnderFp16Autocast) {
  ExpectSameGradients(Transformer(), Loop(false, plan::MixedPrecision::fp16),
                      Loop(true, plan::MixedPrecision::fp16));
}

// Every block of an MLP wraps a Linear (named as the class to wrap): the first one's input,
// the features, needs no gradient, yet its weights get theirs.
TEST(Recompute, MlpBlocksGiveTheSameGradientsFromTheFirstBlockOn) {
  auto loop = [](bool recompute) {
    plan::TrainLoop loop = Loop(recompute);
    loop.sharding.transformer_layer_cls_to_wrap = {"Linear"};
    return loop;
  };
  ExpectSameGradients(testing::Mlp(6, {20, 20}, 3), loop(false), loop(true));
}

int64_t PeakOfAStep(bool recompute) {
  plan::BuildModel model = Transformer();
  std::unique_ptr<Trainer> trainer = Seeded(model, Loop(recompute));
  at::Tensor features = Features(model), targets = Targets();
  return testing::PeakAllocatedBytes([&] { trainer->ForwardBackward(features, targets, 1.0); });
}

// Each layer then keeps its input only, not its attention and feed-forward activations.
TEST(Recompute, StepPeaksLowerWithRecomputedLayers) {
  const int64_t kept = PeakOfAStep(false);
  const int64_t recomputed = PeakOfAStep(true);
  ASSERT_GT(kept, 0) << "the allocator reported nothing";
  EXPECT_LT(recomputed, kept * 7 / 10) << "kept " << kept << " bytes, recomputed " << recomputed;
}

}  // namespace
}  // namespace accel::rt::train
