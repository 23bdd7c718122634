// ExportDeepSpeedJson: a checked DeepSpeed config as the JSON file DeepSpeed reads.
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "compiler/interop/interop.h"
#include "compiler/interop/values.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace accel::interop {
namespace {

namespace json = llvm::json;

// llvm::json requires UTF-8; a checked file always is, but a malformed byte must not abort.
std::string Utf8(const std::string& text) { return json::isUTF8(text) ? text : json::fixUTF8(text); }

// A float as Python's json module writes it (float.__repr__): `1.0`, `0.1`, `1e-08`, and the
// non-standard `Infinity` and `NaN` that json.load accepts. llvm::json would write 17 digits
// (`0.10000000000000001`).
std::string PythonFloat(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  std::string text = ShortestDouble(value);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

class Writer {
 public:
  Writer(json::OStream& out, const sema::Schema& schema) : out_(out), schema_(schema) {}

  void Write(const sema::Value& value) {
    switch (value.kind) {
      case sema::Value::Kind::None:
        out_.value(nullptr);
        return;
      case sema::Value::Kind::Bool:
        out_.value(value.bool_value);
        return;
      case sema::Value::Kind::Int:
      case sema::Value::Kind::Bytes:
        out_.value(value.int_value);
        return;
      case sema::Value::Kind::Float:
        out_.rawValue(PythonFloat(value.float_value));
        return;
      case sema::Value::Kind::Duration:
        // No DeepSpeed key holds a duration today; seconds, as Accelerate's timeouts are.
        if (value.int_value % 1000 == 0) {
          out_.value(value.int_value / 1000);
        } else {
          out_.rawValue(PythonFloat(static_cast<double>(value.int_value) / 1000));
        }
        return;
      case sema::Value::Kind::String:
        out_.value(Utf8(value.text));
        return;
      case sema::Value::Kind::Enum:
        out_.value(value.enum_value);
        return;
      case sema::Value::Kind::List:
        out_.array([&] {
          for (const sema::Value& item : value.items) Write(item);
        });
        return;
      case sema::Value::Kind::Map: {
        std::vector<std::pair<std::string, const sema::Value*>> entries;
        for (size_t i = 0; i < value.items.size(); ++i) entries.emplace_back(value.keys[i], &value.items[i]);
        WriteObject(std::move(entries));
        return;
      }
      case sema::Value::Kind::Record: {
        // Unlike Accelerate's YAML writer, nothing the file set is dropped: `"bf16": {}` and
        // an explicit `null` mean something to DeepSpeed's own defaults.
        std::vector<std::pair<std::string, const sema::Value*>> entries;
        for (const WrittenField& field : FieldsToWrite(value, schema_)) {
          entries.emplace_back(FileKey(*field.field), field.value);
        }
        WriteObject(std::move(entries));
        return;
      }
    }
  }

 private:
  // An object with its keys sorted (json.dumps `sort_keys`), so diffs between configs stay small.
  void WriteObject(std::vector<std::pair<std::string, const sema::Value*>> entries) {
    std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    out_.object([&] {
      for (const auto& [key, item] : entries) {
        out_.attributeBegin(Utf8(key));
        Write(*item);
        out_.attributeEnd();
      }
    });
  }

  json::OStream& out_;
  const sema::Schema& schema_;
};

}  // namespace

std::string ExportDeepSpeedJson(const sema::Value& deepspeed_config, const sema::Schema& schema) {
  std::string text;
  llvm::raw_string_ostream stream(text);
  {
    json::OStream out(stream, /*IndentSize=*/2);
    Writer(out, schema).Write(deepspeed_config);
  }
  stream.flush();
  return text + "\n";
}

}  // namespace accel::interop
