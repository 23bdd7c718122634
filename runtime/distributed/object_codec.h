#ifndef ACCEL_RUNTIME_DISTRIBUTED_OBJECT_CODEC_H_
#define ACCEL_RUNTIME_DISTRIBUTED_OBJECT_CODEC_H_

#include <string>
#include <string_view>

#include "runtime/distributed/value.h"

// The byte form of a Value that `gather_object` and `broadcast_object_list` send between ranks
// where Accelerate sends a pickle. Nothing in it is executable: it is a tagged tree of
// scalars, strings and tensors (dtype, shape, little-endian bytes), and the decoder checks
// every length against the bytes left.
namespace accel::rt::distributed {

// Tensors are copied to the CPU and made contiguous on the way in.
std::string EncodeValue(const Value& value);

// Throws OperationError on truncated or malformed bytes, or bytes left over.
Value DecodeValue(std::string_view bytes);

}  // namespace accel::rt::distributed

#endif  // ACCEL_RUNTIME_DISTRIBUTED_OBJECT_CODEC_H_
