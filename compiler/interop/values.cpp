#include "compiler/interop/values.h"

#include <charconv>

#include "llvm/Support/ErrorHandling.h"

namespace accel::interop {

std::vector<WrittenField> FieldsToWrite(const sema::Value& record, const sema::Schema& schema) {
  std::vector<WrittenField> fields;
  auto it = schema.records.find(record.type_name);
  // A Value that does not match the schema is our bug, not the user's.
  if (it == schema.records.end())
    llvm::report_fatal_error(llvm::Twine("interop: no schema record `") + record.type_name + "`");
  const sema::RecordSchema& record_schema = it->second;
  for (size_t i = 0; i < record.keys.size(); ++i) {
    const sema::FieldSchema* field = record_schema.Find(record.keys[i]);
    if (field == nullptr)
      llvm::report_fatal_error(llvm::Twine("interop: no field `") + record.keys[i] + "` in " +
                               record.type_name);
    // A required field is written whatever its provenance: a file without it would not load.
    bool required = field->default_value == nullptr && field->type.kind != sema::Type::Kind::Optional;
    if (record.items[i].provenance.kind == sema::Provenance::Kind::Spec || required) {
      fields.push_back({field, &record.items[i]});
    }
  }
  return fields;
}

const std::string& FileKey(const sema::FieldSchema& field) {
  return field.file_key ? *field.file_key : field.name;
}

std::string ShortestDouble(double value) {
  // std::to_chars without a precision is the shortest round-trip form, as Python's repr().
  char buffer[64];
  auto [end, error] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  if (error != std::errc()) llvm::report_fatal_error("interop: a double does not fit in 64 characters");
  return std::string(buffer, end);
}

}  // namespace accel::interop
