#include "compiler/sema/value_conversion.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>

#include <fmt/format.h>

#include "compiler/scalars/bool_words.h"
#include "compiler/scalars/host_names.h"
#include "compiler/sema/evaluate.h"
#include "compiler/sema/lax_values.h"
#include "compiler/sema/unfilled_autos.h"
#include "compiler/sema/unknown_fields.h"

namespace accel::sema {

std::string DescribeFound(const ast::Expr& e) {
  switch (e.kind) {
    case ast::ExprKind::Int:
      return fmt::format("an integer `{}`", e.int_value);
    case ast::ExprKind::Float:
      return fmt::format("a float `{}`", e.float_value);
    case ast::ExprKind::String:
      return fmt::format("a string \"{}\"", e.text);
    case ast::ExprKind::Bool:
      return fmt::format("a bool `{}`", e.bool_value ? "true" : "false");
    case ast::ExprKind::None:
      return "`none`";
    case ast::ExprKind::Duration:
      return fmt::format("a duration `{}`", e.text);
    case ast::ExprKind::Bytes:
      return fmt::format("a byte size `{}`", e.text);
    case ast::ExprKind::Path:
      return fmt::format("a name `{}`", ExprText(e));
    case ast::ExprKind::Record:
      return fmt::format("a record of type `{}`", e.text);
    case ast::ExprKind::Call:
      return fmt::format("a call `{}`", ExprText(e));
    case ast::ExprKind::List:
      return "a list";
    case ast::ExprKind::Map:
      return "a map";
    case ast::ExprKind::IsSet:
    case ast::ExprKind::Unary:
    case ast::ExprKind::Binary:
      return fmt::format("an expression `{}`", ExprText(e));
  }
  return "a value";
}

Value EnumValue(const EnumSchema& e, const EnumSchema::Member& member) {
  Value value;
  value.kind = Value::Kind::Enum;
  value.type_name = e.name;
  value.text = member.name;
  value.enum_value = member.value;
  return value;
}

std::optional<Value> ValueConverter::Convert(const ast::Expr& expr, const Type& type,
                                             const source::SourceFile* file, const std::string& path) {
  if (const LetBinding* let = lets_.Named(expr, file)) {
    // A let's value is read as the type of the field it sets, by this conversion.
    auto convert = [this](const ast::Expr& e, const Type& t, const source::SourceFile* f,
                          const std::string& p) { return Convert(e, t, f, p); };
    return lets_.Expand(*let, expr, type, file, path, convert);
  }
  Value value;
  value.provenance = {Provenance::Kind::Spec, file, expr.span, ""};
  switch (type.kind) {
    case Type::Kind::Optional:
      if (expr.kind == ast::ExprKind::None) return value;
      return Convert(expr, type.args[0], file, path);
    case Type::Kind::Union:
      return ConvertUnion(expr, type, file, path);
    case Type::Kind::Bool:
      value.kind = Value::Kind::Bool;
      if (expr.kind == ast::ExprKind::Bool) {
        value.bool_value = expr.bool_value;
        return value;
      }
      // Accelerate's own files write booleans as 'no' or "true"; its loader keeps the string.
      if (options_.yaml_scalars && expr.kind == ast::ExprKind::String) {
        std::optional<bool> b = scalars::StrToBool(expr.text);
        // DeepSpeed keeps the text of a key it reads with `.get` (outside its pydantic models),
        // and any text is true to it: "false" turns the setting on, or fails where it is
        // combined with a bool (`wall_clock_breakdown | flops_profiler.enabled`).
        if (b && options_.lax_models && !lax_.models) {
          diag::Diagnostic& d = diagnostics_.Emit(diag::Kind::TypeMismatch, file, expr.span, path,
                                                  type.Describe(), DescribeFound(expr));
          d.message += fmt::format("; DeepSpeed reads this key with `.get` and keeps the text, which is "
                                   "true in any condition: write {}",
                                   *b ? "true" : "false");
          d.fixit = diag::FixIt{expr.span, *b ? "true" : "false"};
          return std::nullopt;
        }
        if (b) {
          value.bool_value = *b;
          return value;
        }
      }
      return Mismatch(expr, type, file, path);
    case Type::Kind::Int:
      if (expr.kind != ast::ExprKind::Int) return Mismatch(expr, type, file, path);
      value.kind = Value::Kind::Int;
      value.int_value = expr.int_value;
      return value;
    case Type::Kind::Float:
      if (expr.kind != ast::ExprKind::Int && expr.kind != ast::ExprKind::Float) {
        return Mismatch(expr, type, file, path);
      }
      value.kind = Value::Kind::Float;
      value.float_value =
          expr.kind == ast::ExprKind::Int ? static_cast<double>(expr.int_value) : expr.float_value;
      return value;
    case Type::Kind::String:
    case Type::Kind::Path:
    case Type::Kind::Host: {
      if (options_.yaml_scalars &&
          (expr.kind == ast::ExprKind::Duration || expr.kind == ast::ExprKind::Bytes)) {
        value.kind = Value::Kind::String;  // YAML `tag: 5m` is text where text is wanted
        value.text = expr.text;
        return value;
      }
      if (expr.kind != ast::ExprKind::String) return Mismatch(expr, type, file, path);
      value.kind = Value::Kind::String;
      std::optional<std::string> text = Interpolated(expr, file);
      if (!text) return std::nullopt;
      // The bad byte is named, never printed: a line break would forge the next log line.
      if (std::string why = type.kind == Type::Kind::Host ? scalars::WhyNotAHost(*text)
                            : type.kind == Type::Kind::Path && text->find('\0') != std::string::npos
                                ? "a path holds no NUL byte (the system would cut it there)"
                                : "";
          !why.empty()) {
        diagnostics_.Emit(diag::Kind::InvalidText, file, expr.span, path, type.Describe(), why);
        return std::nullopt;
      }
      value.text = std::move(*text);
      return value;
    }
    case Type::Kind::Duration:
      value.kind = Value::Kind::Duration;
      // YAML may give a timeout as a number of seconds, as Accelerate's variables do.
      if (options_.yaml_scalars && expr.kind == ast::ExprKind::Int && expr.int_value >= 0 &&
          expr.int_value <= INT64_MAX / 1000) {
        value.int_value = expr.int_value * 1000;
        return value;
      }
      if (expr.kind != ast::ExprKind::Duration) return Mismatch(expr, type, file, path);
      value.int_value = expr.int_value;
      return value;
    case Type::Kind::Bytes:
      if (expr.kind != ast::ExprKind::Bytes && expr.kind != ast::ExprKind::Int) {
        return Mismatch(expr, type, file, path);
      }
      value.kind = Value::Kind::Bytes;
      value.int_value = expr.int_value;
      return value;
    case Type::Kind::Enum:
      return ConvertEnum(expr, type, file, path);
    case Type::Kind::Record: {
      if (expr.kind != ast::ExprKind::Record) return Mismatch(expr, type, file, path);
      // A config file's mapping names no type: it is whatever the field takes.
      bool anonymous = expr.text.empty();
      if (!anonymous && expr.text != type.name) return WrongRecordType(expr, type, file, path);
      std::vector<Entry> entries;
      for (const ast::Statement& s : expr.block->statements) entries.push_back({&s, 0, file, 0});
      return records_.CheckRecord(schema_.records.find(type.name)->second, entries, file,
                                  anonymous ? expr.span : expr.path[0].span, path + ".",
                                  expr.block->recovered);
    }
    case Type::Kind::List: {
      if (expr.kind != ast::ExprKind::List) return Mismatch(expr, type, file, path);
      value.kind = Value::Kind::List;
      bool ok = true;
      for (size_t i = 0; i < expr.operands.size(); ++i) {
        std::optional<Value> item =
            Convert(*expr.operands[i], type.args[0], file, fmt::format("{}[{}]", path, i));
        if (!item) {
          ok = false;
          continue;
        }
        value.items.push_back(std::move(*item));
      }
      if (!ok) return std::nullopt;
      return value;
    }
    case Type::Kind::Map: {
      // A map literal, or a config file's mapping (an anonymous record) where the schema
      // wants a `map<K, V>`: the keys are the map's keys.
      std::vector<MapEntry> entries;
      if (expr.kind == ast::ExprKind::Record && expr.text.empty()) {
        for (const ast::Statement& entry : expr.block->statements)
          entries.push_back({&entry.path[0], entry.value.get()});
      } else if (expr.kind == ast::ExprKind::Map) {
        for (size_t i = 0; i < expr.operands.size(); ++i)
          entries.push_back({&expr.path[i], expr.operands[i].get()});
      } else {
        return Mismatch(expr, type, file, path);
      }
      return ConvertMap(entries, expr.span, type, file, path);
    }
  }
  return Mismatch(expr, type, file, path);
}

const RecordSchema* ValueConverter::AcceptedRecord(const Type& type, const std::string& name) const {
  const Type* t = type.kind == Type::Kind::Optional ? &type.args[0] : &type;
  std::vector<Type> alternatives = t->kind == Type::Kind::Union ? t->args : std::vector<Type>{*t};
  for (const Type& alternative : alternatives) {
    if (alternative.kind == Type::Kind::Record && alternative.name == name) {
      return &schema_.records.find(name)->second;
    }
  }
  return nullptr;
}

std::optional<Value> ValueConverter::WrongRecordType(const ast::Expr& expr, const Type& type,
                                                     const source::SourceFile* file,
                                                     const std::string& path) {
  if (schema_.records.count(expr.text) > 0) return Mismatch(expr, type, file, path);
  std::vector<std::string> accepted;
  for (const Type& t : type.kind == Type::Kind::Union ? type.args : std::vector<Type>{type}) {
    if (t.kind == Type::Kind::Record) accepted.push_back(t.name);
  }
  std::string guess = diag::ClosestMatch(expr.text, accepted);
  diag::Diagnostic& d =
      diagnostics_.Emit(diag::Kind::UnknownType, file, expr.path[0].span, expr.text,
                        guess.empty() ? fmt::format("; `{}` takes {}", path, type.Describe())
                                      : fmt::format("; did you mean `{}`?", guess));
  if (!guess.empty()) d.fixit = diag::ReplaceKeepingQuotes(file, expr.path[0].span, guess);
  return std::nullopt;
}

std::optional<Value> ValueConverter::Mismatch(const ast::Expr& expr, const Type& type,
                                              const source::SourceFile* file, const std::string& path) {
  // A config file's "auto" where the schema's type has no `Auto`: no tool fills this key in.
  if (options_.file_keys && expr.kind == ast::ExprKind::String && expr.text == "auto") {
    if (AdmitsAuto(type) && options_.target == "deepspeed") {
      diagnostics_.Emit(diag::Kind::AutoUnderDeepSpeed, file, expr.span, path);
    } else {
      diagnostics_.Emit(diag::Kind::AutoNotFilled, file, expr.span, path, type.Describe());
    }
    return std::nullopt;
  }
  // DeepSpeed's models read a number's text, 0/1 for a bool, true for 1: a warning, not an error.
  if (lax_.models) {
    if (std::optional<Value> lax = LaxValue(expr, type, lax_.bool_as_number)) {
      std::string meant = lax->kind == Value::Kind::Bool    ? (lax->bool_value ? "true" : "false")
                          : lax->kind == Value::Kind::Int   ? std::to_string(lax->int_value)
                                                            : fmt::format("{}", lax->float_value);
      diag::Diagnostic& d =
          diagnostics_.Emit(diag::Kind::LaxValue, file, expr.span, path, DescribeFound(expr), meant, meant);
      d.fixit = diag::FixIt{expr.span, meant};
      lax->provenance = {Provenance::Kind::Spec, file, expr.span, ""};
      return lax;
    }
  }
  // A config file's null is passed on as None, which is not the key's absence.
  std::string found = options_.file_keys && expr.kind == ast::ExprKind::None
                          ? "`null` (read as None, not as an unset key)"
                          : DescribeFound(expr);
  diagnostics_.Emit(diag::Kind::TypeMismatch, file, expr.span, path, type.Describe(), found);
  return std::nullopt;
}

// `${VAR}` and `${VAR:-default}` in a spec's string, from the explicit environment. Config
// files are taken literally, as Accelerate takes them.
std::optional<std::string> ValueConverter::Interpolated(const ast::Expr& expr,
                                                        const source::SourceFile* file) {
  if (options_.file_keys) return expr.text;
  std::string unset;
  std::optional<std::string> text = Interpolate(expr.text, environment_, unset);
  if (!text) {
    diagnostics_.Emit(diag::Kind::UnsetInterpolation, file, expr.span, unset, expr.text, unset, unset);
  }
  return text;
}

// The entries of a map value; a key given twice is A2004 with a note at the first.
std::optional<Value> ValueConverter::ConvertMap(const std::vector<MapEntry>& entries, source::Span span,
                                                const Type& type, const source::SourceFile* file,
                                                const std::string& path) {
  Value value;
  value.kind = Value::Kind::Map;
  value.provenance = {Provenance::Kind::Spec, file, span, ""};
  bool ok = true;
  std::map<std::string, source::Span> seen;
  for (const MapEntry& entry : entries) {
    const ast::Name& key = *entry.key;
    std::string item_path = fmt::format("{}[\"{}\"]", path, key.text);
    if (auto [it, inserted] = seen.emplace(key.text, key.span); !inserted) {
      diag::Diagnostic& d = diagnostics_.Emit(diag::Kind::DuplicateField, file, key.span, item_path);
      d.notes.push_back(diag::DiagnosticEngine::Note(diag::Kind::NotePreviousValue, file, it->second));
      ok = false;
      continue;
    }
    std::optional<Value> item =
        entry.value ? Convert(*entry.value, type.args[1], file, item_path) : std::nullopt;
    if (!item) {
      ok = false;
      continue;
    }
    value.keys.push_back(key.text);
    value.items.push_back(std::move(*item));
  }
  if (!ok) return std::nullopt;
  return value;
}

// The member of `e` an unquoted YAML boolean word stands for: the one whose name or value is
// the same word up to case (`no` and `NO` for DistributedType's `NO`), or null.
const EnumSchema::Member* ValueConverter::YamlBoolMember(const ast::Expr& expr, const EnumSchema& e) const {
  if (!options_.yaml_scalars || expr.kind != ast::ExprKind::Bool) return nullptr;
  auto lower = [](std::string text) {
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
    return text;
  };
  std::string word = lower(expr.text);
  for (const EnumSchema::Member& m : e.members) {
    if (lower(m.name) == word || lower(m.value) == word) return &m;
  }
  return nullptr;
}

std::optional<Value> ValueConverter::ConvertEnum(const ast::Expr& expr, const Type& type,
                                                 const source::SourceFile* file, const std::string& path) {
  const EnumSchema& e = schema_.enums.find(type.name)->second;
  std::string word;
  if (expr.kind == ast::ExprKind::Path && expr.path.size() == 1) {
    word = expr.path[0].text;
  } else if (expr.kind == ast::ExprKind::String) {
    word = expr.text;
  } else if (const EnumSchema::Member* meant = YamlBoolMember(expr, e)) {
    // YAML 1.1 reads a plain `NO`, `no` or `off` as a boolean; the member was surely meant,
    // whatever the word's case (Accelerate too receives the same `False` for all of them).
    word = meant->name;
    const std::string& spelling = options_.file_keys ? meant->value : meant->name;
    diag::Diagnostic& d = diagnostics_.Emit(diag::Kind::YamlBoolWord, file, expr.span, expr.text,
                                            expr.bool_value ? "true" : "false", spelling);
    d.fixit = diag::FixIt{expr.span, "'" + spelling + "'"};
  } else {
    return Mismatch(expr, type, file, path);
  }
  const EnumSchema::Member* member = e.Find(word);
  if (member == nullptr) {
    // A config file writes members by their serialized values (`none`, `fp16`).
    std::vector<std::string> names;
    for (const EnumSchema::Member& m : e.members) names.push_back(options_.file_keys ? m.value : m.name);
    std::string guess = diag::ClosestMatch(word, names);
    diag::Diagnostic& d =
        diagnostics_.Emit(diag::Kind::UnknownEnumMember, file, expr.span, word, e.name, QuotedList(names));
    if (!guess.empty()) d.fixit = diag::ReplaceKeepingQuotes(file, expr.span, guess);
    return std::nullopt;
  }
  // `Auto` is the stdlib's "filled in by Accelerate or the Trainer"; DeepSpeed alone does not.
  if (e.name == "Auto" && options_.target == "deepspeed") {
    diagnostics_.Emit(diag::Kind::AutoUnderDeepSpeed, file, expr.span, path);
    return std::nullopt;
  }
  Value value = EnumValue(e, *member);
  value.provenance = {Provenance::Kind::Spec, file, expr.span, ""};
  return value;
}

std::optional<Value> ValueConverter::ConvertUnion(const ast::Expr& expr, const Type& type,
                                                  const source::SourceFile* file, const std::string& path) {
  // A record literal names its alternative; anything else (a config file's mapping too)
  // takes the first that fits.
  if (expr.kind == ast::ExprKind::Record && !expr.text.empty()) {
    for (const Type& alternative : type.args) {
      if (alternative.kind == Type::Kind::Record && alternative.name == expr.text) {
        return Convert(expr, alternative, file, path);
      }
    }
    return WrongRecordType(expr, type, file, path);
  }
  // A config file's mapping may name its alternative with a `type` key
  // (`optimizer: {type: AdamW, lr: 0.001}`).
  if (expr.kind == ast::ExprKind::Record && expr.text.empty()) {
    for (const ast::Statement& s : expr.block->statements) {
      if (s.path.size() != 1 || s.path[0].text != "type" || !s.value ||
          s.value->kind != ast::ExprKind::String) {
        continue;
      }
      const RecordSchema* record = AcceptedRecord(type, s.value->text);
      if (record == nullptr) {
        std::vector<std::string> names;
        for (const Type& t : type.args) names.push_back(t.Describe());
        diagnostics_.Emit(diag::Kind::UnknownType, file, s.value->span, s.value->text,
                          fmt::format("; `{}` takes one of {}", path, QuotedList(names)));
        return std::nullopt;
      }
      std::vector<Entry> entries;
      for (const ast::Statement& other : expr.block->statements) {
        if (&other != &s) entries.push_back({&other, 0, file, 0});
      }
      return records_.CheckRecord(*record, entries, file, expr.span, path + ".", expr.block->recovered);
    }
  }
  // Otherwise each alternative in turn, tried where its findings can be dropped.
  for (const Type& alternative : type.args) {
    diag::DiagnosticEngine scratch;
    if (std::optional<Value> value = records_.TryAlternative(expr, alternative, file, path, scratch)) {
      if (scratch.has_errors()) continue;
      // What the accepted alternative reported stands (a lax reading's warning, a note); the
      // rejected alternatives' errors do not.
      for (const diag::Diagnostic& d : scratch.diagnostics()) diagnostics_.Add(d);
      return value;
    }
  }
  return Mismatch(expr, type, file, path);
}

}  // namespace accel::sema
