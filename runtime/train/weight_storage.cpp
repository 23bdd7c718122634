#include "runtime/train/weight_storage.h"

#include <ATen/EmptyTensor.h>
#include <ATen/native/Resize.h>

namespace accel::rt::train {
namespace {

size_t NeededBytes(const at::Tensor& tensor) {
  return at::detail::computeStorageNbytes(tensor.sizes(), tensor.strides(), tensor.element_size(),
                                          static_cast<size_t>(tensor.storage_offset()));
}

}  // namespace

void ReleaseBytes(const at::Tensor& tensor) {
  at::native::resize_bytes_cpu(tensor.storage().unsafeGetStorageImpl(), 0);
}

void AllocateBytes(const at::Tensor& tensor) {
  if (HoldsBytes(tensor)) return;
  at::native::resize_bytes_cpu(tensor.storage().unsafeGetStorageImpl(), NeededBytes(tensor));
}

bool HoldsBytes(const at::Tensor& tensor) { return tensor.storage().nbytes() >= NeededBytes(tensor); }

namespace {

at::Tensor OverStorage(c10::Storage storage, int64_t offset, at::IntArrayRef sizes, caffe2::TypeMeta dtype) {
  at::Tensor tensor = at::detail::make_tensor<c10::TensorImpl>(
      std::move(storage), c10::DispatchKeySet(c10::DispatchKey::CPU), dtype);
  tensor.unsafeGetTensorImpl()->set_sizes_contiguous(sizes);
  tensor.unsafeGetTensorImpl()->set_storage_offset(offset);
  return tensor;
}

}  // namespace

at::Tensor ShapeOnly(at::IntArrayRef sizes, at::ScalarType dtype) {
  c10::Storage empty(c10::Storage::use_byte_size_t(), 0, c10::GetCPUAllocator(), /*resizable=*/true);
  return OverStorage(std::move(empty), 0, sizes, c10::scalarTypeToTypeMeta(dtype));
}

at::Tensor ViewOfStorage(const at::Tensor& base, int64_t offset, at::IntArrayRef sizes) {
  return OverStorage(base.storage(), base.storage_offset() + offset, sizes, base.dtype());
}

}  // namespace accel::rt::train
