// Build step: parses the stdlib schema files, checks that they resolve, and writes one AST
// image per file (ast::Serialize) for embedding, so accelc never runs the parser on them.
// A stdlib error fails the build here, with the usual diagnostics.
//
// usage: accel_stdlib_snapshot OUT_DIR FILE.accel...
#include <cstdio>
#include <fstream>
#include <memory>
#include <vector>

#include "compiler/ast/serialize.h"
#include "compiler/diagnostics/render.h"
#include "compiler/parse/parse.h"
#include "compiler/sema/schema.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: accel_stdlib_snapshot OUT_DIR FILE.accel...\n");
    return 2;
  }
  std::string out_dir = argv[1];
  accel::diag::DiagnosticEngine diagnostics;
  std::vector<std::unique_ptr<accel::source::SourceFile>> sources;
  std::vector<accel::ast::File> files;
  for (int i = 2; i < argc; ++i) {
    llvm::Expected<accel::source::SourceFile> source = accel::source::SourceFile::Read(argv[i]);
    if (!source) {
      std::fprintf(stderr, "accel_stdlib_snapshot: %s\n", llvm::toString(source.takeError()).c_str());
      return 2;
    }
    // Named as accelc names them, so spans and diagnostics read the same either way.
    std::string path = argv[i];
    std::string name = "<stdlib>/" + path.substr(path.find_last_of('/') + 1);
    sources.push_back(std::make_unique<accel::source::SourceFile>(name, source->text()));
    files.push_back(accel::parse::Parse(*sources.back(), diagnostics));
  }
  std::vector<const accel::ast::File*> pointers;
  for (const accel::ast::File& file : files) pointers.push_back(&file);
  accel::sema::BuildSchema(pointers, diagnostics);
  if (diagnostics.has_errors()) {
    std::fprintf(stderr, "%s", accel::diag::RenderText(diagnostics.diagnostics()).c_str());
    return 1;
  }
  for (size_t i = 0; i < files.size(); ++i) {
    std::string name = sources[i]->name().substr(sources[i]->name().find('/') + 1);
    std::ofstream out(out_dir + "/" + name + ".ast", std::ios::binary | std::ios::trunc);
    out << accel::ast::Serialize(files[i]);
    if (!out.flush()) {
      std::fprintf(stderr, "accel_stdlib_snapshot: cannot write %s/%s.ast\n", out_dir.c_str(), name.c_str());
      return 2;
    }
  }
  return 0;
}
