#include "compiler/docs/docs.h"

namespace accel::docs {

std::map<std::string, std::string> ReferenceFiles(const sema::Schema& schema) {
  std::map<std::string, std::string> files = MarkdownReference(schema);
  files["reference.html"] = HtmlReference(schema);
  // A custom schema may lack the roots; an empty schema file would only mislead an editor.
  if (std::string json = JsonSchema(schema); !json.empty()) files["accelerate-config.schema.json"] = json;
  if (std::string json = DeepSpeedJsonSchema(schema); !json.empty())
    files["deepspeed-config.schema.json"] = json;
  return files;
}

}  // namespace accel::docs
