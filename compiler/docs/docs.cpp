#include "compiler/docs/docs.h"

#include "compiler/plan/plan.h"

namespace accel::docs {

std::map<std::string, std::string> ReferenceFiles(const sema::Schema& schema) {
  std::map<std::string, std::string> files = MarkdownReference(schema);
  files["reference.html"] = HtmlReference(schema);
  // A custom schema may lack the roots; an empty schema file would only mislead an editor.
  if (std::string json = JsonSchema(schema); !json.empty()) files["accelerate-config.schema.json"] = json;
  if (std::string json = DeepSpeedJsonSchema(schema); !json.empty())
    files["deepspeed-config.schema.json"] = json;
  // The plan's own schema comes from the plan's table, not from the stdlib.
  files["plan.schema.json"] = plan::JsonSchema();
  return files;
}

}  // namespace accel::docs
