// The plan's JSON Schema (docs/reference/plan.schema.json), generated from the table of plan.def
// so that the published schema is the reader's own rules: every field required, nothing else
// allowed, the same ranges and enum members.
#include <fmt/format.h>

#include "compiler/plan/plan.h"
#include "llvm/Support/raw_ostream.h"

namespace accel::plan {
namespace {

namespace json = llvm::json;

// Collects the $defs that the fields refer to, each once.
class SchemaWriter {
 public:
  template <typename T>
  json::Value TypeSchema(Check check) {
    if constexpr (std::is_same_v<T, bool>) {
      return json::Object{{"type", "boolean"}};
    } else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double>) {
      json::Object o{{"type", std::is_same_v<T, int64_t> ? "integer" : "number"}};
      if (check == Check::Duration) {
        o["minimum"] = 1;
        o["maximum"] = kMaxDurationMs;
      } else if (check == Check::Positive) {
        if (std::is_same_v<T, int64_t>) {
          o["minimum"] = 1;
        } else {
          o["exclusiveMinimum"] = 0;
        }
      } else if (check == Check::NonNegative || check == Check::Port) {
        o["minimum"] = 0;
      }
      if (check == Check::Port) o["maximum"] = 65535;
      return o;
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (check == Check::Host) return json::Object{{"type", "string"}, {"pattern", "^[A-Za-z0-9._:%\\[\\]-]*$"}};
      return json::Object{{"type", "string"}};
    } else if constexpr (IsList<T>::value) {
      return json::Object{{"type", "array"}, {"items", TypeSchema<typename IsList<T>::Element>(check)}};
    } else if constexpr (std::is_enum_v<T>) {
      return Ref(std::string(EnumInfo<T>::kName), [] {
        json::Array names;
        for (const auto& member : EnumInfo<T>::kMembers) names.push_back(std::string(member.second));
        return json::Object{{"enum", std::move(names)}, {"description", std::string(EnumInfo<T>::kDoc)}};
      });
    } else if constexpr (kIsRecord<T>) {
      return Ref(std::string(T::kTag), [this] { return RecordSchema<T>("", ""); });
    } else {
      return Ref(std::string(VariantInfo<T>::kName),
                 [this] { return VariantSchema<T>(std::make_index_sequence<std::variant_size_v<T>>{}); });
    }
  }

  json::Object TakeDefs() { return std::move(defs_); }

 private:
  template <typename R>
  json::Object RecordSchema(std::string_view tag_key, std::string_view tag) {
    json::Object properties;
    json::Array required;
    if (!tag_key.empty()) {
      properties[std::string(tag_key)] = json::Object{{"const", std::string(tag)}};
      required.push_back(std::string(tag_key));
    }
    ForEachField(R{}, [&](const FieldInfo& field, const auto& member) {
      using T = std::decay_t<decltype(member)>;
      json::Value schema = TypeSchema<T>(field.check);
      std::string doc(field.doc);
      if (field.unit == "path") {
        doc += " Relative to the working directory of accelrun.";
      } else if (!field.unit.empty()) {
        doc += fmt::format(" In {}.", field.unit);
      }
      // A $ref carries no siblings in older drafts; wrap it so the field keeps its own doc.
      if (schema.getAsObject()->get("$ref") != nullptr) {
        schema = json::Object{{"allOf", json::Array{std::move(schema)}}, {"description", doc}};
      } else {
        schema.getAsObject()->try_emplace("description", doc);
      }
      properties[std::string(field.name)] = std::move(schema);
      required.push_back(std::string(field.name));
    });
    return json::Object{{"type", "object"},
                        {"description", std::string(R::kDoc)},
                        {"required", std::move(required)},
                        {"additionalProperties", false},
                        {"properties", std::move(properties)}};
  }

  template <typename V, size_t... I>
  json::Object VariantSchema(std::index_sequence<I...>) {
    json::Array alternatives;
    (alternatives.push_back(RecordSchema<std::variant_alternative_t<I, V>>(
         VariantInfo<V>::kTagKey, std::variant_alternative_t<I, V>::kTag)),
     ...);
    return json::Object{{"description", std::string(VariantInfo<V>::kDoc)},
                        {"oneOf", std::move(alternatives)}};
  }

  template <typename Make>
  json::Value Ref(const std::string& name, Make make) {
    if (defs_.get(name) == nullptr) {
      defs_[name] = nullptr;  // placeholder first: a def is built once even if it refers back
      defs_[name] = make();
    }
    return json::Object{{"$ref", "#/$defs/" + name}};
  }

  json::Object defs_;
};

}  // namespace

std::string JsonSchema() {
  SchemaWriter writer;
  json::Value steps = json::Object{{"type", "array"},
                                   {"description", "The steps in the order every rank executes them."},
                                   {"items", writer.TypeSchema<Step>(Check::Any)}};
  json::Object defs = writer.TakeDefs();
  defs["setting"] = json::Object{
      {"type", "object"},
      {"description",
       "One resolved value and where it came from: `file:line:col`, `default`, `env VAR` or "
       "`--set:line:col`."},
      {"required", json::Array{"value", "from"}},
      {"additionalProperties", false},
      {"properties", json::Object{{"from", json::Object{{"type", "string"}}}, {"value", json::Object{}}}}};
  defs["record"] =
      json::Object{{"type", "object"},
                   {"description",
                    "A record of the schema: its `type` and its fields, each a setting or a nested record."},
                   {"required", json::Array{"type"}},
                   {"properties", json::Object{{"type", json::Object{{"type", "string"}}}}},
                   {"additionalProperties",
                    json::Object{{"anyOf", json::Array{json::Object{{"$ref", "#/$defs/setting"}},
                                                       json::Object{{"$ref", "#/$defs/record"}}}}}}};
  json::Value root = json::Object{
      {"$schema", "https://json-schema.org/draft/2020-12/schema"},
      {"title", fmt::format("Accel execution plan, format {}", kFormat)},
      {"description",
       "What `accelc build` writes and `accelrun` executes (compiler/plan/plan.def, "
       "docs/adr/0004-plan-format.md). Every value is resolved; `config` records each setting with its "
       "provenance. accelrun refuses a plan of another format, with an unknown `op`, variant or field, or "
       "whose `hash` does not match its content."},
      {"type", "object"},
      {"required", json::Array{"format", "job", "source", "hash", "config", "steps"}},
      {"additionalProperties", false},
      {"properties",
       json::Object{
           {"format", json::Object{{"const", std::string(kFormat)},
                                   {"description", "The plan format and its version."}}},
           {"job", json::Object{{"type", "string"}, {"description", "The job's name."}}},
           {"source", json::Object{{"type", "string"},
                                   {"description", "The spec it was compiled from, as given to accelc."}}},
           {"hash", json::Object{{"type", "string"},
                                 {"pattern", "^sha256:[0-9a-f]{64}$"},
                                 {"description", "sha256 of the plan's JSON with this field empty."}}},
           {"config", json::Object{{"$ref", "#/$defs/record"}}},
           {"steps", std::move(steps)}}},
      {"$defs", std::move(defs)}};
  std::string out;
  llvm::raw_string_ostream stream(out);
  stream << llvm::formatv("{0:2}", root) << "\n";
  stream.flush();
  return out;
}

}  // namespace accel::plan
