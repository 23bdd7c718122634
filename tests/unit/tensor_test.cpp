#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <c10/core/ScalarType.h>

#include <set>
#include <string>
#include <vector>

#include "runtime/checkpoint/dtype.h"
#include "runtime/checkpoint/safetensors.h"
#include "runtime/tensor/host_bytes.h"
#include "runtime/tensor/scalar_type.h"

// The at::ScalarType view of the dtype table (runtime/checkpoint/dtypes.def) against c10.
namespace accel::rt::tensor {
namespace {

using checkpoint::AllDtypes;
using checkpoint::Dtype;
using checkpoint::DtypeInfo;

// Every ScalarType this LibTorch has, Undefined excluded.
std::vector<c10::ScalarType> AllScalarTypes() {
  std::vector<c10::ScalarType> types;
  for (int i = 0; i < static_cast<int>(c10::ScalarType::NumOptions); ++i) {
    types.push_back(static_cast<c10::ScalarType>(i));
  }
  return types;
}

TEST(ScalarTypeView, NamesTheTypesTheRuntimeUses) {
  EXPECT_EQ(ScalarTypeOf(Dtype::kBF16), c10::kBFloat16);
  EXPECT_EQ(ScalarTypeOf(Dtype::kF16), c10::kHalf);
  EXPECT_EQ(ScalarTypeOf(Dtype::kF32), c10::kFloat);
  EXPECT_EQ(ScalarTypeOf(Dtype::kF64), c10::kDouble);
  EXPECT_EQ(ScalarTypeOf(Dtype::kI8), c10::kChar);
  EXPECT_EQ(ScalarTypeOf(Dtype::kI16), c10::kShort);
  EXPECT_EQ(ScalarTypeOf(Dtype::kI32), c10::kInt);
  EXPECT_EQ(ScalarTypeOf(Dtype::kI64), c10::kLong);
  EXPECT_EQ(ScalarTypeOf(Dtype::kU8), c10::kByte);
  EXPECT_EQ(ScalarTypeOf(Dtype::kBool), c10::kBool);
  EXPECT_EQ(ScalarTypeOf(Dtype::kC64), c10::kComplexFloat);
  // No ScalarType in LibTorch 1.13; Accelerate's CustomDtype sizes never have one.
  EXPECT_FALSE(ScalarTypeOf(Dtype::kF8E4M3).has_value());
  EXPECT_FALSE(ScalarTypeOf(Dtype::kU16).has_value());
  EXPECT_FALSE(ScalarTypeOf(Dtype::kInt4).has_value());
  EXPECT_STREQ(SafetensorsName(c10::kBFloat16), "BF16");
  EXPECT_STREQ(SafetensorsName(c10::kBool), "BOOL");
  EXPECT_EQ(SafetensorsName(c10::kComplexDouble), nullptr);
  EXPECT_EQ(SafetensorsName(c10::ScalarType::Undefined), nullptr);
}

// A row's ScalarType has the row's bits and integral kind, and maps back to the row; each
// ScalarType has at most one row.
TEST(ScalarTypeView, EveryRowWithATypeRoundTrips) {
  std::set<c10::ScalarType> seen;
  for (const DtypeInfo& row : AllDtypes()) {
    SCOPED_TRACE(std::string(row.name));
    std::optional<c10::ScalarType> type = ScalarTypeOf(row.dtype);
    if (!type) continue;
    EXPECT_TRUE(seen.insert(*type).second) << c10::toString(*type) << " has two rows";
    EXPECT_EQ(DtypeOf(*type), row.dtype);
    EXPECT_EQ(c10::elementSize(*type) * 8, row.file_bits);
    EXPECT_EQ(c10::isIntegralType(*type, /*includeBool=*/true), row.integral);
    EXPECT_EQ(TorchName(*type), row.name);
  }
  EXPECT_EQ(seen.size(), 11u);
}

TEST(ScalarTypeView, EveryScalarTypeWithARowRoundTrips) {
  for (c10::ScalarType type : AllScalarTypes()) {
    SCOPED_TRACE(c10::toString(type));
    std::optional<Dtype> dtype = DtypeOf(type);
    if (!dtype) {
      EXPECT_EQ(TorchName(type), c10::toString(type));
      continue;
    }
    EXPECT_EQ(ScalarTypeOf(*dtype), type);
    const char* name = SafetensorsName(type);
    ASSERT_NE(name, nullptr);
    EXPECT_EQ(checkpoint::DtypeOfSafetensors(name), dtype);
    EXPECT_EQ(checkpoint::DtypeSize(name), c10::elementSize(type));
  }
  EXPECT_FALSE(DtypeOf(c10::ScalarType::Undefined).has_value());
}

TEST(ScalarTypeView, TorchNamesAreWhatTorchPrints) {
  EXPECT_EQ(TorchName(c10::kFloat), "float32");
  EXPECT_EQ(TorchName(c10::kBFloat16), "bfloat16");
  EXPECT_EQ(TorchName(c10::kHalf), "float16");
  EXPECT_EQ(TorchName(c10::kByte), "uint8");
  EXPECT_EQ(TorchName(c10::kChar), "int8");
  EXPECT_EQ(TorchName(c10::kLong), "int64");
  EXPECT_EQ(TorchName(c10::kBool), "bool");
  EXPECT_EQ(TorchName(c10::kComplexDouble), "ComplexDouble");  // no row: c10's name
}

// A contiguous CPU tensor is read in place; a strided view is copied into rank order, so its
// bytes are its values, not its storage's.
TEST(HostBytes, ReadsContiguousTensorsInPlaceAndCopiesViews) {
  at::Tensor whole = at::arange(6, at::kFloat).view({2, 3});
  at::Tensor same = HostContiguous(whole);
  EXPECT_EQ(same.data_ptr(), whole.data_ptr());
  EXPECT_EQ(HostBytes(same).size(), 6 * sizeof(float));

  at::Tensor transposed = HostContiguous(whole.t());
  ASSERT_TRUE(transposed.is_contiguous());
  EXPECT_NE(transposed.data_ptr(), whole.data_ptr());
  const auto* values = reinterpret_cast<const float*>(HostBytes(transposed).data());
  EXPECT_EQ(std::vector<float>(values, values + 6), (std::vector<float>{0, 3, 1, 4, 2, 5}));

  EXPECT_THROW(HostBytes(whole.t()), std::logic_error);
}

}  // namespace
}  // namespace accel::rt::tensor
