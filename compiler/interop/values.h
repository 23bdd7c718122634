#ifndef ACCEL_COMPILER_INTEROP_VALUES_H_
#define ACCEL_COMPILER_INTEROP_VALUES_H_

#include <string>
#include <vector>

#include "compiler/sema/schema.h"
#include "compiler/sema/value.h"

// What the three writers share: which fields of a checked record to write, and numbers as text.
namespace accel::interop {

// One field of a record value that a writer should write.
struct WrittenField {
  const sema::FieldSchema* field;
  const sema::Value* value;
};

// The fields of `record` (a Record value of a schema record) that the checked file set, plus
// the required ones (no default, not optional), in schema order. `record` and `schema` must
// outlive the result.
std::vector<WrittenField> FieldsToWrite(const sema::Value& record, const sema::Schema& schema);

// The key Accelerate's files use for `field`: its `key "..."`, else its name.
const std::string& FileKey(const sema::FieldSchema& field);

// The shortest decimal text that reads back as exactly `value` (`0.1`, `1e-08`, `100`); finite
// values only.
std::string ShortestDouble(double value);

}  // namespace accel::interop

#endif  // ACCEL_COMPILER_INTEROP_VALUES_H_
