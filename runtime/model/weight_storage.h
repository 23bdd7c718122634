#ifndef ACCEL_RUNTIME_MODEL_WEIGHT_STORAGE_H_
#define ACCEL_RUNTIME_MODEL_WEIGHT_STORAGE_H_

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

namespace accel::rt::train {

// Tensors whose shape outlives their bytes, as FSDP frees a unit's gathered parameters: a
// released tensor keeps its sizes, dtype and autograd identity, but its storage holds no bytes,
// so it costs no memory and must not be read until its bytes are allocated and filled again.
// What a rank holds of weights that rank 0 will send (cpu_ram_efficient_loading), and what
// stage 3 holds of a released unit. Both act on the whole storage, in place, so every view of
// it and every holder of the tensor sees the change. On the CPU or a device alike: the bytes come
// from the storage's own allocator.

// Frees the storage's bytes.
void ReleaseBytes(const at::Tensor& tensor);
// Gives the storage the bytes the tensor's sizes and strides need, uninitialised; a tensor
// that holds them already keeps its values.
void AllocateBytes(const at::Tensor& tensor);
// Whether the storage holds every byte the tensor reads.
bool HoldsBytes(const at::Tensor& tensor);

// A contiguous tensor on `device` of `sizes` and `dtype` whose storage holds no bytes yet: a
// weight's shape before its values exist (AllocateBytes gives it them).
at::Tensor ShapeOnly(at::IntArrayRef sizes, at::ScalarType dtype, c10::Device device = c10::kCPU);
// A contiguous tensor of `sizes` over `base`'s storage from element `offset` on, whether or
// not the storage holds those bytes now (ATen's views refuse a storage too small): how a
// parameter points into a flat buffer whose bytes come and go. Equal to
// base.view({-1}).narrow(0, offset, n).view(sizes) when they are there.
at::Tensor ViewOfStorage(const at::Tensor& base, int64_t offset, at::IntArrayRef sizes);

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_MODEL_WEIGHT_STORAGE_H_
