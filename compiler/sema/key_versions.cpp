#include "compiler/sema/key_versions.h"

namespace accel::sema {

const std::vector<KeyVersion>& AllKeyVersions() {
  static const std::vector<KeyVersion> rows = {
#define ACCEL_KEY_VERSION(record, key, refused, accepted_by, since) \
  {#record, #key, refused, accepted_by, since},
#include "compiler/sema/key_versions.def"
#undef ACCEL_KEY_VERSION
  };
  return rows;
}

const KeyVersion* FindKeyVersion(std::string_view record, std::string_view key) {
  for (const KeyVersion& row : AllKeyVersions()) {
    if (row.record == record && row.key == key) return &row;
  }
  return nullptr;
}

}  // namespace accel::sema
