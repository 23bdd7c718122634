#include "compiler/pipeline/stdlib.h"

#include "compiler/ast/serialize.h"
#include "compiler/parse/parse.h"
#include "stdlib/embedded_stdlib.h"

namespace accel::pipeline {

std::unique_ptr<Stdlib> Stdlib::Load(diag::DiagnosticEngine& diagnostics) {
  std::unique_ptr<Stdlib> stdlib(new Stdlib());
  for (const stdlib::EmbeddedFile& embedded : stdlib::Files()) {
    stdlib->sources_.push_back(
        std::make_unique<source::SourceFile>(std::string(embedded.name), std::string(embedded.text)));
  }
  stdlib->files_.reserve(stdlib->sources_.size());
  const std::vector<stdlib::EmbeddedFile>& embedded = stdlib::Files();
  for (size_t i = 0; i < embedded.size(); ++i) {
    // The build parsed the stdlib already; parse again only if its image does not decode.
    std::optional<ast::File> file = ast::Deserialize(embedded[i].image, stdlib->sources_[i].get());
    stdlib->files_.push_back(file ? std::move(*file) : parse::Parse(*stdlib->sources_[i], diagnostics));
  }
  std::vector<const ast::File*> files;
  for (const ast::File& file : stdlib->files_) files.push_back(&file);
  stdlib->schema_ = sema::BuildSchema(files, diagnostics);
  return stdlib;
}

}  // namespace accel::pipeline
