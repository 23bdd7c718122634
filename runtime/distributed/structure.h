#ifndef ACCEL_RUNTIME_DISTRIBUTED_STRUCTURE_H_
#define ACCEL_RUNTIME_DISTRIBUTED_STRUCTURE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <c10/core/Device.h>

#include "runtime/distributed/value.h"

// The local (non-collective) operations on nested data of catalog §5.1, with Accelerate's
// semantics. Containers are rebuilt with their own kind, keys and type name; leaves an
// operation does not handle come back unchanged unless the operation says otherwise.
namespace accel::rt::distributed {

struct ApplyOptions {
  // Which leaves `func` applies to (Accelerate's `test_type`); tensors by default.
  std::function<bool(const Value&)> accepts = [](const Value& leaf) { return leaf.is_tensor(); };
  // Other leaves: an OperationError naming `function_name` when set, else returned unchanged.
  bool error_on_other_type = false;
  std::string function_name = "recursively_apply";
};

// `recursively_apply`: rebuilds lists, tuples, named tuples and dicts from their mapped
// elements (key order kept) and calls `func` on every accepted leaf.
Value RecursivelyApply(const Value& data, const std::function<Value(const Value&)>& func,
                       const ApplyOptions& options = {});

// `send_to_device`: every tensor moved with `.to(device, non_blocking)`; in dicts, values whose
// key is in `skip_keys` stay where they are (at every level).
Value SendToDevice(const Value& data, const c10::Device& device, bool non_blocking = false,
                   const std::vector<std::string>& skip_keys = {});

// `slice_tensors` with `slice(start, stop, step)` on the first dimension: views, no copies.
// Python's rules apply: negative indices count from the end, out-of-range bounds are clamped.
Value SliceTensors(const Value& data, int64_t start, int64_t stop, int64_t step = 1);

// `concatenate`: `data` is a list of structures with identical layout; tensors are
// concatenated along `dim` position by position. A single non-tensor element is returned as
// is; several non-tensor leaves are an error, as is a key missing from a later element.
Value Concatenate(const std::vector<Value>& data, int64_t dim = 0);

// `convert_to_fp32`: float16 and bfloat16 tensors become float32; everything else, float64 and
// integers included, is untouched.
Value ConvertToFp32(const Value& data);

// `listify`: tensors become nested lists of numbers (bfloat16 through float32); a 0-dim tensor
// becomes a scalar.
Value Listify(const Value& data);

// `find_batch_size`: follows the first element (or first key) down to a tensor and returns its
// first dimension. An empty container or a non-tensor leaf is an error.
int64_t FindBatchSize(const Value& data);

}  // namespace accel::rt::distributed

#endif  // ACCEL_RUNTIME_DISTRIBUTED_STRUCTURE_H_
