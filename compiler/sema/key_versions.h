#ifndef ACCEL_COMPILER_SEMA_KEY_VERSIONS_H_
#define ACCEL_COMPILER_SEMA_KEY_VERSIONS_H_

#include <string_view>
#include <vector>

namespace accel::sema {

// A key that only some releases read (a row of key_versions.def).
struct KeyVersion {
  std::string_view record;       // the schema record it is written in
  std::string_view key;          // the key as files write it
  bool refused;                  // the modelled release refuses the file (else ignores the key)
  std::string_view accepted_by;  // the releases that read it
  std::string_view since;        // what later releases do, and the fix
};

// The row of key_versions.def for `key` written in `record`, or null when every release
// treats the key alike. The returned row lives as long as the program.
const KeyVersion* FindKeyVersion(std::string_view record, std::string_view key);

// Every row, in the table's order (for the docs and tests).
const std::vector<KeyVersion>& AllKeyVersions();

}  // namespace accel::sema

#endif  // ACCEL_COMPILER_SEMA_KEY_VERSIONS_H_
