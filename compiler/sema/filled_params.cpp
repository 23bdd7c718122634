#include "compiler/sema/filled_params.h"

namespace accel::sema {
namespace {

struct FilledParam {
  std::string_view record;
  std::string_view field;
  std::string_view key;
  FilledBy by;
};

constexpr FilledParam kFilledParams[] = {
#define ACCEL_FILLED_PARAM(record, field, key, by) {#record, #field, #key, FilledBy::by},
#include "compiler/sema/filled_params.def"
#undef ACCEL_FILLED_PARAM
};

bool FilledFor(FilledBy by, std::string_view target) {
  switch (by) {
    case FilledBy::kAccelerateAndTrainer:
      return true;
    case FilledBy::kTrainer:
      return target != "accelerate";
  }
  return false;
}

}  // namespace

bool HasFilledParams(std::string_view record, std::string_view field) {
  for (const FilledParam& param : kFilledParams) {
    if (param.record == record && param.field == field) return true;
  }
  return false;
}

std::vector<std::string_view> FilledParams(std::string_view record, std::string_view field,
                                           std::string_view target) {
  std::vector<std::string_view> keys;
  for (const FilledParam& param : kFilledParams) {
    if (param.record == record && param.field == field && FilledFor(param.by, target))
      keys.push_back(param.key);
  }
  return keys;
}

}  // namespace accel::sema
