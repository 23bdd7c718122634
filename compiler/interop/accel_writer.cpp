// ImportToAccel: a checked Accelerate config file as a `.accel` job spec.
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "compiler/interop/interop.h"
#include "compiler/interop/legacy.h"
#include "compiler/interop/values.h"
#include "llvm/Support/Path.h"

namespace accel::interop {
namespace {

// Literal words of the language: they cannot name a job or stand as a map key unquoted.
bool IsReserved(std::string_view word) {
  static const std::set<std::string_view> kReserved = {"true", "false",   "none", "not", "and",
                                                       "or",   "implies", "in",   "is"};
  return kReserved.count(word) > 0;
}

bool IsName(const std::string& text) {
  static const std::regex kName("[A-Za-z_][A-Za-z0-9_]*");
  return std::regex_match(text, kName) && !IsReserved(text);
}

// Renders values as `.accel` source. The first value without a spelling in the language is
// kept in `error_` and rendering goes on (the caller discards the text then).
class Renderer {
 public:
  // `root` names the record being rendered, in errors.
  Renderer(const sema::Schema& schema, std::string root, PlacePath place_path = {})
      : schema_(schema), path_{std::move(root)}, place_path_(std::move(place_path)) {}

  const std::optional<std::string>& error() const { return error_; }

  // `name { ... }` for a record, its statements one per line at `indent` + 2; on one line
  // with `;` between them when `indent` is negative (inside a list or a map).
  std::string Block(const std::string& name, const sema::Value& record, int indent) {
    std::vector<std::string> statements = Statements(record, indent < 0 ? indent : indent + 2);
    if (statements.empty()) return name + " {}";
    if (indent < 0) return name + " { " + fmt::format("{}", fmt::join(statements, "; ")) + " }";
    std::string pad(static_cast<size_t>(indent) + 2, ' ');
    std::string text = name + " {\n";
    for (const std::string& statement : statements) text += pad + statement + "\n";
    return text + std::string(static_cast<size_t>(indent), ' ') + "}";
  }

 private:
  // The statements setting what the file set in `record`. A section (record-typed field) is a
  // block. Left out, as Accelerate's own writer leaves them out: `none` (an unset optional
  // reads as `none` anyway) and sections that set nothing (Accelerate reads `{}` as no
  // section, CFG-009), unless the field is required.
  std::vector<std::string> Statements(const sema::Value& record, int indent) {
    std::vector<std::string> statements;
    for (const WrittenField& written : FieldsToWrite(record, schema_)) {
      const sema::Value& value = *written.value;
      if (value.kind == sema::Value::Kind::None) continue;
      path_.push_back(written.field->name);
      const sema::Type* type = &written.field->type;
      bool required = type->kind != sema::Type::Kind::Optional && written.field->default_value == nullptr;
      if (type->kind == sema::Type::Kind::Optional) type = &type->args[0];
      if (value.kind == sema::Value::Kind::Record && type->kind == sema::Type::Kind::Record) {
        std::string block = Block(written.field->name, value, indent);
        if (required || block != written.field->name + " {}") statements.push_back(std::move(block));
      } else if (type->kind == sema::Type::Kind::Path && value.kind == sema::Value::Kind::String &&
                 place_path_) {
        statements.push_back(written.field->name + " = " + String(place_path_(value.text)));
      } else {
        statements.push_back(written.field->name + " = " + Literal(value, indent));
      }
      path_.pop_back();
    }
    return statements;
  }

