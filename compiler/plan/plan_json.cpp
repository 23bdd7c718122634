// JSON reading and writing of the plan, both walking the one table of plan.def, so the two
// halves cannot drift and a new field needs no code here.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string_view>

#include "compiler/plan/plan.h"
#include "compiler/scalars/host_names.h"
#include "llvm/Support/raw_ostream.h"

namespace accel::plan {
namespace json = llvm::json;

namespace {

// ---- writing ----

template <typename T>
json::Value Write(const T& value);

template <typename R>
json::Object WriteRecord(const R& record) {
  json::Object object;
  ForEachField(record, [&](const FieldInfo& field, const auto& member) {
    object[std::string(field.name)] = Write(member);
  });
  return object;
}

template <typename T>
json::Value Write(const T& value) {
  if constexpr (std::is_enum_v<T>) {
    return std::string(EnumName(value));
  } else if constexpr (IsList<T>::value) {
    json::Array array;
    for (const auto& item : value) array.push_back(Write(item));
    return array;
  } else if constexpr (kIsRecord<T>) {
    return WriteRecord(value);
  } else if constexpr (VariantInfo<T>::kIsVariant) {
    return std::visit(
        [](const auto& alternative) {
          json::Object object = WriteRecord(alternative);
          object[std::string(VariantInfo<T>::kTagKey)] = std::string(alternative.kTag);
          return json::Value(std::move(object));
        },
        value);
  } else {
    return value;  // bool, int64_t, double, std::string
  }
}

// ---- reading ----

// Reads one plan, remembering the first problem with its JSON path.
class Reader {
 public:
  explicit Reader(std::string_view name) : name_(name) {}

  // Records `what` at `path` (with `why` after it) unless an earlier problem was recorded.
  bool Fail(const std::string& path, const std::string& what, const std::string& why = "") {
    if (!error_) error_ = fmt::format("{}: {} at {}{}{}", name_, what, path, why.empty() ? "" : ": ", why);
    return false;
  }
  const std::optional<std::string>& error() const { return error_; }

  template <typename T>
  bool Read(const json::Value& v, T& out, const std::string& path, Check check = Check::Any) {
    if constexpr (std::is_same_v<T, bool>) {
      auto b = v.getAsBoolean();
      if (!b) return Fail(path, "expected boolean");
      out = *b;
      return true;
    } else if constexpr (std::is_same_v<T, int64_t>) {
      auto i = v.getAsInteger();
      if (!i) return Fail(path, "expected integer");
      out = *i;
      return InRange(static_cast<double>(out), fmt::format("{}", out), path, check);
    } else if constexpr (std::is_same_v<T, double>) {
      auto d = v.getAsNumber();
      if (!d) return Fail(path, "expected number");
      out = *d;
      return InRange(out, fmt::format("{}", out), path, check);
    } else if constexpr (std::is_same_v<T, std::string>) {
      auto s = v.getAsString();
      if (!s) return Fail(path, "expected string");
      out = s->str();
      if (check == Check::Host && !out.empty()) {
        if (std::string why = scalars::WhyNotAHost(out); !why.empty())
          return Fail(path, "invalid address", why);
      }
      return true;
    } else if constexpr (std::is_enum_v<T>) {
      return ReadEnum(v, out, path);
    } else if constexpr (IsList<T>::value) {
      const json::Array* array = v.getAsArray();
      if (array == nullptr) return Fail(path, "expected array");
      out.clear();
      for (size_t i = 0; i < array->size(); ++i) {
        typename IsList<T>::Element item{};
        if (!Read((*array)[i], item, fmt::format("{}[{}]", path, i), check)) return false;
        out.push_back(std::move(item));
      }
      return true;
    } else if constexpr (kIsRecord<T>) {
      return ReadRecord(v, out, path, "");
    } else {
      static_assert(VariantInfo<T>::kIsVariant, "a plan field of a type the table does not declare");
      return ReadVariant(v, out, path);
    }
  }

 private:
  bool InRange(double value, const std::string& text, const std::string& path, Check check) {
    switch (check) {
      case Check::Any:
        return true;
      case Check::Positive:
        return value > 0 || Fail(path, "invalid value " + text, "must be positive");
      case Check::NonNegative:
        return value >= 0 || Fail(path, "invalid value " + text, "must not be negative");
      case Check::Port:
        return (value >= 0 && value <= 65535) || Fail(path, "invalid value " + text, "not a port");
      case Check::Host:
        return true;  // a string's check, made where strings are read
      case Check::Duration:
        return (value > 0 && value <= static_cast<double>(kMaxDurationMs)) ||
               Fail(path, "invalid value " + text, "must be from 1 ms to a year (8760 h)");
    }
    return true;
  }

