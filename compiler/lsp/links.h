#ifndef ACCEL_COMPILER_LSP_LINKS_H_
#define ACCEL_COMPILER_LSP_LINKS_H_

// Where the server points the editor: the reference page of a diagnostic code, and the file of
// a stdlib declaration (docs/lsp.md, "URIs").

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "compiler/pipeline/stdlib.h"
#include "compiler/source/source_file.h"

namespace accel::lsp {

class Links {
 public:
  // `reference_base`: the URL of the generated reference folder, ending in `/` (empty: no
  // links). `stdlib_dir`: the folder the embedded stdlib is written to for go-to-definition
  // (empty: the `accel-stdlib:` scheme instead). `stdlib` must outlive the Links.
  Links(std::string reference_base, std::string stdlib_dir, const pipeline::Stdlib& stdlib);

  // `diagnostics.md#a2003` for a kinds.def code, `types/RECORD.md#rules` for a stdlib rule id,
  // under the reference base. Empty when there is no base or the code is unknown.
  std::optional<std::string> CodeHref(std::string_view code) const;

  // The URI of a source file: `file://` of its absolute path, or for the embedded stdlib
  // (`<stdlib>/launch.accel`) the file written under the stdlib folder, read-only. Writing
  // happens once, on first use; if it fails, `accel-stdlib:///launch.accel`.
  std::string UriOf(const source::SourceFile& file);
  std::string UriOfPath(const std::string& path) const;

 private:
  bool WriteStdlib();

  std::string reference_base_;
  std::string stdlib_dir_;
  const pipeline::Stdlib& stdlib_;
  std::map<std::string, std::string, std::less<>> rule_records_;  // rule id -> declaring record
  enum class StdlibState { kUnwritten, kWritten, kFailed } stdlib_state_ = StdlibState::kUnwritten;
};

// The folder of the running executable (`/proc/self/exe`), or empty.
std::string ExecutableDir();

// The default reference base: `share/accel/reference/` beside an installed accelc, or the
// checkout's `docs/reference/` beside a build tree's, as a `file://` URL; empty if neither
// holds `diagnostics.md`.
std::string DefaultReferenceBase();

// The default stdlib folder: `$XDG_CACHE_HOME/accelc/stdlib-VERSION` (else `~/.cache/...`),
// where VERSION changes whenever the embedded text does. Empty without a home.
std::string DefaultStdlibDir(const pipeline::Stdlib& stdlib);

}  // namespace accel::lsp

#endif  // ACCEL_COMPILER_LSP_LINKS_H_
