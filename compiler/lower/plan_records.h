#ifndef ACCEL_COMPILER_LOWER_PLAN_RECORDS_H_
#define ACCEL_COMPILER_LOWER_PLAN_RECORDS_H_

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "compiler/lower/lowering.h"
#include "compiler/lower/native_support.h"
#include "compiler/plan/plan.h"

// Spec records and enum members copied into the plan's of the same name. The plan's table
// uses the spec's field names and JSON strings, so a new model, dataset or optimizer field
// needs no code here, and FromSpecAlternative fails to compile until the field has its plan
// twin or its row in native_support.def.
namespace accel::lower {

// Our bug, not the user's: the schema has a member or alternative lowering does not handle.
[[noreturn]] inline void InternalNoCase(std::string_view what, std::string_view name) {
  std::fprintf(stderr, "internal error: lowering has no case for %.*s `%.*s`\n", static_cast<int>(what.size()),
               what.data(), static_cast<int>(name.size()), name.data());
  std::abort();
}

// The plan's member of the same JSON string as the spec's value, or unset when the plan has none.
template <typename E>
std::optional<E> FindPlanEnum(const sema::Value& value) {
  for (const auto& [member, name] : plan::EnumInfo<E>::kMembers)
    if (name == value.enum_value) return member;
  return std::nullopt;
}

// Whether every member of the stdlib enum S has a member of the plan's enum P with its value.
template <typename P, typename S>
constexpr bool PlanHasEveryMember() {
  for (std::string_view value : sema::views::EnumTable<S>::kValues) {
    bool found = false;
    for (const auto& [member, name] : plan::EnumInfo<P>::kMembers) found = found || name == value;
    if (!found) return false;
  }
  return true;
}

// The plan's member for a stdlib enum's member. A member added to the stdlib enum without its
// plan twin fails to compile here; an enum the plan covers only in part is lowered by a
// `switch` that refuses the rest.
template <typename P, typename S>
P PlanMember(S member) {
  static_assert(PlanHasEveryMember<P, S>(), "a stdlib enum member without its plan member");
  std::string_view value = sema::views::SerializedValue(member);
  for (const auto& [plan_member, name] : plan::EnumInfo<P>::kMembers)
    if (name == value) return plan_member;
  InternalNoCase(plan::EnumInfo<P>::kName, value);
}

template <typename T>
void Assign(const sema::Value& value, const plan::FieldInfo& field, T& out) {
  using sema::Value;
  if constexpr (std::is_same_v<T, bool>) {
    out = value.bool_value;
  } else if constexpr (std::is_same_v<T, int64_t>) {
    out = value.int_value;
  } else if constexpr (std::is_same_v<T, double>) {
    out = sema::views::NumberOf(value);
  } else if constexpr (std::is_same_v<T, std::string>) {
    out = field.unit == "path" ? SpecRelative(value) : value.text;
  } else if constexpr (std::is_enum_v<T>) {
    std::optional<T> member = FindPlanEnum<T>(value);
    if (!member) InternalNoCase(plan::EnumInfo<T>::kName, value.enum_value);
    out = *member;
  } else if constexpr (std::is_same_v<T, std::vector<plan::InputBinding>>) {
    // The spec's `{ column: "input" }`, in the spec's order.
    out.clear();
    for (size_t i = 0; i < value.keys.size(); ++i) out.push_back({value.keys[i], value.items[i].text});
  } else if constexpr (std::is_same_v<T, std::vector<plan::PadValue>>) {
    // The spec's `{ column: value }`, in the spec's order.
    out.clear();
    for (size_t i = 0; i < value.keys.size(); ++i) out.push_back({value.keys[i], value.items[i].int_value});
  } else {
    static_assert(std::is_same_v<T, std::vector<typename T::value_type>>, "a plan field lowering cannot copy");
    out.clear();
    for (const Value& item : value.items) {
      typename T::value_type element{};
      Assign(item, field, element);
      out.push_back(std::move(element));
    }
  }
}

// The plan's record R from the spec's record of the same name, field by field. A plan field
// the spec record lacks keeps its default for the caller to set.
template <typename R>
R FromSpec(const sema::Value& record) {
  R out;
  plan::ForEachField(out, [&](const plan::FieldInfo& field, auto& member) {
    const sema::Value* value = record.Field(field.name);
    if (value != nullptr && value->kind != sema::Value::Kind::None) Assign(*value, field, member);
  });
  return out;
}

// Whether every field of the stdlib record View is carried by FromSpec (the plan record R has
// a field of its name) or has its fate in native_support.def (refused, without effect).
template <typename R, typename View>
constexpr bool EveryFieldHasItsFate() {
  for (std::string_view field : View::kFields)
    if (!plan::HasField<R>(field) && FindNativeField(View::kName, field) == nullptr) return false;
  return true;
}

// The plan variant V's alternative for a view variant's alternative: the plan record whose
// tag is the stdlib record's name. A stdlib alternative without its plan record, or with a
// field neither in it nor in native_support.def, fails to compile.
template <typename V, typename View, size_t I = 0>
V FromSpecAlternative(const View& view) {
  static_assert(I < std::variant_size_v<V>, "a stdlib record without its plan alternative");
  using Alternative = std::variant_alternative_t<I, V>;
  if constexpr (std::string_view(Alternative::kTag) == View::kName) {
    static_assert(EveryFieldHasItsFate<Alternative, View>(),
                  "a stdlib field without its field in compiler/plan/plan.def or its row in "
                  "compiler/lower/native_support.def");
    return V(FromSpec<Alternative>(view.value()));
  } else {
    return FromSpecAlternative<V, View, I + 1>(view);
  }
}

// The plan variant V from a view variant (`job.model()`, `train.optimizer()`).
template <typename V, typename... Views>
V FromSpecUnion(const std::variant<Views...>& views) {
  return std::visit([](const auto& view) { return FromSpecAlternative<V>(view); }, views);
}

}  // namespace accel::lower

#endif  // ACCEL_COMPILER_LOWER_PLAN_RECORDS_H_