  template <typename E>
  bool ReadEnum(const json::Value& v, E& out, const std::string& path) {
    auto s = v.getAsString();
    if (!s) return Fail(path, "expected string");
    std::vector<std::string_view> names;
    for (const auto& [member, name] : EnumInfo<E>::kMembers) {
      if (name == std::string_view(s->data(), s->size())) {
        out = member;
        return true;
      }
      names.push_back(name);
    }
    return Fail(path, fmt::format("unknown {} `{}`", EnumInfo<E>::kName, s->str()),
                fmt::format("expected one of {}", fmt::join(names, ", ")));
  }

  // Every field of the table must be present, and nothing else (but `tag_key`, the variant's).
  template <typename R>
  bool ReadRecord(const json::Value& v, R& out, const std::string& path, std::string_view tag_key) {
    const json::Object* object = v.getAsObject();
    if (object == nullptr) return Fail(path, "expected object");
    return ReadFields(*object, out, path, tag_key);
  }

  template <typename R>
  bool ReadFields(const json::Object& object_ref, R& out, const std::string& path, std::string_view tag_key) {
    const json::Object* object = &object_ref;
    bool ok = true;
    std::vector<std::string_view> known;
    ForEachField(out, [&](const FieldInfo& field, auto& member) {
      known.push_back(field.name);
      if (!ok) return;
      std::string at = path.empty() ? std::string(field.name) : fmt::format("{}.{}", path, field.name);
      const json::Value* value = object->get(llvm::StringRef(field.name.data(), field.name.size()));
      ok = value != nullptr ? Read(*value, member, at, field.check) : Fail(at, "missing field");
    });
    if (!ok) return false;
    for (const auto& [key, value] : *object) {
      llvm::StringRef key_ref = key;  // ObjectKey::str() makes a temporary std::string
      std::string_view name(key_ref.data(), key_ref.size());
      if (name == tag_key || std::find(known.begin(), known.end(), name) != known.end()) continue;
      return Fail(fmt::format("{}.{}", path, key.str()),
                  fmt::format("unknown field `{}` of `{}`", key.str(), R::kTag),
                  fmt::format("`{}` has {}", R::kTag, fmt::join(known, ", ")));
    }
    return true;
  }

  template <typename V>
  bool ReadVariant(const json::Value& v, V& out, const std::string& path) {
    const json::Object* object = v.getAsObject();
    if (object == nullptr) return Fail(path, "expected object");
    constexpr std::string_view key = VariantInfo<V>::kTagKey;
    std::string at = fmt::format("{}.{}", path, key);
    auto tag = object->getString(llvm::StringRef(key.data(), key.size()));
    if (!tag)
      return Fail(at, object->get(llvm::StringRef(key.data(), key.size())) == nullptr ? "missing field"
                                                                                      : "expected string");
    return TryAlternatives(*object, *tag, out, path, std::make_index_sequence<std::variant_size_v<V>>{});
  }

  template <typename V, size_t... I>
  bool TryAlternatives(const json::Object& object, llvm::StringRef tag, V& out, const std::string& path,
                       std::index_sequence<I...>) {
    bool matched = false, ok = false;
    auto attempt = [&](auto alternative) {
      if (matched || alternative.kTag != std::string_view(tag.data(), tag.size())) return;
      matched = true;
      ok = ReadFields(object, alternative, path, VariantInfo<V>::kTagKey);
      if (ok) out = std::move(alternative);
    };
    (attempt(std::variant_alternative_t<I, V>{}), ...);
    if (matched) return ok;
    std::vector<std::string_view> tags{std::variant_alternative_t<I, V>::kTag...};
    constexpr std::string_view key = VariantInfo<V>::kTagKey;
    return Fail(fmt::format("{}.{}", path, key),
                fmt::format("unknown {} {} `{}`", VariantInfo<V>::kName, key, tag.str()),
                fmt::format("expected one of {}", fmt::join(tags, ", ")));
  }

