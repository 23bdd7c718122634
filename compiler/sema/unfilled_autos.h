#ifndef ACCEL_COMPILER_SEMA_UNFILLED_AUTOS_H_
#define ACCEL_COMPILER_SEMA_UNFILLED_AUTOS_H_

#include <string>
#include <vector>

#include "compiler/ast/ast.h"
#include "compiler/diagnostics/diagnostic.h"
#include "compiler/sema/check.h"
#include "compiler/sema/schema.h"

namespace accel::sema {

// True when `type` takes the stdlib's `Auto` (a key Accelerate or the Trainer fills in).
bool AdmitsAuto(const Type& type);

// The "auto"s of a DeepSpeed JSON that Accelerate and the Trainer would leave unfilled (A3020).
// Both walk every leaf of the file and refuse an "auto" they have no value for, by its key's name
// (DeepSpeedPlugin.deepspeed_config_process, from Accelerator._prepare_deepspeed); under the
// `deepspeed` launcher nothing walks the file. The checker notes each one as it reads the file;
// Report says them at the end, once it is known whom the file is for.
class UnfilledAutos {
 public:
  UnfilledAutos(const CheckOptions& options, const Schema& schema) : options_(options), schema_(schema) {}

  // `value`, set under a key DeepSpeed ignores (an unknown key of an `open` record) or under
  // another name than the key they fill it by: every "auto" in it, at any depth of its mappings.
  void UnderKeyNobodyFills(const ast::Expr& value, const source::SourceFile* file, const std::string& path,
                           const std::string& why, const std::string& fix);
  // `assigned`, the value a file sets `field` to: "auto" as a value of the key's own type
  // (DeepSpeed's `"auto"`, or text), which they refuse all the same.
  void OwnAuto(const FieldSchema& field, const ast::Expr& assigned, const source::SourceFile* file,
               const std::string& path);
  // `assigned`, the value of an optimizer's or schedule's params map: an "auto" beyond the keys
  // Accelerate or the Trainer fill in (filled_params.def). Where the tool was guessed, either
  // one's keys may be meant.
  void InParams(const RecordSchema& record, const FieldSchema& field, const ast::Expr& assigned,
                const source::SourceFile* file, const std::string& path);
  // The file has an "auto" at a key they fill: it is written for them.
  void NoteFilled() { filled_auto_ = true; }

  // Reports what was noted. A key's own "auto" (ZenFlow's, `keep_in_fp32_modules`) only when the
  // file is for them: checked `--for accelerate` or `--for trainer`, or, where the tool was
  // guessed from the "auto" in the text, when another "auto" is at a key they fill. A file whose
  // every "auto" is DeepSpeed's own is one for the `deepspeed` launcher. An "auto" under a
  // misspelt or renamed key was meant for them.
  void Report(diag::DiagnosticEngine& diagnostics) const;

 private:
  // Whether a DeepSpeed JSON's "auto"s are walked at all.
  bool Walked() const { return options_.auto_filled_by_key && options_.target != "deepspeed"; }
  // True when `type` reads the text "auto" as a value (a string, or an enum with an `auto` member).
  bool TakesTextAuto(const Type& type) const;

  struct Unfilled {
    const source::SourceFile* file;
    source::Span span;
    std::string path, why, fix;
    bool own;  // the key's own "auto" (OwnAuto)
  };
  // Removes the constraint violations (A3002) by a key's own "auto" that is in `reported`: one
  // mistake is said once, by the diagnostic that names its cause and, in its fix, the constraint.
  static void DropConstraintViolationsOf(const std::vector<const Unfilled*>& reported,
                                         diag::DiagnosticEngine& diagnostics);
  const CheckOptions& options_;
  const Schema& schema_;
  std::vector<Unfilled> unfilled_;
  bool filled_auto_ = false;
};

}  // namespace accel::sema

#endif  // ACCEL_COMPILER_SEMA_UNFILLED_AUTOS_H_
