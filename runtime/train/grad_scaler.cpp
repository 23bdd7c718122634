#include "runtime/train/grad_scaler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include <ATen/ATen.h>

#include "llvm/Support/ErrorHandling.h"

namespace accel::rt::train {
namespace {

namespace json = llvm::json;

[[noreturn]] void Misuse(const char* message) {
  llvm::report_fatal_error(llvm::Twine("grad scaler: ") + message, /*gen_crash_diag=*/false);
}

llvm::Error StateError(const std::string& message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "grad scaler state: %s", message.c_str());
}

// Multiplies `values` in place by `inv_scale` the way torch's unscale kernel does: fp32 and
// fp64 at their own precision (an fp32 factor is exact in either), bf16 through fp32 with one
// rounding back — multiplying a bf16 tensor by a scalar would round the factor to bf16 first.
void MultiplyInPlace(at::Tensor& values, float inv_scale) {
  if (values.scalar_type() == at::kBFloat16) {
    values.copy_(values.to(at::kFloat).mul_(static_cast<double>(inv_scale)));
  } else {
    values.mul_(static_cast<double>(inv_scale));
  }
}

}  // namespace

GradScaler::GradScaler(GradScalerOptions options)
    : options_(options), scale_(static_cast<float>(options.init_scale)) {}

at::Tensor GradScaler::Scale(const at::Tensor& loss) const {
  if (!options_.enabled) return loss;
  // A one-element fp32 tensor, not a scalar: a scalar would keep an fp16 loss in fp16, where
  // the default scale of 65536 already overflows.
  return loss * at::full({1}, scale_, loss.options().dtype(at::kFloat));
}

bool GradScaler::UnscaleAndCheck(const std::vector<at::Tensor>& parameters) {
  if (!options_.enabled) return false;
  if (stage_ == Stage::kUnscaled) Misuse("UnscaleAndCheck() has already been called since the last Update()");
  if (stage_ == Stage::kStepped) Misuse("UnscaleAndCheck() is being called after Step()");

  // torch: the fp64 reciprocal of the fp32 scale, rounded to fp32.
  const float inv_scale = static_cast<float>(1.0 / static_cast<double>(scale_));
  at::NoGradGuard no_grad;
  // One flag per device, read once at the end: one host sync per device, not per gradient.
  std::vector<std::pair<at::Device, at::Tensor>> non_finite;
  for (const at::Tensor& parameter : parameters) {
    at::Tensor grad = parameter.grad();
    if (!grad.defined()) continue;
    if (grad.scalar_type() == at::kHalf) Misuse("Attempting to unscale FP16 gradients");
    at::Tensor values = grad.is_sparse() ? grad._values() : grad;
    // Checked before multiplying: with a scale below 1 the product of a finite value may overflow.
    at::Tensor flag = at::isfinite(values).logical_not().any();
    auto it = std::find_if(non_finite.begin(), non_finite.end(),
                           [&](const auto& entry) { return entry.first == values.device(); });
    if (it == non_finite.end()) {
      non_finite.emplace_back(values.device(), flag);
    } else {
      it->second = it->second.logical_or(flag);
    }
    // torch leaves the values untouched when the factor is exactly 1.
    if (inv_scale != 1.0f) MultiplyInPlace(values, inv_scale);
  }
  found_inf_ = false;
  for (const auto& [device, flag] : non_finite) found_inf_ = found_inf_ || flag.item<bool>();
  stage_ = Stage::kUnscaled;
  return found_inf_;
}

void GradScaler::SetFoundInf(bool found_inf) {
  if (!options_.enabled) return;
  if (stage_ != Stage::kUnscaled) Misuse("SetFoundInf() must come after UnscaleAndCheck() and before Step()");
  found_inf_ = found_inf;
}

bool GradScaler::Step(const std::vector<at::Tensor>& parameters,
                      const std::function<void()>& optimizer_step) {
  if (!options_.enabled) {
    optimizer_step();
    return true;
  }
  if (stage_ == Stage::kStepped) Misuse("Step() has already been called since the last Update()");
  if (stage_ == Stage::kReady) UnscaleAndCheck(parameters);
  stage_ = Stage::kStepped;
  if (found_inf_) return false;
  optimizer_step();
  return true;
}

