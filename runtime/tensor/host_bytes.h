#ifndef ACCEL_RUNTIME_TENSOR_HOST_BYTES_H_
#define ACCEL_RUNTIME_TENSOR_HOST_BYTES_H_

// What readers of a tensor's bytes (checkpoint writers, digests) need from a tensor that may
// live on a GPU or be a strided view: its values as contiguous host memory.

#include <string_view>

#include <ATen/core/Tensor.h>

namespace accel::rt::tensor {

// The tensor itself (detached) when it is a contiguous CPU tensor, else a contiguous CPU copy
// of its values. Keep the result alive while its bytes are read.
at::Tensor HostContiguous(const at::Tensor& tensor);

// The bytes of a tensor HostContiguous returned.
std::string_view HostBytes(const at::Tensor& host);

}  // namespace accel::rt::tensor

#endif  // ACCEL_RUNTIME_TENSOR_HOST_BYTES_H_
