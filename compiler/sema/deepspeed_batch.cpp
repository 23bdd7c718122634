#include "compiler/sema/deepspeed_batch.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

namespace accel::sema {

void CheckDeepSpeedBatch(const Value& launch, const Spec& deepspeed, diag::DiagnosticEngine& diagnostics,
                         bool written_only) {
  const Value& ds = deepspeed.root;
  if (ds.type_name != "DeepSpeedConfig") return;
  // A size that is not an int is unset or "auto", which DeepSpeed fills in itself.
  auto int_field = [written_only](const Value& record, std::string_view name) -> const Value* {
    const Value* v = record.Field(name);
    if (v == nullptr || v->kind != Value::Kind::Int) return nullptr;
    return !written_only || v->provenance.kind == Provenance::Kind::Spec ? v : nullptr;
  };
  const Value* total = int_field(ds, "train_batch_size");
  const Value* micro = int_field(ds, "train_micro_batch_size_per_gpu");
  const Value* steps = int_field(ds, "gradient_accumulation_steps");
  const Value* processes = int_field(launch, "num_processes");
  const Value* sp = int_field(ds, "sequence_parallel_size");
  // Sequence-parallel ranks share one batch: they divide the world into data-parallel replicas.
  int64_t parallel = sp ? std::max<int64_t>(sp->int_value, 1) : 1;
  if (!total || !micro || !steps || !processes || processes->int_value < 1 ||
      processes->int_value % parallel != 0)
    return;
  int64_t replicas = processes->int_value / parallel;
  int64_t expected = 0;
  // A product past int64 names no batch size to suggest: it is not reported.
  if (__builtin_mul_overflow(micro->int_value * steps->int_value, replicas, &expected) ||
      total->int_value == expected)
    return;
  std::string json_name = deepspeed.file != nullptr ? deepspeed.file->name() : "";
  const source::SourceFile* at = total->provenance.file ? total->provenance.file : deepspeed.file;
  diag::Diagnostic& d = diagnostics.Emit(diag::Kind::DeepSpeedBatchMismatch, at, total->provenance.span,
                                         total->int_value, json_name, micro->int_value, steps->int_value,
                                         replicas, replicas == 1 ? "" : "es", expected, expected);
  if (processes->provenance.kind == Provenance::Kind::Spec) {
    d.notes.push_back(diag::DiagnosticEngine::Note(diag::Kind::NoteRuleInput, processes->provenance.file,
                                                   processes->provenance.span, "num_processes",
                                                   processes->int_value));
  }
}

}  // namespace accel::sema
