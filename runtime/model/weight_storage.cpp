#include "runtime/model/weight_storage.h"

#include <ATen/EmptyTensor.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>

#include <stdexcept>

namespace accel::rt::train {
namespace {

size_t NeededBytes(const at::Tensor& tensor) {
  return at::detail::computeStorageNbytes(tensor.sizes(), tensor.strides(), tensor.element_size(),
                                          static_cast<size_t>(tensor.storage_offset()));
}

// Replaces the storage's bytes by `nbytes` new ones from its own allocator (the CPU's, or the
// device's caching allocator), as Storage.resize_ does without keeping the old bytes. Callers
// free bytes only once no collective writes them (ShardedEngine::Release waits first).
void ReplaceBytes(c10::StorageImpl& storage, size_t nbytes) {
  if (!storage.resizable() || storage.allocator() == nullptr)
    throw std::logic_error("weight storage: a storage without its own allocator cannot change its bytes");
  // The storage's device, whichever device is current on this thread.
  c10::OptionalDeviceGuard on_its_device;
  if (!storage.device().is_cpu()) on_its_device.reset_device(storage.device());
  storage.set_data_ptr_noswap(storage.allocator()->allocate(nbytes));
  storage.set_nbytes(nbytes);
}

}  // namespace

void ReleaseBytes(const at::Tensor& tensor) { ReplaceBytes(*tensor.storage().unsafeGetStorageImpl(), 0); }

void AllocateBytes(const at::Tensor& tensor) {
  if (HoldsBytes(tensor)) return;
  c10::StorageImpl& storage = *tensor.storage().unsafeGetStorageImpl();
  if (storage.nbytes() == 0) return ReplaceBytes(storage, NeededBytes(tensor));
  // Part of the bytes are there: keep them (only CPU storages are ever partly allocated).
  at::native::resize_bytes_cpu(&storage, NeededBytes(tensor));
}

bool HoldsBytes(const at::Tensor& tensor) { return tensor.storage().nbytes() >= NeededBytes(tensor); }

namespace {

at::Tensor OverStorage(c10::Storage storage, int64_t offset, at::IntArrayRef sizes, caffe2::TypeMeta dtype) {
  const c10::DispatchKey key = c10::computeDispatchKey(dtype.toScalarType(), c10::kStrided, storage.device());
  at::Tensor tensor =
      at::detail::make_tensor<c10::TensorImpl>(std::move(storage), c10::DispatchKeySet(key), dtype);
  tensor.unsafeGetTensorImpl()->set_sizes_contiguous(sizes);
  tensor.unsafeGetTensorImpl()->set_storage_offset(offset);
  return tensor;
}

}  // namespace

at::Tensor ShapeOnly(at::IntArrayRef sizes, at::ScalarType dtype, c10::Device device) {
  // An empty allocation from the device's allocator, so that the storage is on `device`.
  c10::Allocator* allocator = device.is_cpu() ? c10::GetCPUAllocator() : c10::GetAllocator(device.type());
  c10::Storage empty(c10::Storage::use_byte_size_t(), 0, allocator->allocate(0), allocator, /*resizable=*/true);
  return OverStorage(std::move(empty), 0, sizes, c10::scalarTypeToTypeMeta(dtype));
}

at::Tensor ViewOfStorage(const at::Tensor& base, int64_t offset, at::IntArrayRef sizes) {
  return OverStorage(base.storage(), base.storage_offset() + offset, sizes, base.dtype());
}

}  // namespace accel::rt::train
