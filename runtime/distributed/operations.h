#ifndef ACCEL_RUNTIME_DISTRIBUTED_OPERATIONS_H_
#define ACCEL_RUNTIME_DISTRIBUTED_OPERATIONS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>

#include "runtime/distributed/collectives.h"
#include "runtime/distributed/value.h"

namespace accel::rt::distributed {

struct DataOpsOptions {
  // Before each operation, every rank compares the layout of its data (kinds, keys, dtypes,
  // shapes) and the operation's arguments with every other rank's in one 24-byte all-gather,
  // so that a mismatch, or an argument one rank rejects, is an OperationError on every rank
  // naming each rank's problem, instead of a hang or silently mis-shaped data. Accelerate does
  // this only in debug mode; Accel always does, unless turned off here for a hot loop whose
  // layout is known to agree (then a rank that rejects its arguments leaves its peers
  // waiting for the group's timeout).
  bool verify_layout = true;
};

// Accelerate's collective data operations (catalog §5.2) on nested data, with its semantics,
// but built to move data in as few collectives as possible:
//  * all tensor leaves travel together: one byte buffer for gather and broadcast, one buffer
//    per reduction dtype for reduce, one shape exchange for pad_across_processes (Accelerate
//    runs one collective per leaf);
//  * staging buffers are kept and reused between calls (first touch of fresh pages is slow);
//  * objects of different sizes travel as lengths, then one padded all-gather;
//  * what Gloo cannot do (bfloat16, bool, AVG) is upcast, packed into bytes, or divided after.
// On a world of one process without a backend (Collectives::distributed() false, distributed
// type NO) each operation behaves as Accelerate's does there (mostly: returns its input).
//
// Every operation is collective: all ranks call it in the same order. Bad arguments (non-tensor
// leaves where tensors are required, tensors on the wrong device, integer means) are an
// OperationError on every rank, agreed before any data moves. Not thread-safe.
class DataOps {
 public:
  explicit DataOps(Collectives& collectives, DataOpsOptions options = {});

  int rank() const { return collectives_.rank(); }
  int world_size() const { return collectives_.world_size(); }

  // `gather`: every tensor becomes the concatenation of all ranks' copies along dim 0 (rank
  // order); 0-dim tensors count as shape [1]. Shapes must agree on every rank.
  Value Gather(const Value& data);
  // `gather_object`: a list of every rank's object in rank order, each rank's list (or tuple)
  // flattened one level; any other object is one element. (Accelerate's torch path would split
  // a string into characters; Accel follows its list-or-element rule everywhere.)
  Value GatherObject(const Value& object);
  // `broadcast`: every tensor overwritten in place by rank `from_process`'s copy; returns the
  // same structure. Receivers' tensors must have the source's shapes and dtypes.
  Value Broadcast(const Value& data, int from_process = 0);
  // `broadcast_object_list`: `objects` replaced in place by rank `from_process`'s list.
  void BroadcastObjectList(std::vector<Value>& objects, int from_process = 0);
  // `reduce`: a reduced copy of every tensor. `reduction` is `sum`, `mean` (sum, then divided
  // by the world size; integer tensors are an error, as in torch), `max`, `min`, or `none`,
  // which sums as Accelerate's does. Other strings are an error (Accelerate sums them).
  // `scale` multiplies the result (Accelerate applies it on XLA only; Accel everywhere). On a
  // world without a backend the copy is returned unreduced and unscaled, as in Accelerate.
  Value Reduce(const Value& data, std::string_view reduction = "mean", double scale = 1.0);
  // `pad_across_processes`: every tensor grown along `dim` to the largest size any rank has,
  // new elements set to `pad_index` (torch's type promotion applies: a bool tensor padded with
  // an int becomes int64), data first or (`pad_first`) last. A tensor already that large is
  // returned as is; a tensor `dim` does not index (0-dim ones included) is left unchanged.
  Value PadAcrossProcesses(const Value& data, int64_t dim = 0, const c10::Scalar& pad_index = 0,
                           bool pad_first = false);
  // `wait_for_everyone`: a barrier.
  void WaitForEveryone();

  // Every rank's `bytes`, in rank order, of whatever length each has: lengths first, then one
  // all-gather of buffers padded to the longest. A rank passing `failed` sends no bytes: it
  // gets an empty result and raises its own error; every other rank raises one naming it.
  std::vector<std::string> AllGatherBytes(std::string_view bytes, bool failed = false);

 private:
  // Runs `validate` (this rank's argument checks, which throw OperationError), then — unless
  // layout checks are off — exchanges a 24-byte header with every rank: the operation, a hash
  // of the data's layout and of `args`, and whether validation failed. If any rank failed or
  // any differs, every rank raises an OperationError naming each rank's problem, so a bad
  // argument on one rank never leaves the others waiting.
  void Agree(int op_code, const char* op_name, const Value& data, bool dims_only, const std::string& args,
             const std::function<void()>& validate);
  // Agree's header: the operation, the layout hash, whether validation failed, and the
  // payload's size in bytes (0 where the payload does not travel with it).
  static constexpr int64_t kHeaderLongs = 4;
  void FillHeader(int64_t* header, int op_code, const std::string& layout, const std::string& local_error,
                  int64_t payload_bytes);
  // Returns when every rank's header (`stride` longs apart in `all`) agrees with rank 0's and
  // none failed; otherwise every rank exchanges the details and raises the same OperationError.
  void Judge(const int64_t* all, int64_t stride, const char* op_name, const std::string& layout,
             const std::string& local_error, bool dims_only);
  // Gather with the layout check in the payload's own all-gather (see gather_inline_bytes_).
  Value GatherWithHeaders(const Value& data);
  // A reusable staging buffer of at least `bytes` bytes; `slot` tells buffers apart.
  at::Tensor Staging(size_t slot, int64_t bytes);

  Collectives& collectives_;
  DataOpsOptions options_;
  std::vector<at::Tensor> staging_;
  // How many payload bytes a gather's header frame carries: the largest payload of the previous
  // gather, which every rank read from the same headers, so every rank agrees on it; payloads up
  // to it travel with the layout check in one all-gather. Bounded, since every rank sends the
  // frame whatever its own payload.
  static constexpr int64_t kMaxInlineBytes = 64 << 10;
  int64_t gather_inline_bytes_ = 0;
};

}  // namespace accel::rt::distributed

#endif  // ACCEL_RUNTIME_DISTRIBUTED_OPERATIONS_H_