  std::string name_;
  std::optional<std::string> error_;
};

// Rules across fields, which the table's per-field ranges cannot say. The compiler guarantees
// them for plans it writes; a plan edited by hand (and rehashed) must not crash a worker.
std::string CheckAcrossFields(const Plan& plan) {
  // Every rank executes the first step of each kind (Plan::Find): a second one would be
  // silently ignored, so a plan that holds one is refused.
  std::map<std::string_view, size_t> first_of_kind;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    std::string_view tag = std::visit([](const auto& op) { return std::string_view(op.kTag); }, plan.steps[i]);
    auto [first, inserted] = first_of_kind.emplace(tag, i);
    if (!inserted) {
      return fmt::format("invalid plan: steps[{}] is a second `{}` step (the first is steps[{}]); a plan holds "
                         "each step once",
                         i, tag, first->second);
    }
  }
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step& step = plan.steps[i];
    if (const auto* group = std::get_if<InitProcessGroup>(&step)) {
      if (group->num_machines > kMaxMachines) {
        return fmt::format("invalid value {} at steps[{}].num_machines: accelrun starts at most {} machines",
                           group->num_machines, i, kMaxMachines);
      }
      if (group->processes_per_machine > kMaxProcessesPerMachine) {
        return fmt::format(
            "invalid value {} at steps[{}].processes_per_machine: accelrun starts at most {} workers on a "
            "machine",
            group->processes_per_machine, i, kMaxProcessesPerMachine);
      }
    } else if (const auto* build = std::get_if<BuildModel>(&step)) {
      const auto* t = std::get_if<Transformer>(&build->model);
      if (t != nullptr && t->d_model % t->heads != 0) {
        return fmt::format("invalid value {} at steps[{}].model.heads: must divide d_model {}", t->heads, i,
                           t->d_model);
      }
    } else if (const auto* loop = std::get_if<TrainLoop>(&step)) {
      if ((loop->steps > 0) == (loop->epochs > 0)) {
        return fmt::format(
            "invalid length at steps[{}]: exactly one of steps ({}) and epochs ({}) must be positive", i,
            loop->steps, loop->epochs);
      }
      if (loop->warmup_ratio > 1 || (loop->warmup_ratio > 0 && loop->warmup_steps > 0)) {
        return fmt::format(
            "invalid value {} at steps[{}].warmup_ratio: must be at most 1, and 0 when warmup_steps is set",
            loop->warmup_ratio, i);
      }
      if (loop->eval_every > 0 && loop->eval_samples == 0) {
        return fmt::format("invalid evaluation at steps[{}]: eval_every {} needs eval_samples > 0", i,
                           loop->eval_every);
      }
    } else if (const auto* checkpoint = std::get_if<Checkpoint>(&step)) {
      if (checkpoint->checkpoint_every == 0 && !checkpoint->checkpoint_every_epoch) {
        return fmt::format(
            "invalid value 0 at steps[{}].checkpoint_every: must be positive unless checkpoint_every_epoch",
            i);
      }
    }
  }
  return "";
}

}  // namespace

std::string ToJson(const Plan& plan) {
  json::Array steps;
  for (const Step& step : plan.steps) steps.push_back(Write(step));
  json::Value root =
      json::Object{{"format", plan.format}, {"job", plan.job},       {"source", plan.source},
                   {"hash", plan.hash},     {"config", plan.config}, {"steps", std::move(steps)}};
  std::string out;
  llvm::raw_string_ostream stream(out);
  // llvm::json prints object keys sorted, which makes the output deterministic.
  stream << llvm::formatv("{0:2}", root) << "\n";
  stream.flush();
  return out;
}

bool JsonNestsDeeperThan(std::string_view text, int limit) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;  // the escaped character cannot end the string
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > limit) return true;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return false;
}

llvm::Expected<Plan> FromJson(std::string_view text, std::string_view name) {
  auto error = [](const std::string& message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", message.c_str());
  };
  if (JsonNestsDeeperThan(text, kMaxJsonDepth)) {
    return error(fmt::format("{}: nested deeper than {} levels; this is not a plan accelc wrote", name,
                             kMaxJsonDepth));
  }
  llvm::Expected<json::Value> parsed = json::parse(llvm::StringRef(text.data(), text.size()));
  if (!parsed) return error(fmt::format("{}: invalid JSON: {}", name, llvm::toString(parsed.takeError())));
  const json::Object* root = parsed->getAsObject();
  if (root == nullptr) return error(fmt::format("{}: expected an object at the top", name));
  Reader reader(name);
  Plan plan;
  const json::Value* format = root->get("format");
  if (format == nullptr || !reader.Read(*format, plan.format, "format")) {
    return error(reader.error() ? *reader.error() : fmt::format("{}: missing field at format", name));
  }
  if (plan.format != kFormat) {
    // Formats 1 and 2 spelled fields as the runtime once named them; nothing migrates them,
    // since the spec that made them compiles again to the current format.
    return error(fmt::format(
        "{}: unsupported plan format `{}` at format; this accelrun reads `{}`, recompile the spec with "
        "the matching accelc",
        name, plan.format, kFormat));
  }
  for (auto [key, field] : {std::pair{"job", &plan.job}, {"source", &plan.source}, {"hash", &plan.hash}}) {
    const json::Value* value = root->get(key);
    if (value == nullptr ? !reader.Fail(key, "missing field") : !reader.Read(*value, *field, key)) {
      return error(*reader.error());
    }
  }
  if (const json::Value* config = root->get("config")) plan.config = *config;
  const json::Value* steps = root->get("steps");
  if (steps == nullptr ? !reader.Fail("steps", "missing field") : !reader.Read(*steps, plan.steps, "steps")) {
    return error(*reader.error());
  }
  if (std::string problem = CheckAcrossFields(plan); !problem.empty()) {
    return error(fmt::format("{}: {}", name, problem));
  }
  std::string expected = ComputeHash(plan);
  if (plan.hash != expected) {
    return error(fmt::format(
        "{}: content hash mismatch at hash: the file says `{}` but its content hashes to `{}`; the plan was "
        "edited by hand or damaged, recompile it with accelc",
        name, plan.hash, expected));
  }
  return plan;
}

}  // namespace accel::plan
