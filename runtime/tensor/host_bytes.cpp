#include "runtime/tensor/host_bytes.h"

#include <stdexcept>

namespace accel::rt::tensor {

at::Tensor HostContiguous(const at::Tensor& tensor) {
  at::Tensor host = tensor.detach();
  if (!host.is_cpu()) host = host.to(c10::kCPU);
  return host.is_contiguous() ? host : host.contiguous();
}

std::string_view HostBytes(const at::Tensor& host) {
  if (!host.is_cpu() || !host.is_contiguous())
    throw std::logic_error("HostBytes reads a contiguous CPU tensor: pass it through HostContiguous");
  return std::string_view(static_cast<const char*>(host.data_ptr()), host.nbytes());
}

}  // namespace accel::rt::tensor
