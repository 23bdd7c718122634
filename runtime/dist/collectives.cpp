#include "runtime/dist/collectives.h"

namespace accel::rt::dist {
namespace {

class SingleProcess final : public Collectives {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  void AllReduceSum(std::vector<at::Tensor>&) override {}
  void Broadcast(std::vector<at::Tensor>&, int) override {}
  void Barrier() override {}
};

}  // namespace

std::unique_ptr<Collectives> MakeSingleProcess() { return std::make_unique<SingleProcess>(); }

}  // namespace accel::rt::dist