  std::string Literal(const sema::Value& value, int indent) {
    switch (value.kind) {
      case sema::Value::Kind::None:
        return "none";
      case sema::Value::Kind::Bool:
        return value.bool_value ? "true" : "false";
      case sema::Value::Kind::Int:
        // `-9223372036854775808` would lex as a negated literal that does not fit.
        if (value.int_value == std::numeric_limits<int64_t>::min())
          return Fail("the integer " + std::to_string(value.int_value));
        return std::to_string(value.int_value);
      case sema::Value::Kind::Float:
        return Float(value.float_value);
      case sema::Value::Kind::Duration:
        return Scaled(value.int_value, {{3600000, "h"}, {60000, "m"}, {1000, "s"}, {1, "ms"}}, "duration");
      case sema::Value::Kind::Bytes:
        return Scaled(
            value.int_value,
            {{1LL << 40, "TiB"}, {1LL << 30, "GiB"}, {1LL << 20, "MiB"}, {1LL << 10, "KiB"}, {1, "B"}},
            "byte size");
      case sema::Value::Kind::String:
        return String(value.text);
      case sema::Value::Kind::Enum:
        return value.text;  // the member's name, checked against the field's enum
      case sema::Value::Kind::Record:
        // Where a bare block cannot go (a union, a list): the literal names its type.
        return Block(value.type_name, value, indent);
      case sema::Value::Kind::List: {
        std::vector<std::string> items;
        for (const sema::Value& item : value.items) items.push_back(Literal(item, -1));
        return Collection("[", items, "]", indent);
      }
      case sema::Value::Kind::Map: {
        if (value.items.empty()) return "{}";
        std::vector<std::string> entries;
        for (size_t i = 0; i < value.items.size(); ++i) {
          std::string key = IsName(value.keys[i]) ? value.keys[i] : String(value.keys[i]);
          entries.push_back(key + ": " + Literal(value.items[i], -1));
        }
        return Collection("{ ", entries, " }", indent);
      }
    }
    return Fail("a value of unknown kind");
  }

  // A list or map on one line, or one item per line when that line would pass 100 columns.
  static std::string Collection(const std::string& open, const std::vector<std::string>& items,
                                const std::string& close, int indent) {
    std::string line = open + fmt::format("{}", fmt::join(items, ", ")) + close;
    constexpr size_t kColumns = 100;
    if (indent < 0 || items.empty() || static_cast<size_t>(indent) + line.size() <= kColumns) return line;
    std::string pad(static_cast<size_t>(indent) + 2, ' ');
    std::string text = open.substr(0, 1) + "\n";
    for (const std::string& item : items) text += pad + item + ",\n";
    return text + std::string(static_cast<size_t>(indent), ' ') + close.substr(close.size() - 1);
  }

  // Shortest form that reads back as the same double; a dot or an exponent keeps it a float
  // where an int would also fit (`1.0` into `int | float` takes the float).
  std::string Float(double value) {
    if (!std::isfinite(value)) return Fail(fmt::format("the float {}", value));
    std::string text = ShortestDouble(value);
    if (text.find_first_of(".e") == std::string::npos) text += ".0";
    return text;
  }

  // `amount` in the largest unit that divides it exactly.
  std::string Scaled(int64_t amount, std::initializer_list<std::pair<int64_t, const char*>> units,
                     const char* what) {
    if (amount < 0) return Fail(fmt::format("the negative {} {}", what, amount));
    for (const auto& [size, suffix] : units) {
      if (amount % size == 0) return std::to_string(amount / size) + suffix;
    }
    return Fail(what);
  }

  // A string literal with the language's escapes (`\\ \" \n \t`); other control characters
  // have no spelling. A config's text is literal, but a spec interpolates `${...}`: each `${`
  // is written `$${`, so that `${HOME}` in a YAML string stays that text instead of becoming
  // the value of HOME (a secret, where a variable holds one) in the compiled plan.
  std::string String(const std::string& text) {
    llvm::Expected<std::string> literal = AccelStringLiteral(text);
    if (literal) return std::move(*literal);
    return Fail(llvm::toString(literal.takeError()));
  }

  std::string Fail(const std::string& what) {
    if (!error_) error_ = fmt::format("`{}`: {} has no `.accel` spelling", fmt::join(path_, "."), what);
    return "none";
  }

