#ifndef ACCEL_COMPILER_SEMA_RECORD_ENTRIES_H_
#define ACCEL_COMPILER_SEMA_RECORD_ENTRIES_H_

#include <cstddef>

#include "compiler/ast/ast.h"
#include "compiler/source/source_file.h"

// The statements the checker reads as the body of one record, shared by the files that read a
// body's keys (key_resolution.h) and its values (check.cpp, value_conversion.h).
namespace accel::sema {

// A statement seen after its first `depth` path segments were consumed by enclosing records
// (`accelerator.ddp.bucket_cap_mb = 50` is seen at depth 1 inside `Accelerator`), with the file
// it is written in and its composition layer (a later layer overrides an earlier one).
struct Entry {
  const ast::Statement* statement;
  size_t depth;
  const source::SourceFile* file;
  size_t layer;
};

// The value `entry` assigns to its own key (not to a key below it, `a.b = 1` seen at `a`), or null.
inline const ast::Expr* AssignedValue(const Entry& entry) {
  if (entry.depth + 1 != entry.statement->path.size()) return nullptr;
  return entry.statement->value.get();
}

// True when `entry` assigns "auto" to its own key.
inline bool IsAuto(const Entry& entry) {
  const ast::Expr* value = AssignedValue(entry);
  return value != nullptr && value->kind == ast::ExprKind::String && value->text == "auto";
}

}  // namespace accel::sema

#endif  // ACCEL_COMPILER_SEMA_RECORD_ENTRIES_H_
