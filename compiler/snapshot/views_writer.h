#ifndef ACCEL_COMPILER_SNAPSHOT_VIEWS_WRITER_H_
#define ACCEL_COMPILER_SNAPSHOT_VIEWS_WRITER_H_

#include <optional>
#include <string>

#include "compiler/sema/schema.h"

namespace accel::snapshot {

// The C++ header of the stdlib's typed views (see compiler/sema/spec_view.h): an `enum class`
// and its EnumTable for every enum, and a view class for every record, with one accessor per
// field typed after the schema plus a `<field>_value()` accessor for its Value. Unset when a
// name cannot become a C++ identifier; `problem` then says which.
std::optional<std::string> WriteViews(const sema::Schema& schema, std::string& problem);

}  // namespace accel::snapshot

#endif  // ACCEL_COMPILER_SNAPSHOT_VIEWS_WRITER_H_
