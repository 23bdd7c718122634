// Build step: parses the stdlib schema files, checks that they resolve, and writes one AST
// image per file (ast::Serialize) for embedding, so accelc never runs the parser on them, and
// the typed views of their enums and records (views_writer.h) for lowering to read specs by.
// A stdlib error fails the build here, with the usual diagnostics.
//
// usage: accel_stdlib_snapshot OUT_DIR VIEWS_HEADER FILE.accel...
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ast/serialize.h"
#include "compiler/diagnostics/render.h"
#include "compiler/parse/parse.h"
#include "compiler/sema/schema.h"
#include "compiler/snapshot/views_writer.h"

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: accel_stdlib_snapshot OUT_DIR VIEWS_HEADER FILE.accel...\n");
    return 2;
  }
  std::string out_dir = argv[1];
  std::string views_header = argv[2];
  accel::diag::DiagnosticEngine diagnostics;
  std::vector<std::unique_ptr<accel::source::SourceFile>> sources;
  std::vector<accel::ast::File> files;
  for (int i = 3; i < argc; ++i) {
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
  accel::sema::Schema schema = accel::sema::BuildSchema(pointers, diagnostics);
  if (diagnostics.has_errors()) {
    std::fprintf(stderr, "%s", accel::diag::RenderText(diagnostics.diagnostics()).c_str());
    return 1;
  }
  std::string problem;
  std::optional<std::string> views = accel::snapshot::WriteViews(schema, problem);
  if (!views) {
    std::fprintf(stderr, "accel_stdlib_snapshot: %s\n", problem.c_str());
    return 1;
  }
  // Rewritten only when it changes, so that a stdlib edit that changes no type (a doc comment)
  // recompiles nothing that includes it.
  std::ifstream existing(views_header, std::ios::binary);
  std::string old((std::istreambuf_iterator<char>(existing)), std::istreambuf_iterator<char>());
  if (old != *views) {
    std::ofstream views_out(views_header, std::ios::binary | std::ios::trunc);
    views_out << *views;
    if (!views_out.flush()) {
      std::fprintf(stderr, "accel_stdlib_snapshot: cannot write %s\n", views_header.c_str());
      return 2;
    }
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
