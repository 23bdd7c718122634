#ifndef ACCEL_COMPILER_SEMA_FIELD_DEFAULTS_H_
#define ACCEL_COMPILER_SEMA_FIELD_DEFAULTS_H_

#include <optional>
#include <string>

#include "compiler/diagnostics/diagnostic.h"
#include "compiler/sema/environment.h"
#include "compiler/sema/schema.h"
#include "compiler/sema/value.h"
#include "compiler/sema/value_conversion.h"

// The value of a field the file leaves unset, in the order Accelerate takes it: the field's
// environment variable, then its schema default, then `none` for an optional; otherwise the
// field is missing. Each value says which of them it came from (its provenance).
namespace accel::sema {

class FieldDefaults {
 public:
  // A schema default is converted by `converter`. Everything passed must outlive this.
  FieldDefaults(const Schema& schema, const Environment& environment, ValueConverter& converter,
                diag::DiagnosticEngine& diagnostics)
      : schema_(schema), environment_(environment), converter_(converter), diagnostics_(diagnostics) {}

  // The value of `field` of `record` (at `path`) in the record value at `span` in `file`. Null
  // when its variable's text is not of its type (A3003) or when it is missing (A3004, unless
  // `recovered`: error recovery repaired the block, and the field may be in the broken part).
  std::optional<Value> For(const FieldSchema& field, const RecordSchema& record,
                           const source::SourceFile* file, source::Span span, const std::string& path,
                           bool recovered);

 private:
  std::optional<Value> FromEnvironment(const Type& type, const std::string& text) const;

  const Schema& schema_;
  const Environment& environment_;
  ValueConverter& converter_;
  diag::DiagnosticEngine& diagnostics_;
};

}  // namespace accel::sema

#endif  // ACCEL_COMPILER_SEMA_FIELD_DEFAULTS_H_
