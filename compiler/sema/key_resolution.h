#ifndef ACCEL_COMPILER_SEMA_KEY_RESOLUTION_H_
#define ACCEL_COMPILER_SEMA_KEY_RESOLUTION_H_

#include <set>
#include <string>
#include <string_view>

#include "compiler/ast/ast.h"
#include "compiler/diagnostics/diagnostic.h"
#include "compiler/sema/check.h"
#include "compiler/sema/record_entries.h"
#include "compiler/sema/release_judge.h"
#include "compiler/sema/schema.h"
#include "compiler/sema/unfilled_autos.h"
#include "compiler/sema/unknown_fields.h"

// Which field each key written in a record's body sets, by its name, config-file key, synonym
// or old name; or the finding that says why its value is not read (unknown, another file's key,
// another release's, deprecated, a null or "auto" DeepSpeed does not take). Every reader's way
// with a key is judged here, before the checker reads the values of the fields that are set.
namespace accel::sema {

class KeyResolver {
 public:
  // The "auto"s the keys set are noted in `unfilled_autos`, which must outlive the resolver.
  KeyResolver(const Schema& schema, const CheckOptions& options, const ReleaseJudge& release,
              UnfilledAutos& unfilled_autos, diag::DiagnosticEngine& diagnostics)
      : schema_(schema),
        options_(options),
        release_(release),
        unfilled_autos_(unfilled_autos),
        diagnostics_(diagnostics),
        unknown_fields_(schema, options, diagnostics) {}

  // What a key comes to.
  struct Resolved {
    // The field whose value the statement gives; null: its value is not read.
    const FieldSchema* field = nullptr;
    // An unknown key's likely meaning: a field of the record whose value is unknown, not missing.
    const FieldSchema* meant = nullptr;
    // The key leaves the record without a value (an error that is not about the key's name).
    bool refused = false;
  };

  // Resolves the key `entry` writes in a body of `record` (reached at `prefix`) and reports
  // what is wrong with it. `set_here`: every name the body sets.
  Resolved Resolve(const RecordSchema& record, const Entry& entry, const std::string& prefix,
                   const std::set<std::string, std::less<>>& set_here);

 private:
  const FieldSchema* FindFileKey(const RecordSchema& record, std::string_view key,
                                 const std::string& prefix) const;
  const FieldSchema* Renamed(const RecordSchema& record, const ast::Name& name,
                             const source::SourceFile* file);
  bool ReportKeyOfAnotherFile(const RecordSchema& record, const ast::Name& name,
                              const source::SourceFile* file, const std::string& prefix);
  bool JudgedByRelease(const RecordSchema& record, const FieldSchema* field, const ast::Name& name,
                       const source::SourceFile* file, const std::string& prefix,
                       const std::set<std::string, std::less<>>& set_here, bool& refused);
  const ast::Expr* DroppedAuto(const RecordSchema& record, const Entry& entry) const;
  bool ReportNullDeepSpeedRefuses(const RecordSchema& record, const FieldSchema& field, const Entry& entry,
                                  const std::string& path);
  // How the file being checked names `field`: its config-file key in a config file.
  const std::string& NameOf(const FieldSchema& field) const { return NameInFile(field, options_); }

  const Schema& schema_;
  const CheckOptions& options_;
  const ReleaseJudge& release_;
  UnfilledAutos& unfilled_autos_;
  diag::DiagnosticEngine& diagnostics_;
  UnknownFields unknown_fields_;
};

}  // namespace accel::sema

#endif  // ACCEL_COMPILER_SEMA_KEY_RESOLUTION_H_
