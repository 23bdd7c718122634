#ifndef ACCEL_COMPILER_CONFIG_READER_H_
#define ACCEL_COMPILER_CONFIG_READER_H_

#include <string>

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
};

// True for the file names `accelc check` reads as config files rather than `.accel` specs.
bool IsConfigFileName(const std::string& path);

// Which YAML reader ReadConfigFile uses. Both give a file the same tree and diagnostics.
enum class YamlParser {
  kSimpleFirst,  // the simple reader (simple_yaml.h) where it takes the file, else yaml-cpp
  kYamlCpp,      // yaml-cpp only: what the tests compare the simple reader with
};

// Parses `source` as YAML (or JSON, when the name ends in `.json`, with JSON's number rules).
// Plain YAML scalars resolve as PyYAML's safe loader does (YAML 1.1: `yes`/`off` are bools,
// `1e5` without a dot is a string), because that is what Accelerate sees. Syntax errors are
// reported as A1001 with the YAML parser's location.
ConfigFile ReadConfigFile(const source::SourceFile& source, diag::DiagnosticEngine& diagnostics,
                          YamlParser parser = YamlParser::kSimpleFirst);

}  // namespace accel::config

#endif  // ACCEL_COMPILER_CONFIG_READER_H_
