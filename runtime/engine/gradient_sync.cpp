#include "runtime/engine/gradient_sync.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

namespace accel::rt::train {
namespace {

class DdpSync final : public GradientSync {
 public:
  DdpSync(std::unique_ptr<Reducer> reducer, std::vector<std::pair<std::string, at::Tensor>> named)
      : reducer_(std::move(reducer)), named_(std::move(named)), fault_(TestFaultFromEnvironment()) {}
  void PrepareForBackward(bool sync) override {
    syncing_ = sync;
    reducer_->PrepareForBackward(sync);
  }
  void Finalize() override {
    if (!syncing_) return;
    reducer_->Finalize();
    if (fault_ == TestFault::kGradScale) {
      at::NoGradGuard no_grad;
      for (auto& [name, parameter] : named_) {
        if (parameter.grad().defined()) parameter.mutable_grad().mul_(kFaultGradScale);
      }
    }
  }

 private:
  std::unique_ptr<Reducer> reducer_;
  std::vector<std::pair<std::string, at::Tensor>> named_;
  TestFault fault_;
  bool syncing_ = false;
};

}  // namespace

std::unique_ptr<GradientSync> MakeDdpSync(std::unique_ptr<Reducer> reducer,
                                          std::vector<std::pair<std::string, at::Tensor>> named_parameters) {
  return std::make_unique<DdpSync>(std::move(reducer), std::move(named_parameters));
}

}  // namespace accel::rt::train
