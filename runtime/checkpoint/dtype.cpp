#include "runtime/checkpoint/dtype.h"

#include "llvm/Support/ErrorHandling.h"

namespace accel::rt::checkpoint {
namespace {

// The Torch column belongs to the at::ScalarType view (runtime/tensor); it is dropped here.
constexpr DtypeInfo kDtypes[] = {
#define ACCEL_DTYPE(Id, safetensors, file_bits, estimate_bytes, integral, name, aliases, Torch) \
  {Dtype::Id, safetensors, file_bits, estimate_bytes, integral, name, aliases},
#include "runtime/checkpoint/dtypes.def"
};

// Info() indexes by the enum's value, which holds because both come from the same rows in order.
constexpr bool RowsFollowTheEnum() {
  for (size_t i = 0; i < std::size(kDtypes); ++i) {
    if (static_cast<size_t>(kDtypes[i].dtype) != i) return false;
  }
  return true;
}
static_assert(RowsFollowTheEnum());

}  // namespace

llvm::ArrayRef<DtypeInfo> AllDtypes() { return kDtypes; }

const DtypeInfo& Info(Dtype dtype) {
  size_t index = static_cast<size_t>(dtype);
  // Only a value cast from outside the enum gets here; that is our bug.
  if (index >= std::size(kDtypes)) llvm::report_fatal_error("checkpoint::Info: not a Dtype");
  return kDtypes[index];
}

std::optional<Dtype> DtypeOfSafetensors(std::string_view text) {
  if (text.empty()) return std::nullopt;
  for (const DtypeInfo& row : kDtypes) {
    if (row.safetensors == text) return row.dtype;
  }
  return std::nullopt;
}

}  // namespace accel::rt::checkpoint
