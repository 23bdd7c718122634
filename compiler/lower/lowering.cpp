#include "compiler/lower/lowering.h"

#include <filesystem>

namespace accel::lower {

void Lowering::Unsupported(diag::Kind kind, const sema::Value& value, const std::string& what,
                           std::string_view hint) {
  diag::Diagnostic& d = Emit(kind, value, what, std::string(hint));
  if (value.provenance.kind == sema::Provenance::Kind::Environment)
    d.message += " (value from environment variable `" + value.provenance.env_var + "`)";
}

std::string SpecRelative(const sema::Value& value) {
  std::filesystem::path path(value.text);
  if (path.is_absolute() || value.provenance.file == nullptr ||
      value.provenance.kind != sema::Provenance::Kind::Spec) {
    return value.text;
  }
  std::filesystem::path base = std::filesystem::path(value.provenance.file->name()).parent_path();
  return (base / path).lexically_normal().string();
}

bool SetInSpec(const sema::Value& value) {
  return FirstSetInSpec(value).provenance.kind == sema::Provenance::Kind::Spec;
}

const sema::Value& FirstSetInSpec(const sema::Value& value) {
  if (value.kind != sema::Value::Kind::Record) return value;
  for (const sema::Value& item : value.items) {
    const sema::Value& found = FirstSetInSpec(item);
    if (found.provenance.kind == sema::Provenance::Kind::Spec) return found;
  }
  return value;
}

}  // namespace accel::lower
