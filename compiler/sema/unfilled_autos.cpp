#include "compiler/sema/unfilled_autos.h"

#include <algorithm>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/sema/evaluate.h"
#include "compiler/sema/filled_params.h"

namespace accel::sema {
namespace {

bool IsAutoText(const ast::Expr& value) {
  return value.kind == ast::ExprKind::String && value.text == "auto";
}

}  // namespace

bool AdmitsAuto(const Type& type) {
  if (type.kind == Type::Kind::Enum) return type.name == "Auto";
  if (type.kind != Type::Kind::Union && type.kind != Type::Kind::Optional) return false;
  return std::any_of(type.args.begin(), type.args.end(), [](const Type& t) { return AdmitsAuto(t); });
}

void UnfilledAutos::UnderKeyNobodyFills(const ast::Expr& value, const source::SourceFile* file,
                                        const std::string& path, const std::string& why,
                                        const std::string& fix) {
  if (!Walked()) return;
  if (IsAutoText(value)) {
    unfilled_.push_back({file, value.span, path, why, fix, false});
    return;
  }
  // Only mappings are walked: a list is one leaf, whatever it holds.
  if (value.kind != ast::ExprKind::Record || !value.block) return;
  for (const ast::Statement& statement : value.block->statements) {
    if (statement.value == nullptr) continue;
    std::string inner = path;
    for (const ast::Name& name : statement.path) inner += "." + name.text;
    UnderKeyNobodyFills(*statement.value, file, inner, why, fix);
  }
}

void UnfilledAutos::OwnAuto(const FieldSchema& field, const ast::Expr& assigned,
                            const source::SourceFile* file, const std::string& path) {
  if (!Walked() || AdmitsAuto(field.type) || !IsAutoText(assigned) || !TakesTextAuto(field.type)) return;
  bool deepspeeds_own =
      field.type.kind != Type::Kind::String &&
      !(field.type.kind == Type::Kind::Optional && field.type.args[0].kind == Type::Kind::String);
  std::string why = deepspeeds_own ? "this \"auto\" is DeepSpeed's own value" : "not this one";
  std::string fix = deepspeeds_own ? "leave the key out for DeepSpeed's default, or write the value"
                                   : "write the value";
  // The key's constraint (a level's name, a choice) says which values it takes; Report drops its
  // violation by the same "auto", which would only restate this one.
  if (field.constraint != nullptr)
    fix += fmt::format(" (one for which `{}` holds)", ExprText(*field.constraint));
  unfilled_.push_back(
      {file, assigned.span, path, "they fill in only the keys they compute, and " + why, fix, true});
}

void UnfilledAutos::InParams(const RecordSchema& record, const FieldSchema& field, const ast::Expr& assigned,
                             const source::SourceFile* file, const std::string& path) {
  if (!Walked() || options_.params_from_job || !HasFilledParams(record.name, field.name)) return;
  if (assigned.kind != ast::ExprKind::Record || !assigned.block) return;
  std::vector<std::string_view> filled =
      FilledParams(record.name, field.name, options_.target_guessed ? "" : options_.target);
  std::vector<std::string> named;
  for (std::string_view key : filled) named.push_back(fmt::format("`{}`", key));
  std::string who = options_.target_guessed           ? "they fill"
                    : options_.target == "accelerate" ? "Accelerate fills"
                    : options_.target == "trainer"    ? "the Trainer fills"
                                                      : "they fill";
  std::string why = fmt::format("{} in only {} of `{}`", who, fmt::join(named, ", "), path);
  for (const ast::Statement& statement : assigned.block->statements) {
    if (statement.path.size() != 1 || statement.value == nullptr) continue;
    const std::string& key = statement.path[0].text;
    if (std::find(filled.begin(), filled.end(), key) == filled.end()) {
      UnderKeyNobodyFills(*statement.value, file, path + "." + key, why, "write the value");
    } else if (IsAutoText(*statement.value)) {
      NoteFilled();
    }
  }
}

void UnfilledAutos::Report(diag::DiagnosticEngine& diagnostics) const {
  bool for_them = !options_.target_guessed || filled_auto_;
  std::vector<const Unfilled*> reported;
  for (const Unfilled& a : unfilled_) {
    if (!a.own || for_them) reported.push_back(&a);
  }
  DropConstraintViolationsOf(reported, diagnostics);
  for (const Unfilled* a : reported)
    diagnostics.Emit(diag::Kind::AutoUnfilled, a->file, a->span, a->path, a->why, a->fix);
}

void UnfilledAutos::DropConstraintViolationsOf(const std::vector<const Unfilled*>& reported,
                                               diag::DiagnosticEngine& diagnostics) {
  auto restates = [&](const diag::Diagnostic& d) {
    if (d.code != diag::Info(diag::Kind::ConstraintViolated).code) return false;
    return std::any_of(reported.begin(), reported.end(), [&](const Unfilled* a) {
      return a->own && a->file == d.file && a->span.begin == d.span.begin && a->span.end == d.span.end;
    });
  };
  const std::vector<diag::Diagnostic>& recorded = diagnostics.diagnostics();
  if (std::none_of(recorded.begin(), recorded.end(), restates)) return;
  std::vector<diag::Diagnostic> kept = diagnostics.TakeAll();
  kept.erase(std::remove_if(kept.begin(), kept.end(), restates), kept.end());
  diagnostics.AddAll(std::move(kept));
}

bool UnfilledAutos::TakesTextAuto(const Type& type) const {
  switch (type.kind) {
    case Type::Kind::String:
      return true;
    case Type::Kind::Enum: {
      auto e = schema_.enums.find(type.name);
      return e != schema_.enums.end() && e->second.Find("auto") != nullptr;
    }
    case Type::Kind::Union:
    case Type::Kind::Optional:
      return std::any_of(type.args.begin(), type.args.end(),
                         [this](const Type& t) { return TakesTextAuto(t); });
    default:
      return false;
  }
}

}  // namespace accel::sema
