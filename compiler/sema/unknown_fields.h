#ifndef ACCEL_COMPILER_SEMA_UNKNOWN_FIELDS_H_
#define ACCEL_COMPILER_SEMA_UNKNOWN_FIELDS_H_

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ast/ast.h"
#include "compiler/diagnostics/diagnostic.h"
#include "compiler/sema/check.h"
#include "compiler/sema/schema.h"

namespace accel::sema {

// How the file being checked names `field`: its config-file key in a config file.
inline const std::string& NameInFile(const FieldSchema& field, const CheckOptions& options) {
  return options.file_keys && field.file_key ? *field.file_key : field.name;
}

// Whether the file's reader refuses `record`'s old field names (a loader's closed dataclass).
inline bool LoaderRefusesOldNamesIn(const RecordSchema& record, const CheckOptions& options) {
  return options.file_keys && !record.FileTakesOldNames();
}

// Paths as the file being checked names them.
struct FileNaming {
  const Schema& schema;
  const CheckOptions& options;
  // `path` inside a record of type `record`, by config-file keys in a config file
  // (`fsdp_config.fsdp_offload_params`).
  std::string PathText(const std::string& record, const std::vector<std::string>& path) const;
};

// `a`, `b`, `c`: names as a message lists them.
std::string QuotedList(const std::vector<std::string>& items);

// A key a record does not have: the report (A2003, or A2023 where the reader ignores unknown
// keys) and its best guess at what was meant, by the Trainer's name for a field, the field's
// name in another block, a near spelling, a config file's key or a plugin's field name, an old
// name, or a longer key that ends in the one written.
class UnknownFields {
 public:
  UnknownFields(const Schema& schema, const CheckOptions& options, diag::DiagnosticEngine& diagnostics)
      : schema_(schema), options_(options), diagnostics_(diagnostics) {}

  // Reports `name`, unknown in `record` (reached at `prefix`), and returns the field name
  // suggested for it, if any. `set_here`: the names the block sets; a fix to one of them would
  // set it twice (A2004), so none is offered. `ignored`: the reader ignores unknown keys.
  std::string Report(const RecordSchema& record, const ast::Name& name, const source::SourceFile* file,
                     const std::string& prefix, const std::set<std::string, std::less<>>& set_here,
                     bool ignored = false);

 private:
  std::string BlockThatHasField(const std::string& field, const std::string& prefix) const;
  std::string TrainerMeaning(std::string_view name, const std::string& prefix, std::string& whole) const;
  const std::vector<std::string>& NamesOf(const RecordSchema& record);

  const Schema& schema_;
  const CheckOptions& options_;
  diag::DiagnosticEngine& diagnostics_;
  std::map<const RecordSchema*, std::vector<std::string>> names_;  // NamesOf
};

}  // namespace accel::sema

#endif  // ACCEL_COMPILER_SEMA_UNKNOWN_FIELDS_H_
