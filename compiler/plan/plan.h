#ifndef ACCEL_COMPILER_PLAN_PLAN_H_
#define ACCEL_COMPILER_PLAN_PLAN_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

// The execution plan: the contract between accelc and accelrun (docs/adr/0004-plan-format.md).
// Every value is resolved; the runtime makes no decision the plan does not spell out. The steps,
// their fields and enums are declared once, in plan.def (docs/adr/0006-plan-table.md); this
// header turns that table into C++ types and the reflection the JSON, schema and explain use.
namespace accel::plan {

inline constexpr std::string_view kFormat = "accel-plan/8";

// The largest job accelrun starts: beyond these a plan (or a launch flag) is a typo or hostile,
// and a launcher would fork processes until the machine fails.
inline constexpr int64_t kMaxMachines = 100000;
inline constexpr int64_t kMaxProcessesPerMachine = 4096;

// How deeply a plan's JSON may nest. The deepest plan the compiler writes nests 6 levels; the
// bound keeps a hostile file from exhausting the stack of the recursive parser.
inline constexpr int kMaxJsonDepth = 64;

// The longest duration a plan holds, in ms: a year, as the stdlib's `timeout` bound. Beyond it a
// deadline in nanoseconds overflows 64 bits (`100000000h` once killed a job in 0.1 s).
inline constexpr int64_t kMaxDurationMs = int64_t{8760} * 3600 * 1000;

// The range the reader enforces on a numeric field (on each element of a list).
// `Host` applies to a string: empty, or a host name or IP address (scalars::WhyNotAHost).
enum class Check { Any, Positive, NonNegative, Port, Duration, Host };

// What the table says of one field.
struct FieldInfo {
  std::string_view name;
  Check check;
  std::string_view unit;  // empty for plain numbers
  std::string_view doc;
};

// ---- the types: enum classes, structs, std::variants ----

#define PLAN_ENUM(Enum, doc) enum class Enum {
#define PLAN_ENUMERATOR(Enum, Member, json) Member,
#define PLAN_ENUM_END(Enum) \
  }                         \
  ;
#define PLAN_RECORD(Record, tag, doc)             \
  struct Record {                                 \
    static constexpr std::string_view kTag = tag; \
    static constexpr std::string_view kDoc = doc;
#define PLAN_FIELD(Record, Type, name, default_value, check, unit, doc) Type name = default_value;
#define PLAN_RECORD_END(Record) \
  }                             \
  ;
#define PLAN_VARIANT(Variant, tag_key, doc, ...) using Variant = std::variant<__VA_ARGS__>;
#include "compiler/plan/plan.def"

// ---- reflection ----

// EnumInfo<E>: the enum's name, doc and {member, JSON string} pairs in table order.
template <typename E>
struct EnumInfo;
#define PLAN_ENUM(Enum, doc)                         \
  template <>                                        \
  struct EnumInfo<Enum> {                            \
    static constexpr std::string_view kName = #Enum; \
    static constexpr std::string_view kDoc = doc;    \
    static constexpr std::pair<Enum, std::string_view> kMembers[] = {
#define PLAN_ENUMERATOR(Enum, Member, json) {Enum::Member, json},
#define PLAN_ENUM_END(Enum) \
  }                         \
  ;                         \
  }                         \
  ;
#include "compiler/plan/plan.def"

// The JSON string of an enum member.
template <typename E>
std::string_view EnumName(E value) {
  for (const auto& [member, name] : EnumInfo<E>::kMembers) {
    if (member == value) return name;
  }
  return "?";
}

// VariantInfo<V>: the variant's name, the key of its tag in JSON, and its doc.
template <typename V>
struct VariantInfo {
  static constexpr bool kIsVariant = false;
};
#define PLAN_VARIANT(Variant, tag_key, doc, ...)         \
  template <>                                            \
  struct VariantInfo<Variant> {                          \
    static constexpr bool kIsVariant = true;             \
    static constexpr std::string_view kName = #Variant;  \
    static constexpr std::string_view kTagKey = tag_key; \
    static constexpr std::string_view kDoc = doc;        \
  };
#include "compiler/plan/plan.def"

// IsList<T>: T is a list field, std::vector<Element>.
template <typename T>
struct IsList : std::false_type {};
template <typename T>
struct IsList<std::vector<T>> : std::true_type {
  using Element = T;
};