  const sema::Schema& schema_;
  std::vector<std::string> path_;  // of the field being rendered, for the error
  PlacePath place_path_;
  std::optional<std::string> error_;
};

// The smallest complete workload: a config file describes none. Its loader draws the
// micro-batch the DeepSpeed JSON fixes (`deepspeed`, the one the config names, or null), which
// building holds it to (A4002); `samples` grows with the process count so one step's batches
// fit the data (JOB-002).
std::string Workload(const sema::Value& cluster_config, const sema::Value* deepspeed) {
  constexpr int64_t kDefaultBatchSize = 32;  // SyntheticRegression's default batch_size
  constexpr int64_t kSamples = 1024;         // and its default samples
  const sema::Value* micro = deepspeed ? deepspeed->Field("train_micro_batch_size_per_gpu") : nullptr;
  const bool fixed = micro != nullptr && micro->kind == sema::Value::Kind::Int && micro->int_value > 0;
  const int64_t batch = fixed ? micro->int_value : kDefaultBatchSize;
  const sema::Value* processes = cluster_config.Field("num_processes");
  std::string settings = "features = 16";
  if (fixed) settings += fmt::format("; batch_size = {}", batch);
  if (processes && processes->kind == sema::Value::Kind::Int && processes->int_value * batch > kSamples)
    settings += fmt::format("; samples = {}", processes->int_value * batch);
  const std::string data = fmt::format("SyntheticRegression {{ {} }}", settings);
  return "  // No Accelerate config file describes the workload: the model, data and training loop\n"
         "  // below are the smallest complete ones. Replace them with yours.\n"
         "  model = MLP { inputs = 16 }\n"
         "  data = " +
         data +
         "\n"
         "  train { steps = 100 }\n";
}

}  // namespace

llvm::Expected<std::string> AccelStringLiteral(std::string_view text) {
  std::string out = "\"";
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '$' && i + 1 < text.size() && text[i + 1] == '{') out += '$';
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          return llvm::createStringError(
              llvm::inconvertibleErrorCode(), "%s",
              fmt::format("a string holding the control character U+{:04X}", static_cast<unsigned>(c)).c_str());
        }
        out += c;
    }
  }
  return out + "\"";
}

llvm::Expected<std::string> ImportToAccel(const sema::Value& cluster_config, const sema::Schema& schema,
                                          const std::string& job_name, const PlacePath& place_path,
                                          const sema::Value* deepspeed) {
  if (cluster_config.kind != sema::Value::Kind::Record || cluster_config.type_name != "ClusterConfig") {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "only a `ClusterConfig` (compute_environment LOCAL_MACHINE) becomes a "
                                   "job's `compute`; this is a `%s`",
                                   cluster_config.type_name.c_str());
  }
  if (!IsName(job_name)) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "`%s` cannot name a job",
                                   job_name.c_str());
  }
  std::vector<std::string> upgraded;
  sema::Value compute = UpgradeLegacyKeys(cluster_config, schema, upgraded);
  Renderer renderer(schema, "compute", place_path);
  std::string block = renderer.Block("compute", compute, 2);
  if (renderer.error()) return llvm::createStringError(llvm::inconvertibleErrorCode(), *renderer.error());

  std::string source =
      cluster_config.provenance.file
          ? "`" + llvm::sys::path::filename(cluster_config.provenance.file->name()).str() + "`"
          : "an Accelerate config file";
  std::string text = fmt::format(
      "// Imported by `accelc import` from {}.\n"
      "// `compute` holds what that Accelerate config file sets; what it leaves out keeps its default.\n",
      source);
  if (!upgraded.empty())
    text += "// Legacy keys upgraded as Accelerate upgrades them when it loads the file:\n";
  for (const std::string& line : upgraded) text += "//   " + line + "\n";
  text += "\njob " + job_name + " {\n  " + block + "\n\n" + Workload(cluster_config, deepspeed) + "}\n";
  return text;
}

std::string JobNameFor(std::string_view path) {
  std::string name = llvm::sys::path::stem(llvm::StringRef(path.data(), path.size())).str();
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  }
  if (name.empty()) return "imported";
  if (std::isdigit(static_cast<unsigned char>(name[0]))) name = "_" + name;
  if (IsReserved(name)) name += "_job";
  return name;
}

}  // namespace accel::interop
