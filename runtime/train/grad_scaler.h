#ifndef ACCEL_RUNTIME_TRAIN_GRAD_SCALER_H_
#define ACCEL_RUNTIME_TRAIN_GRAD_SCALER_H_

#include <cstdint>
#include <functional>
#include <vector>

#include <ATen/core/Tensor.h>

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

// Dynamic loss scaling for fp16 training: the semantics of PyTorch 1.13's
// torch.cuda.amp.GradScaler (catalog §2.4 GradScalerKwargs, §5.3), written with plain ATen ops
// so it runs on any device (torch 1.13 has no CPU kernels for `_amp_update_scale_` and
// `_amp_foreach_non_finite_check_and_unscale_`).
//
// One iteration, as in torch:
//   Scale(loss).backward();  [UnscaleAndCheck(params); clip ...]  Step(params, opt_step);  Update();
//
// Data parallelism: the inf/NaN verdict must be the same on every rank, or ranks' weights
// diverge. Under DDP the gradients are already all-reduced when UnscaleAndCheck runs, so every
// rank sees the same values and reaches the same verdict; no extra collective is needed. A
// caller that unscales *before* reducing gradients (e.g. local clipping before a manual
// all-reduce) must OR found_inf() across ranks itself and pass the result to SetFoundInf()
// before Step(). The scaler itself never communicates.
//
// One scaler serves one optimizer (torch keeps a stage per optimizer; Accel has one).
namespace accel::rt::train {

// Accelerate's GradScalerKwargs, with torch's defaults. Not validated here: torch asserts
// growth_factor > 1 and backoff_factor < 1, which Accelerate leaves to torch (catalog §2.4 D);
// in Accel that belongs to the spec checker, so the runtime takes the values as given.
struct GradScalerOptions {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  bool enabled = true;
};

// Calling the methods out of order (unscaling twice, stepping twice, updating with no inf check
// since the last Update) is a bug in the training loop, not a user mistake: like torch's
// RuntimeError it stops the process, here with llvm::report_fatal_error naming the call.
class GradScaler {
 public:
  // The scale starts as `init_scale` rounded to fp32 (torch keeps it in a float32 tensor) and
  // the growth tracker at 0.
  explicit GradScaler(GradScalerOptions options = {});

  // `loss` multiplied by a one-element fp32 tensor holding the scale, on `loss`'s device — as
  // torch does, so a 0-dim loss comes back with shape [1] and an fp16 loss comes back fp32.
  // Disabled: `loss` itself.
  at::Tensor Scale(const at::Tensor& loss) const;

  // Unscales the defined `.grad` of every tensor in `parameters` in place, multiplying by the
  // fp32 reciprocal of the scale (computed in double, then rounded to fp32); bf16 gradients are
  // multiplied in fp32 and rounded back once. Sparse gradients act on their values. Returns
  // whether any gradient held an inf or NaN *before* unscaling; the verdict is kept for Step()
  // and Update(). fp16 gradients are a fatal error ("Attempting to unscale FP16 gradients", as
  // torch's unscale_). Fatal when called twice before Update(), or after Step().
  // Disabled: does nothing and returns false.
  bool UnscaleAndCheck(const std::vector<at::Tensor>& parameters);

  // Replaces the verdict of the last UnscaleAndCheck(): the OR over ranks of found_inf() when
  // gradients were unscaled before being reduced. Fatal unless called after UnscaleAndCheck()
  // and before Step(). Disabled: does nothing.
  void SetFoundInf(bool found_inf);

  // The verdict recorded since the last Update(); false when none is recorded or disabled.
  bool found_inf() const { return found_inf_; }

  // Unscales `parameters` unless UnscaleAndCheck() already ran this iteration, then calls
  // `optimizer_step` unless an inf/NaN was found. Returns whether the optimizer stepped.
  // Fatal when called twice before Update(). Disabled: calls `optimizer_step` and returns true.
  bool Step(const std::vector<at::Tensor>& parameters, const std::function<void()>& optimizer_step);

  // torch's `_amp_update_scale_`, in fp32: with an inf/NaN found, scale *= backoff_factor and
  // the growth tracker is reset to 0; otherwise the tracker counts one more clean step, and on
  // reaching growth_interval the scale *= growth_factor (kept as it was when that product
  // overflows fp32 to inf) and the tracker is reset to 0. Each product is computed in double
  // and rounded to fp32. Then a new iteration begins. Fatal when no UnscaleAndCheck() or Step()
  // ran since the last Update(). Disabled: does nothing.
  void Update();

  // The current scale (an fp32 value); 1.0 when disabled, as torch's get_scale().
  double scale() const;
  // Consecutive clean steps since the scale last changed or backed off; 0 when disabled.
  int64_t growth_tracker() const;
  bool enabled() const { return options_.enabled; }
  const GradScalerOptions& options() const { return options_; }

  // torch's GradScaler.state_dict(): `scale` (number), `growth_factor`, `backoff_factor`
  // (numbers), `growth_interval`, `_growth_tracker` (integers). Empty when disabled. Like
  // torch's, meant to be taken after Update().
  llvm::json::Object StateDict() const;

  // torch's load_state_dict(): sets the scale, the factors, the interval and the tracker from
  // `state`. An empty object, a missing key or a key of the wrong type (`_growth_tracker`
  // must fit torch's int32 tracker) is an error naming the key, and changes nothing. Extra keys
  // are ignored. Disabled: does nothing and succeeds, as torch's.
  llvm::Error LoadStateDict(const llvm::json::Object& state);

 private:
  // Where the iteration stands (torch's OptState).
  enum class Stage { kReady, kUnscaled, kStepped };

  GradScalerOptions options_;
  float scale_;
  // int32, as torch's tracker tensor.
  int32_t growth_tracker_ = 0;
  Stage stage_ = Stage::kReady;
  bool found_inf_ = false;
};

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_TRAIN_GRAD_SCALER_H_