void GradScaler::Update() {
  if (!options_.enabled) return;
  if (stage_ == Stage::kReady) Misuse("no inf checks were recorded prior to Update()");
  // The products are formed in double (fp32 scale times a double factor) and stored as fp32,
  // exactly as the kernel's float* target receives them.
  if (found_inf_) {
    scale_ = static_cast<float>(static_cast<double>(scale_) * options_.backoff_factor);
    growth_tracker_ = 0;
  } else {
    // The tracker counts this clean step before it is compared with the interval.
    // In 64 bits: with an interval the tracker never reaches, int32 + 1 must not overflow.
    int64_t successful = static_cast<int64_t>(growth_tracker_) + 1;
    if (successful == options_.growth_interval) {
      float grown = static_cast<float>(static_cast<double>(scale_) * options_.growth_factor);
      // Never grow into inf: the scale stays, and the count starts over all the same.
      if (std::isfinite(grown)) scale_ = grown;
      growth_tracker_ = 0;
    } else {
      growth_tracker_ = static_cast<int32_t>(successful);
    }
  }
  stage_ = Stage::kReady;
  found_inf_ = false;
}

double GradScaler::scale() const { return options_.enabled ? static_cast<double>(scale_) : 1.0; }

int64_t GradScaler::growth_tracker() const { return options_.enabled ? growth_tracker_ : 0; }

json::Object GradScaler::StateDict() const {
  if (!options_.enabled) return {};
  return json::Object{{"scale", static_cast<double>(scale_)},
                      {"growth_factor", options_.growth_factor},
                      {"backoff_factor", options_.backoff_factor},
                      {"growth_interval", options_.growth_interval},
                      {"_growth_tracker", static_cast<int64_t>(growth_tracker_)}};
}

llvm::Error GradScaler::LoadStateDict(const json::Object& state) {
  if (!options_.enabled) return llvm::Error::success();
  if (state.empty()) {
    return StateError("the state is empty, possibly because it was saved from a disabled scaler");
  }
  // Every key is read and checked before anything is set, so a bad state changes nothing.
  auto number = [&](llvm::StringRef key) -> llvm::Expected<double> {
    const json::Value* value = state.get(key);
    if (value == nullptr) return StateError(("`" + key + "` is missing").str());
    auto result = value->getAsNumber();
    if (!result) return StateError(("`" + key + "` is not a number").str());
    return *result;
  };
  auto integer = [&](llvm::StringRef key) -> llvm::Expected<int64_t> {
    const json::Value* value = state.get(key);
    if (value == nullptr) return StateError(("`" + key + "` is missing").str());
    // Also accepts a double with an integral value (`2000.0`); rejects `2000.5` and booleans.
    auto result = value->getAsInteger();
    if (!result) return StateError(("`" + key + "` is not an integer").str());
    return *result;
  };
  llvm::Expected<double> scale = number("scale");
  if (!scale) return scale.takeError();
  llvm::Expected<double> growth_factor = number("growth_factor");
  if (!growth_factor) return growth_factor.takeError();
  llvm::Expected<double> backoff_factor = number("backoff_factor");
  if (!backoff_factor) return backoff_factor.takeError();
  llvm::Expected<int64_t> growth_interval = integer("growth_interval");
  if (!growth_interval) return growth_interval.takeError();
  llvm::Expected<int64_t> tracker = integer("_growth_tracker");
  if (!tracker) return tracker.takeError();
  if (*tracker < std::numeric_limits<int32_t>::min() || *tracker > std::numeric_limits<int32_t>::max()) {
    return StateError("`_growth_tracker` " + std::to_string(*tracker) + " does not fit the int32 tracker");
  }

  scale_ = static_cast<float>(*scale);
  options_.growth_factor = *growth_factor;
  options_.backoff_factor = *backoff_factor;
  options_.growth_interval = *growth_interval;
  growth_tracker_ = static_cast<int32_t>(*tracker);
  return llvm::Error::success();
}

}  // namespace accel::rt::train
