#include "compiler/interop/legacy.h"

#include "llvm/Support/ErrorHandling.h"

namespace accel::interop {
namespace {

sema::Value* FieldOf(sema::Value& record, std::string_view name) {
  for (size_t i = 0; i < record.keys.size(); ++i) {
    if (record.keys[i] == name) return &record.items[i];
  }
  return nullptr;
}

bool SetInFile(const sema::Value* value) {
  return value != nullptr && value->provenance.kind == sema::Provenance::Kind::Spec;
}

// What a field the file did not set reads as, for the writers: nothing to write.
sema::Value Unset() {
  sema::Value none;
  none.provenance.kind = sema::Provenance::Kind::SchemaDefault;
  return none;
}

// The schema type inside `field`'s optional, e.g. `PrecisionType` for `mixed_precision`.
const std::string& InnerTypeName(const sema::Schema& schema, const std::string& record,
                                 const std::string& field) {
  const sema::FieldSchema* schema_field = schema.records.at(record).Find(field);
  if (schema_field == nullptr)
    llvm::report_fatal_error(llvm::Twine("interop: the stdlib lost `") + record + "." + field + "`");
  const sema::Type& type = schema_field->type;
  return type.kind == sema::Type::Kind::Optional ? type.args[0].name : type.name;
}

}  // namespace

sema::Value UpgradeLegacyKeys(sema::Value cluster_config, const sema::Schema& schema,
                              std::vector<std::string>& upgraded) {
  const std::string& record = cluster_config.type_name;
  sema::Value* fp16 = FieldOf(cluster_config, "fp16");
  sema::Value* precision = FieldOf(cluster_config, "mixed_precision");
  if (SetInFile(fp16) && precision != nullptr) {
    if (!SetInFile(precision) && fp16->kind == sema::Value::Kind::Bool && fp16->bool_value) {
      const sema::EnumSchema& precisions = schema.enums.at(InnerTypeName(schema, record, "mixed_precision"));
      const sema::EnumSchema::Member* member = precisions.Find("fp16");
      if (member == nullptr) llvm::report_fatal_error("interop: PrecisionType has no `fp16`");
      sema::Value value;
      value.kind = sema::Value::Kind::Enum;
      value.type_name = precisions.name;
      value.text = member->name;
      value.enum_value = member->value;
      value.provenance = fp16->provenance;
      *precision = std::move(value);
    }
    *fp16 = Unset();
    upgraded.push_back("`fp16` -> `mixed_precision` (CFG-004, CFG-005)");
  }

  sema::Value* backend = FieldOf(cluster_config, "dynamo_backend");
  sema::Value* dynamo = FieldOf(cluster_config, "dynamo_config");
  if (SetInFile(backend) && dynamo != nullptr) {
    // Accelerate overwrites any `dynamo_config` the file also has.
    const sema::RecordSchema& plugin = schema.records.at(InnerTypeName(schema, record, "dynamo_config"));
    sema::Value section;
    section.kind = sema::Value::Kind::Record;
    section.type_name = plugin.name;
    section.provenance = backend->provenance;
    const sema::FieldSchema* target = plugin.FindFileKey("dynamo_backend");
    for (const sema::FieldSchema& field : plugin.fields) {
      section.keys.push_back(field.name);
      bool moved =
          &field == target && backend->kind == sema::Value::Kind::Enum && backend->enum_value != "NO";
      section.items.push_back(moved ? *backend : Unset());
    }
    *dynamo = std::move(section);
    *backend = Unset();
    upgraded.push_back("`dynamo_backend` -> `dynamo_config.backend` (CFG-006)");
  }
  return cluster_config;
}

}  // namespace accel::interop
