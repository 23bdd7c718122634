// GradScaler against hand-computed sequences: torch.cuda.amp.GradScaler's unscale, skip and
// scale-update rules (catalog §2.4, §5.3), in fp32 as torch keeps the scale.
#include "runtime/train/grad_scaler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "llvm/Support/FormatVariadic.h"

namespace accel::rt::train {
namespace {

namespace json = llvm::json;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// A parameter whose .grad holds `grad`.
at::Tensor ParameterWithGrad(const at::Tensor& grad) {
  at::Tensor parameter = at::zeros_like(grad);
  parameter.mutable_grad() = grad.clone();
  return parameter;
}

at::Tensor ParameterWithGrad(std::vector<float> grad) {
  return ParameterWithGrad(at::tensor(grad, at::kFloat));
}

std::vector<float> Values(const at::Tensor& tensor) {
  at::Tensor flat = tensor.to(at::kFloat).contiguous();
  return std::vector<float>(flat.data_ptr<float>(), flat.data_ptr<float>() + flat.numel());
}

// One full iteration on gradients `grad`: Step then Update. Returns whether it stepped.
bool Iterate(GradScaler& scaler, std::vector<float> grad, int* optimizer_steps) {
  std::vector<at::Tensor> parameters{ParameterWithGrad(std::move(grad))};
  bool stepped = scaler.Step(parameters, [&] { ++*optimizer_steps; });
  scaler.Update();
  return stepped;
}

std::string ErrorText(llvm::Error error) { return llvm::toString(std::move(error)); }

TEST(GradScaler, StartsAtInitScaleWithTorchDefaults) {
  GradScaler scaler;
  EXPECT_EQ(scaler.scale(), 65536.0);
  EXPECT_EQ(scaler.growth_tracker(), 0);
  EXPECT_EQ(scaler.options().growth_factor, 2.0);
  EXPECT_EQ(scaler.options().backoff_factor, 0.5);
  EXPECT_EQ(scaler.options().growth_interval, 2000);
  EXPECT_TRUE(scaler.enabled());
}

TEST(GradScaler, ScaleMultipliesByAOneElementFp32Tensor) {
  GradScaler scaler({.init_scale = 4.0});
  at::Tensor scaled = scaler.Scale(at::scalar_tensor(2.5, at::kFloat));
  // torch multiplies by its shape-[1] scale tensor, so a 0-dim loss comes back with shape [1].
  EXPECT_EQ(scaled.sizes().vec(), std::vector<int64_t>{1});
  EXPECT_EQ(Values(scaled), std::vector<float>{10.0f});
  // An fp16 loss is promoted to fp32: 2 × 65536 = 131072 would be inf in fp16 (max 65504).
  GradScaler fp16_scaler;
  at::Tensor half_scaled = fp16_scaler.Scale(at::scalar_tensor(2.0, at::kHalf));
  EXPECT_EQ(half_scaled.scalar_type(), at::kFloat);
  EXPECT_EQ(Values(half_scaled), std::vector<float>{131072.0f});
}

TEST(GradScaler, UnscaleMultipliesByTheFp32ReciprocalExactly) {
  GradScaler scaler;  // 65536 = 2^16: every quotient below is exact
  std::vector<at::Tensor> parameters{ParameterWithGrad({65536.0f, 196608.0f, 1.0f, -2.5f}),
                                     ParameterWithGrad({-131072.0f}),
                                     at::zeros({2})};  // the last has no grad
  EXPECT_FALSE(scaler.UnscaleAndCheck(parameters));
  EXPECT_EQ(Values(parameters[0].grad()), (std::vector<float>{1.0f, 3.0f, 0x1p-16f, -0x1.4p-15f}));
  EXPECT_EQ(Values(parameters[1].grad()), std::vector<float>{-2.0f});
  EXPECT_FALSE(parameters[2].grad().defined());
  EXPECT_FALSE(scaler.found_inf());
}

TEST(GradScaler, UnscaleRoundsLikeTorchForAScaleThatIsNotAPowerOfTwo) {
  // inv = fp32(1 / 3.0) = 0.3333333432674408. 5 × inv = 1.666666716337204 rounds to the fp32
  // 1.6666667461395264, where 5 / 3 would round to 1.6666666269302368.
  GradScaler scaler({.init_scale = 3.0});
  std::vector<at::Tensor> fp32{ParameterWithGrad({5.0f})};
  scaler.UnscaleAndCheck(fp32);
  EXPECT_EQ(Values(fp32[0].grad()), std::vector<float>{1.6666667461395264f});
  EXPECT_NE(Values(fp32[0].grad()), std::vector<float>{5.0f / 3.0f});

  // fp64 gradients: 5 × (double)inv, exact in double.
  GradScaler fp64_scaler({.init_scale = 3.0});
  std::vector<at::Tensor> fp64{ParameterWithGrad(at::tensor({5.0}, at::kDouble))};
  fp64_scaler.UnscaleAndCheck(fp64);
  EXPECT_EQ(fp64[0].grad().item<double>(), 1.666666716337204);

  // bf16 gradients go through fp32: 1.6666667 rounds to the bf16 1.6640625. Rounding the
  // factor to bf16 first (0.333984375) would give 1.671875.
  GradScaler bf16_scaler({.init_scale = 3.0});
  std::vector<at::Tensor> bf16{ParameterWithGrad(at::tensor({5.0f}).to(at::kBFloat16))};
  bf16_scaler.UnscaleAndCheck(bf16);
  EXPECT_EQ(bf16[0].grad().scalar_type(), at::kBFloat16);
  EXPECT_EQ(Values(bf16[0].grad()), std::vector<float>{1.6640625f});
}

TEST(GradScaler, UnscaleFindsInfAndNaNInAnyGradient) {
  for (float bad : {kInf, -kInf, kNaN}) {
    GradScaler scaler({.init_scale = 2.0});
    std::vector<at::Tensor> parameters{ParameterWithGrad({4.0f}), ParameterWithGrad({1.0f, bad})};
    EXPECT_TRUE(scaler.UnscaleAndCheck(parameters)) << bad;
    EXPECT_TRUE(scaler.found_inf());
    // The gradients are unscaled all the same, as torch does.
    EXPECT_EQ(Values(parameters[0].grad()), std::vector<float>{2.0f});
    EXPECT_EQ(Values(parameters[1].grad())[0], 0.5f);
  }
}

TEST(GradScaler, CheckLooksAtTheScaledValuesBeforeUnscaling) {
  // After backing off below 1 the factor exceeds 1: 3e38 is finite, 3e38 × 4 is not.
  GradScaler scaler({.init_scale = 0.25});
  std::vector<at::Tensor> parameters{ParameterWithGrad({3e38f})};
  EXPECT_FALSE(scaler.UnscaleAndCheck(parameters));
  EXPECT_EQ(Values(parameters[0].grad()), std::vector<float>{kInf});
}

TEST(GradScaler, GrowsAfterGrowthIntervalFiniteSteps) {
  GradScaler scaler({.init_scale = 4.0, .growth_interval = 3});
  int optimizer_steps = 0;
  // (scale, tracker) after each Update: (4,1) (4,2) (8,0) (8,1) (8,2) (16,0) (16,1)
  const std::vector<std::pair<double, int64_t>> expected = {{4, 1}, {4, 2},  {8, 0}, {8, 1},
                                                            {8, 2}, {16, 0}, {16, 1}};
  for (const auto& [scale, tracker] : expected) {
    EXPECT_TRUE(Iterate(scaler, {1.0f}, &optimizer_steps));
    EXPECT_EQ(scaler.scale(), scale);
    EXPECT_EQ(scaler.growth_tracker(), tracker);
  }
  EXPECT_EQ(optimizer_steps, 7);
}

TEST(GradScaler, BacksOffOnInfAndOnNaNAndSkipsTheOptimizerStep) {
  GradScaler scaler({.init_scale = 1024.0, .growth_interval = 3});
  int optimizer_steps = 0;
  EXPECT_TRUE(Iterate(scaler, {1.0f}, &optimizer_steps));  // (1024, 1)
  EXPECT_TRUE(Iterate(scaler, {1.0f}, &optimizer_steps));  // (1024, 2)
  EXPECT_FALSE(Iterate(scaler, {kInf}, &optimizer_steps));
  EXPECT_EQ(scaler.scale(), 512.0);
  EXPECT_EQ(scaler.growth_tracker(), 0);
  EXPECT_FALSE(Iterate(scaler, {1.0f, kNaN}, &optimizer_steps));
  EXPECT_EQ(scaler.scale(), 256.0);
  EXPECT_EQ(scaler.growth_tracker(), 0);
  EXPECT_EQ(optimizer_steps, 2);
}

TEST(GradScaler, AnInfResetsTheTrackerSoGrowthWaitsAFullIntervalAgain) {
  GradScaler scaler({.init_scale = 8.0, .growth_interval = 3});
  int optimizer_steps = 0;
  Iterate(scaler, {1.0f}, &optimizer_steps);  // (8, 1)
  Iterate(scaler, {1.0f}, &optimizer_steps);  // (8, 2): one step short of growing
  Iterate(scaler, {kInf}, &optimizer_steps);  // (4, 0)
  Iterate(scaler, {1.0f}, &optimizer_steps);  // (4, 1)
  Iterate(scaler, {1.0f}, &optimizer_steps);  // (4, 2)
  EXPECT_EQ(scaler.scale(), 4.0);
  EXPECT_EQ(scaler.growth_tracker(), 2);
  Iterate(scaler, {1.0f}, &optimizer_steps);  // (8, 0)
  EXPECT_EQ(scaler.scale(), 8.0);
  EXPECT_EQ(scaler.growth_tracker(), 0);
  EXPECT_EQ(optimizer_steps, 5);
}

TEST(GradScaler, UpdateRoundsTheScaleToFp32) {
  // 3 × 0.1 = 0.30000000000000004 in double, stored as the fp32 0.30000001192092896.
  GradScaler scaler({.init_scale = 3.0, .backoff_factor = 0.1});
  int optimizer_steps = 0;
  Iterate(scaler, {kInf}, &optimizer_steps);
  EXPECT_EQ(scaler.scale(), 0.30000001192092896);
  // 0.1 rounds to fp32 0.100000001490116 as an init scale.
  EXPECT_EQ(GradScaler({.init_scale = 0.1}).scale(), 0.10000000149011612);
}

TEST(GradScaler, NeverGrowsTheScaleIntoInfButStillResetsTheTracker) {
  // 2^127 × 2 = 2^128 overflows fp32: the scale stays, the tracker starts over.
  GradScaler scaler({.init_scale = 0x1p127, .growth_interval = 2});
  int optimizer_steps = 0;
  Iterate(scaler, {0.0f}, &optimizer_steps);
  Iterate(scaler, {0.0f}, &optimizer_steps);
  EXPECT_EQ(scaler.scale(), 0x1p127);
  EXPECT_EQ(scaler.growth_tracker(), 0);
  EXPECT_EQ(optimizer_steps, 2);
}

TEST(GradScaler, StepUsesAnEarlierUnscaleAndDoesNotUnscaleAgain) {
  GradScaler scaler({.init_scale = 4.0});
  std::vector<at::Tensor> parameters{ParameterWithGrad({8.0f})};
  EXPECT_FALSE(scaler.UnscaleAndCheck(parameters));
  // e.g. gradient clipping happens here, on unscaled values
  int optimizer_steps = 0;
  EXPECT_TRUE(scaler.Step(parameters, [&] { ++optimizer_steps; }));
  EXPECT_EQ(Values(parameters[0].grad()), std::vector<float>{2.0f});
  EXPECT_EQ(optimizer_steps, 1);
  scaler.Update();
}

TEST(GradScaler, SetFoundInfCarriesTheVerdictOfAllRanks) {
  // This rank's gradients are finite; another rank's were not.
  GradScaler scaler({.init_scale = 64.0});
  std::vector<at::Tensor> parameters{ParameterWithGrad({64.0f})};
  EXPECT_FALSE(scaler.UnscaleAndCheck(parameters));
  bool other_rank_found_inf = true;  // what an all-reduce with MAX would bring back
  scaler.SetFoundInf(scaler.found_inf() || other_rank_found_inf);
  int optimizer_steps = 0;
  EXPECT_FALSE(scaler.Step(parameters, [&] { ++optimizer_steps; }));
  scaler.Update();
  EXPECT_EQ(optimizer_steps, 0);
  EXPECT_EQ(scaler.scale(), 32.0);
  EXPECT_FALSE(scaler.found_inf());  // a new iteration starts clean
}

TEST(GradScaler, DisabledScalerIsTheIdentity) {
  GradScaler scaler({.init_scale = 4.0, .growth_interval = 1, .enabled = false});
  at::Tensor loss = at::scalar_tensor(2.5, at::kFloat);
  EXPECT_TRUE(scaler.Scale(loss).is_same(loss));
  std::vector<at::Tensor> parameters{ParameterWithGrad({8.0f, kInf})};
  EXPECT_FALSE(scaler.UnscaleAndCheck(parameters));
  EXPECT_FALSE(scaler.UnscaleAndCheck(parameters));  // no stage to violate
  scaler.SetFoundInf(true);
  EXPECT_FALSE(scaler.found_inf());
  EXPECT_EQ(Values(parameters[0].grad())[0], 8.0f);
  int optimizer_steps = 0;
  EXPECT_TRUE(scaler.Step(parameters, [&] { ++optimizer_steps; }));  // steps despite the inf
  EXPECT_TRUE(scaler.Step(parameters, [&] { ++optimizer_steps; }));
  scaler.Update();
  scaler.Update();
  EXPECT_EQ(optimizer_steps, 2);
  EXPECT_EQ(scaler.scale(), 1.0);
  EXPECT_EQ(scaler.growth_tracker(), 0);
  EXPECT_TRUE(scaler.StateDict().empty());
  EXPECT_EQ(ErrorText(scaler.LoadStateDict(json::Object{{"scale", "not a number"}})),
            "");  // a no-op, as torch's
}

TEST(GradScaler, StateDictUsesTorchKeys) {
  GradScaler scaler(
      {.init_scale = 1024.0, .growth_factor = 4.0, .backoff_factor = 0.25, .growth_interval = 5});
  int optimizer_steps = 0;
  Iterate(scaler, {kInf}, &optimizer_steps);
  Iterate(scaler, {1.0f}, &optimizer_steps);
  Iterate(scaler, {1.0f}, &optimizer_steps);
  json::Value state(scaler.StateDict());
  EXPECT_EQ(state, json::Value(json::Object{{"scale", 256.0},
                                            {"growth_factor", 4.0},
                                            {"backoff_factor", 0.25},
                                            {"growth_interval", 5},
                                            {"_growth_tracker", 2}}));
}

TEST(GradScaler, StateDictRoundTripsThroughJsonText) {
  GradScaler saved({.init_scale = 3.0, .growth_factor = 3.0, .backoff_factor = 0.1, .growth_interval = 4});
  int optimizer_steps = 0;
  Iterate(saved, {kInf}, &optimizer_steps);  // 0.30000001192092896
  Iterate(saved, {1.0f}, &optimizer_steps);
  std::string text = llvm::formatv("{0}", json::Value(saved.StateDict())).str();
  llvm::Expected<json::Value> parsed = json::parse(text);
  ASSERT_TRUE(static_cast<bool>(parsed)) << llvm::toString(parsed.takeError());

  GradScaler loaded;  // different options: the state replaces them
  ASSERT_EQ(ErrorText(loaded.LoadStateDict(*parsed->getAsObject())), "");
  EXPECT_EQ(json::Value(loaded.StateDict()), json::Value(saved.StateDict()));
  EXPECT_EQ(loaded.scale(), 0.30000001192092896);
  EXPECT_EQ(loaded.growth_tracker(), 1);
  // Both continue identically: three more clean steps grow by 3 in fp32.
  for (int i = 0; i < 3; ++i) {
    Iterate(saved, {1.0f}, &optimizer_steps);
    Iterate(loaded, {1.0f}, &optimizer_steps);
  }
  EXPECT_EQ(loaded.scale(), static_cast<double>(static_cast<float>(0.30000001192092896 * 3.0)));
  EXPECT_EQ(loaded.scale(), saved.scale());
  EXPECT_EQ(loaded.growth_tracker(), 0);
}

TEST(GradScaler, LoadStateDictRejectsBadStateAndChangesNothing) {
  const json::Object good{{"scale", 256.0},
                          {"growth_factor", 4.0},
                          {"backoff_factor", 0.25},
                          {"growth_interval", 5},
                          {"_growth_tracker", 2}};
  struct Case {
    const char* key;
    json::Value value;  // null: the key is removed
    const char* message;
  };
  const std::vector<Case> cases = {
      {"scale", nullptr, "grad scaler state: `scale` is missing"},
      {"scale", "256", "grad scaler state: `scale` is not a number"},
      {"growth_factor", true, "grad scaler state: `growth_factor` is not a number"},
      {"backoff_factor", nullptr, "grad scaler state: `backoff_factor` is missing"},
      {"growth_interval", 5.5, "grad scaler state: `growth_interval` is not an integer"},
      {"growth_interval", "5", "grad scaler state: `growth_interval` is not an integer"},
      {"_growth_tracker", nullptr, "grad scaler state: `_growth_tracker` is missing"},
      {"_growth_tracker", int64_t{1} << 31,
       "grad scaler state: `_growth_tracker` 2147483648 does not fit the int32 tracker"},
  };
  for (const Case& c : cases) {
    json::Object state = good;
    if (c.value.kind() == json::Value::Null) {
      state.erase(c.key);
    } else {
      state[c.key] = c.value;
    }
    GradScaler scaler({.init_scale = 8.0, .growth_interval = 3});
    EXPECT_EQ(ErrorText(scaler.LoadStateDict(state)), c.message);
    EXPECT_EQ(scaler.scale(), 8.0) << c.key;
    EXPECT_EQ(scaler.options().growth_factor, 2.0) << c.key;
    EXPECT_EQ(scaler.options().backoff_factor, 0.5) << c.key;
    EXPECT_EQ(scaler.options().growth_interval, 3) << c.key;
    EXPECT_EQ(scaler.growth_tracker(), 0) << c.key;
  }
  GradScaler scaler;
  EXPECT_EQ(ErrorText(scaler.LoadStateDict(json::Object{})),
            "grad scaler state: the state is empty, possibly because it was saved from a disabled scaler");
  // Integral doubles are integers (a writer may print 5.0).
  json::Object integral = good;
  integral["growth_interval"] = 5.0;
  EXPECT_EQ(ErrorText(scaler.LoadStateDict(integral)), "");
  EXPECT_EQ(scaler.options().growth_interval, 5);
}

// Out-of-order calls are bugs in the training loop and stop the process, as torch raises.
class GradScalerDeathTest : public testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
  std::vector<at::Tensor> parameters_{ParameterWithGrad({1.0f})};
};

TEST_F(GradScalerDeathTest, UnscalingTwiceBeforeUpdate) {
  GradScaler scaler;
  scaler.UnscaleAndCheck(parameters_);
  EXPECT_DEATH(scaler.UnscaleAndCheck(parameters_),
               "grad scaler: UnscaleAndCheck\\(\\) has already been called since the last Update\\(\\)");
}

TEST_F(GradScalerDeathTest, UnscalingAfterStep) {
  GradScaler scaler;
  scaler.Step(parameters_, [] {});
  EXPECT_DEATH(scaler.UnscaleAndCheck(parameters_),
               "grad scaler: UnscaleAndCheck\\(\\) is being called after Step\\(\\)");
}

TEST_F(GradScalerDeathTest, SteppingTwiceBeforeUpdate) {
  GradScaler scaler;
  scaler.Step(parameters_, [] {});
  EXPECT_DEATH(scaler.Step(parameters_, [] {}),
               "grad scaler: Step\\(\\) has already been called since the last Update\\(\\)");
}

TEST_F(GradScalerDeathTest, UpdatingWithoutAnInfCheck) {
  GradScaler scaler;
  EXPECT_DEATH(scaler.Update(), "grad scaler: no inf checks were recorded prior to Update\\(\\)");
  scaler.Step(parameters_, [] {});
  scaler.Update();
  EXPECT_DEATH(scaler.Update(), "grad scaler: no inf checks were recorded prior to Update\\(\\)");
}

TEST_F(GradScalerDeathTest, SettingFoundInfOutsideUnscaledStage) {
  GradScaler scaler;
  EXPECT_DEATH(scaler.SetFoundInf(true),
               "grad scaler: SetFoundInf\\(\\) must come after UnscaleAndCheck\\(\\)");
}

TEST_F(GradScalerDeathTest, UnscalingFp16Gradients) {
  GradScaler scaler;
  std::vector<at::Tensor> parameters{ParameterWithGrad(at::tensor({1.0f}).to(at::kHalf))};
  EXPECT_DEATH(scaler.UnscaleAndCheck(parameters), "grad scaler: Attempting to unscale FP16 gradients");
}

}  // namespace
}  // namespace accel::rt::train
