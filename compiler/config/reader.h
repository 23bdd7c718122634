#ifndef ACCEL_COMPILER_CONFIG_READER_H_
#define ACCEL_COMPILER_CONFIG_READER_H_

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ast/ast.h"
#include "compiler/diagnostics/diagnostic.h"

namespace accel::config {

// What kind of file a config file is, which decides its root schema record.
enum class FileKind {
  AccelerateConfig,  // `default_config.yaml`: `ClusterConfig` or `SageMakerConfig`
  DeepSpeedConfig,   // a DeepSpeed JSON config (`hf_ds_config`): `DeepSpeedConfig`
  JobSpec,           // a job spec written in YAML: a top-level `job: NAME` and the fields of `Job`
};

struct ConfigFile {
  FileKind kind = FileKind::AccelerateConfig;
  // The schema record the top-level mapping is checked against.
  std::string root_record;
  // One synthetic job whose body holds the top-level keys. Mappings become anonymous record
  // literals (ast::Expr of kind Record with an empty type name), sequences lists, scalars
  // literals typed the way Accelerate's loader types them; every node spans its YAML text.
  ast::File file;
  // Top-level keys of an Accelerate config set to null (still in `file`, as nulls): some of
  // them launch reads as a value (ReadNullKeysAsLaunchDoes).
  std::vector<ast::Name> null_keys;
};

// True for the file names `accelc check` reads as config files rather than `.accel` specs.
bool IsConfigFileName(const std::string& path);

// Which reader ReadConfigFile uses. They give a file the same tree and diagnostics, except
// that the JSON reader refuses what Python's json.load refuses, with its own messages.
enum class YamlParser {
  // JSON: our reader (json_tree.h). YAML: the simple reader (simple_yaml.h) where it takes the
  // file, else yaml-cpp.
  kOwnReaders,
  kYamlCpp,  // yaml-cpp only, for JSON too: what the tests compare our readers with
};

// Which top-level keys each kind of file has, from the schema (the driver passes its stdlib's).
// A file's kind is decided by its keys: DeepSpeed JSON saved as `.yaml`, or carrying one
// Accelerate key, is still a DeepSpeed config. Empty: by the name and Accelerate's two
// identifying keys alone.
struct KeyOwners {
  std::function<bool(std::string_view)> accelerate;  // a key of an Accelerate config
  std::function<bool(std::string_view)> deepspeed;   // a key of a DeepSpeed config
};

// Parses `source` as YAML, or as JSON when the name ends in `.json`: as Python's json.load
// reads it (RFC 8259 and `NaN`, `Infinity`, `-Infinity`), with JSON's number rules.
// Plain YAML scalars resolve as PyYAML's safe loader does (YAML 1.1: `yes`/`off` are bools,
// `1e5` without a dot is a string), because that is what Accelerate sees. Syntax errors are
// reported as A1001 with the parser's location; JSON nested deeper than 256 levels is A1006.
// The kind is the one more of the top-level keys belong to (ties: `.json` without
// `distributed_type` or `compute_environment` is DeepSpeed's); DeepSpeed content in a file not
// named `.json` gets a note (A0004) and, being JSON, is typed as json.load types it, because
// every DeepSpeed reader loads it with json.load whatever its name.
ConfigFile ReadConfigFile(const source::SourceFile& source, diag::DiagnosticEngine& diagnostics,
                          const KeyOwners& owners = {}, YamlParser parser = YamlParser::kOwnReaders);

}  // namespace accel::config

#endif  // ACCEL_COMPILER_CONFIG_READER_H_