// kIsRecord<T>: T is a struct of the table.
template <typename T>
inline constexpr bool kIsRecord = false;
#define PLAN_RECORD(Record, tag, doc) \
  template <>                         \
  inline constexpr bool kIsRecord<Record> = true;
#include "compiler/plan/plan.def"

// ForEachField(record, f) calls f(const FieldInfo&, member) for every field, in table order;
// the member is a const or mutable reference as `record` is.
#define PLAN_RECORD(Record, tag, doc) \
  template <typename F>               \
  void ForEachField(const Record& r, F&& f) {
#define PLAN_FIELD(Record, Type, name, default_value, check, unit, doc) \
  f(FieldInfo{#name, Check::check, unit, doc}, r.name);
#define PLAN_RECORD_END(Record) }
#include "compiler/plan/plan.def"
#define PLAN_RECORD(Record, tag, doc) \
  template <typename F>               \
  void ForEachField(Record& r, F&& f) {
#define PLAN_FIELD(Record, Type, name, default_value, check, unit, doc) \
  f(FieldInfo{#name, Check::check, unit, doc}, r.name);
#define PLAN_RECORD_END(Record) }
#include "compiler/plan/plan.def"

// HasField<R>(name): whether the plan record R has a field called `name`, at compile time, so
// that a table kept beside the plan's (a stdlib record copied by name) is checked by the compiler.
#define PLAN_RECORD(Record, tag, doc) \
  constexpr bool HasFieldNamed(const Record*, std::string_view field) { return false
#define PLAN_FIELD(Record, Type, name, default_value, check, unit, doc) || field == #name
#define PLAN_RECORD_END(Record) \
  ;                             \
  }
#include "compiler/plan/plan.def"
template <typename R>
constexpr bool HasField(std::string_view field) {
  return HasFieldNamed(static_cast<const R*>(nullptr), field);
}

// The tag of the alternative `value` holds: a step's `op`, a model's `type`.
template <typename V>
std::string_view TagOf(const V& value) {
  return std::visit([](const auto& alternative) { return alternative.kTag; }, value);
}

// Visits a variant with one lambda per alternative: `std::visit(Overloaded{[](const MLP&) {...},
// ...}, model)`. With no generic lambda among them, a new alternative is a compile error here.
template <typename... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <typename... F>
Overloaded(F...) -> Overloaded<F...>;

// The step's `op` tag in JSON: `init_process_group`, `seed`, ...
inline std::string_view OpName(const Step& step) { return TagOf(step); }

struct Plan {
  std::string format{kFormat};
  std::string job;
  std::string source;  // the spec it was compiled from, as given to accelc
  // `sha256:` + hex digest of the plan's JSON with this field empty (ComputeHash).
  std::string hash;
  // The resolved configuration: every field as {"value": ..., "from": provenance}.
  llvm::json::Value config = llvm::json::Object{};
  std::vector<Step> steps;

  // The first step of type T, or null.
  template <typename T>
  const T* Find() const {
    for (const Step& step : steps) {
      if (const T* found = std::get_if<T>(&step)) return found;
    }
    return nullptr;
  }
};

// Serializes `plan` as pretty JSON with sorted keys: the same plan gives the same bytes.
std::string ToJson(const Plan& plan);

// The content hash of `plan`, ignoring its current `hash` field.
std::string ComputeHash(const Plan& plan);

// Parses and validates a plan. Fails with a message that starts with `name` and names the JSON
// path of the first problem (`plan.json: expected integer at steps[2].model.inputs`): malformed
// JSON, another `format`, an unknown `op`, variant tag, enum member or field, a missing or
// ill-typed field, a value outside its range, JSON nested deeper than kMaxJsonDepth, or a hash
// that does not match the content.
llvm::Expected<Plan> FromJson(std::string_view text, std::string_view name = "plan");

// Whether JSON `text` nests objects and arrays deeper than `limit`, counted without parsing (so
// without recursion); brackets inside strings do not count.
bool JsonNestsDeeperThan(std::string_view text, int limit);

// The JSON Schema of the plan (docs/reference/plan.schema.json), generated from the table.
std::string JsonSchema();

}  // namespace accel::plan

#endif  // ACCEL_COMPILER_PLAN_PLAN_H_
