#ifndef ACCEL_RUNTIME_DATA_ARRAY_FILES_H_
#define ACCEL_RUNTIME_DATA_ARRAY_FILES_H_

#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"
#include "runtime/checkpoint/safetensors.h"
#include "runtime/data/suggest.h"

// The file readers the datasets share (dataset.cpp, columns.cpp): whole arrays out of `.npy`
// and safetensors files, in the dtype the file stores. Not part of the data library's entry
// headers.
namespace accel::rt::data {

// The bytes of `path`; an error naming the file when it cannot be read.
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> ReadFile(const std::string& path);

// One `.npy` file (format versions 1-3) as a tensor of its own dtype and shape. Errors name
// the file: not an `.npy` file, truncated, Fortran order, big-endian, object, structured or
// other unsupported dtypes (the message says how to convert).
llvm::Expected<at::Tensor> ReadNpy(const std::string& path);

// Tensor `key` of an opened safetensors file (at `path`), in its own dtype. Errors: no such
// tensor (with a did-you-mean), a dtype datasets do not hold.
llvm::Expected<at::Tensor> ReadSafetensorsTensor(const checkpoint::SafetensorsFile& file,
                                                 const std::string& path, const std::string& key);

// A shape as NumPy prints it: `(3,)`, `(2, 4)`.
std::string ShapeText(at::IntArrayRef shape);

}  // namespace accel::rt::data

#endif  // ACCEL_RUNTIME_DATA_ARRAY_FILES_H_
