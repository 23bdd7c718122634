#ifndef ACCEL_COMPILER_SEMA_VALUE_CONVERSION_H_
#define ACCEL_COMPILER_SEMA_VALUE_CONVERSION_H_

#include <optional>
#include <string>
#include <vector>

#include "compiler/ast/ast.h"
#include "compiler/diagnostics/diagnostic.h"
#include "compiler/sema/check.h"
#include "compiler/sema/environment.h"
#include "compiler/sema/lets.h"
#include "compiler/sema/record_entries.h"
#include "compiler/sema/schema.h"
#include "compiler/sema/value.h"

// A value as a spec or config file writes it, converted to a value of its field's schema type:
// scalars, enums, lists, maps and unions, a `let` or `${VAR}` it names, YAML's and JSON's
// untyped readings of a config file, and DeepSpeed's lax models' readings of a value of another
// type. What does not fit is reported here, the type wanted against what was found. A record
// value's body is handed back to the checker, which reads records (RecordReader).
namespace accel::sema {

// How an expression reads when it has the wrong type: "an integer `25`".
std::string DescribeFound(const ast::Expr& e);

// The value of enum `e`'s `member`, with no provenance.
Value EnumValue(const EnumSchema& e, const EnumSchema::Member& member);

// How the record being read takes a value of another type than its field's.
struct LaxReading {
  // The record is a DeepSpeed pydantic model in lax mode (CheckOptions::lax_models).
  bool models = false;
  // The field being read there takes true and false as 1 and 0 where it wants a number.
  bool bool_as_number = false;
};

// What converting a value asks of the checker that reads records.
class RecordReader {
 public:
  // The statements `entries` checked as the body of a `record` value at `prefix` (its path and
  // a dot), located at `span` in `file`. `recovered`: error recovery repaired the block.
  virtual std::optional<Value> CheckRecord(const RecordSchema& record, const std::vector<Entry>& entries,
                                           const source::SourceFile* file, source::Span span,
                                           const std::string& prefix, bool recovered) = 0;
  // `expr` converted as `alternative`, a union's member, by a fresh reader that reports to
  // `scratch`: an alternative that does not fit must leave nothing behind.
  virtual std::optional<Value> TryAlternative(const ast::Expr& expr, const Type& alternative,
                                              const source::SourceFile* file, const std::string& path,
                                              diag::DiagnosticEngine& scratch) = 0;

 protected:
  ~RecordReader() = default;
};

class ValueConverter {
 public:
  // Everything passed must outlive the converter. `lax` is read at each conversion: the
  // reader of the record being read sets it.
  ValueConverter(const Schema& schema, const Environment& environment, const CheckOptions& options,
                 Lets& lets, const LaxReading& lax, RecordReader& records,
                 diag::DiagnosticEngine& diagnostics)
      : schema_(schema),
        environment_(environment),
        options_(options),
        lets_(lets),
        lax_(lax),
        records_(records),
        diagnostics_(diagnostics) {}

  // `expr`, written in `file` for the field at `path`, as a value of `type` with its provenance;
  // null, with what does not fit reported, when it is not one.
  std::optional<Value> Convert(const ast::Expr& expr, const Type& type, const source::SourceFile* file,
                               const std::string& path);

  // A record literal whose type is not what a field of type `type` takes: reported, with a
  // did-you-mean among the types it accepts for a typo. Always null.
  std::optional<Value> WrongRecordType(const ast::Expr& expr, const Type& type,
                                       const source::SourceFile* file, const std::string& path);

  // The record named `name` when a field of type `type` (a record, a union, or an optional of
  // either) accepts it, or null.
  const RecordSchema* AcceptedRecord(const Type& type, const std::string& name) const;

 private:
  struct MapEntry {
    const ast::Name* key;
    const ast::Expr* value;
  };
  std::optional<Value> Mismatch(const ast::Expr& expr, const Type& type, const source::SourceFile* file,
                                const std::string& path);
  std::optional<std::string> Interpolated(const ast::Expr& expr, const source::SourceFile* file);
  std::optional<Value> ConvertMap(const std::vector<MapEntry>& entries, source::Span span, const Type& type,
                                  const source::SourceFile* file, const std::string& path);
  const EnumSchema::Member* YamlBoolMember(const ast::Expr& expr, const EnumSchema& e) const;
  std::optional<Value> ConvertEnum(const ast::Expr& expr, const Type& type, const source::SourceFile* file,
                                   const std::string& path);
  std::optional<Value> ConvertUnion(const ast::Expr& expr, const Type& type, const source::SourceFile* file,
                                    const std::string& path);

  const Schema& schema_;
  const Environment& environment_;
  const CheckOptions& options_;
  Lets& lets_;
  const LaxReading& lax_;
  RecordReader& records_;
  diag::DiagnosticEngine& diagnostics_;
};

}  // namespace accel::sema

#endif  // ACCEL_COMPILER_SEMA_VALUE_CONVERSION_H_
