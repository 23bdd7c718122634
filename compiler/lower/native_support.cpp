#include "compiler/lower/native_support.h"

namespace accel::lower {
namespace {

using How = NativeField::How;
using When = NativeField::When;

constexpr NativeField kFields[] = {
#define NATIVE_LOWERED(Record, field) {#Record, #field, How::Lowered, When::Never, "", diag::Kind{}, ""},
#define NATIVE_NO_EFFECT(Record, field, why) \
  {#Record, #field, How::NoEffect, When::Never, "", diag::Kind{}, why},
#define NATIVE_REFUSED(Record, field, when, diagnostic, hint) \
  {#Record, #field, How::Refused, When::when, "", diag::Kind::diagnostic, hint},
#define NATIVE_REFUSED_UNLESS(Record, field, allowed, diagnostic, hint) \
  {#Record, #field, How::Refused, When::Unless, allowed, diag::Kind::diagnostic, hint},
#include "compiler/lower/native_support.def"
};

}  // namespace

llvm::ArrayRef<NativeField> NativeFields() { return kFields; }

const NativeField* FindNativeField(std::string_view record, std::string_view field) {
  for (const NativeField& row : kFields) {
    if (row.record == record && row.field == field) return &row;
  }
  return nullptr;
}

}  // namespace accel::lower
