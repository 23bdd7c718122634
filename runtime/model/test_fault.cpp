#include "runtime/model/test_fault.h"

#include <cstdlib>
#include <stdexcept>
#include <string_view>

namespace accel::rt::train {

TestFault TestFaultFromEnvironment() {
  const char* value = std::getenv("ACCEL_TEST_FAULT");
  std::string_view fault = value == nullptr ? "" : value;
  if (fault.empty()) return TestFault::kNone;
  if (fault == "grad_scale") return TestFault::kGradScale;
  if (fault == "shard_offset") return TestFault::kShardOffset;
  if (fault == "slice_offset") return TestFault::kSliceOffset;
  if (fault == "tp_backward") return TestFault::kTpBackward;
  if (fault == "tp_offset") return TestFault::kTpOffset;
  throw std::invalid_argument(
      "ACCEL_TEST_FAULT must be grad_scale, shard_offset, slice_offset, tp_backward or tp_offset (a test "
      "hook)");
}

}  // namespace accel::rt::train
