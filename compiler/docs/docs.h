#ifndef ACCEL_COMPILER_DOCS_DOCS_H_
#define ACCEL_COMPILER_DOCS_DOCS_H_

// The reference documentation generated from the schemas (`accelc docs`): Markdown pages, one
// self-contained HTML page, and JSON Schemas of Accelerate's config files for editors. Every
// function is pure and deterministic: the same schema gives byte-identical output, so the
// checked-in docs/reference/ can be compared with a fresh run.

#include <map>
#include <string>

#include "compiler/sema/schema.h"

namespace accel::docs {

// The Markdown reference: relative path -> page. `index.md` (every type, with links),
// `types/NAME.md` per record (doc, fields table, rules, where it is used), `enums.md`,
// `rules.md` (every rule declaration by id) and `diagnostics.md` (every kinds.def code with its
// severity, message format and `accelc explain-code` explanation). Links are relative.
std::map<std::string, std::string> MarkdownReference(const sema::Schema& schema);

// The same content as one HTML page with inline CSS and JavaScript (no network access): a
// search box filters types, fields, enums, members, rules and diagnostics as you type. The page
// reads an initial search from its URL fragment (`reference.html#q=zero_stage`) and keeps the
// fragment in step with the box, so a search can be linked.
std::string HtmlReference(const sema::Schema& schema);

// A JSON Schema (draft 2020-12) of Accelerate's config file (`default_config.yaml`) for
// yaml-language-server: `ClusterConfig` at the root, `SageMakerConfig` when
// `compute_environment` is `AMAZON_SAGEMAKER` (as `accelc check` decides), a `$defs` entry per
// record and enum reachable from them. Properties are named by config-file key; enums list their
// serialized values; literal defaults and simple numeric `where` constraints are carried over;
// unknown keys are rejected. Rules are not expressed (`accelc check` reports them).
std::string JsonSchema(const sema::Schema& schema);

// The same for a DeepSpeed JSON config file (`deepspeed_config_file`): root `DeepSpeedConfig`.
// Empty when the schema declares no `DeepSpeedConfig`.
std::string DeepSpeedJsonSchema(const sema::Schema& schema);

// Everything `accelc docs --out DIR` writes, relative path -> content: MarkdownReference's
// pages, `reference.html`, `accelerate-config.schema.json` and `deepspeed-config.schema.json`.
std::map<std::string, std::string> ReferenceFiles(const sema::Schema& schema);

}  // namespace accel::docs

#endif  // ACCEL_COMPILER_DOCS_DOCS_H_
