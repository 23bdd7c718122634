// What several of accelc's commands share: compiling many files, reporting their diagnostics
// (each once), checking the codes --disable/--enable name, and writing an output file.
#include "compiler/driver/accelc_shared.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "compiler/diagnostics/diagnostic.h"
#include "compiler/diagnostics/render.h"
#include "compiler/pipeline/compile.h"
#include "compiler/pipeline/explain.h"
#include "compiler/pipeline/filter.h"
#include "compiler/pipeline/stdlib.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/xxhash.h"

namespace accel::accelc {

using pipeline::Compilation;

// Prints the diagnostics of every compilation, in the requested format, as one document. The
// formats people read (text, github annotations) show at most --max-diagnostics per file, then
// a note of how many more there are; json and sarif, read by programs, carry them all.
void Report(const std::vector<Compilation>& compilations, const Options& options) {
  const bool capped = options.max_diagnostics > 0 && options.format != "json" && options.format != "sarif";
  std::vector<accel::diag::Diagnostic> all;
  for (const Compilation& c : compilations) {
    const std::vector<accel::diag::Diagnostic>& mine = c.diagnostics.diagnostics();
    size_t shown = capped ? std::min(mine.size(), static_cast<size_t>(options.max_diagnostics)) : mine.size();
    all.insert(all.end(), mine.begin(), mine.begin() + static_cast<std::ptrdiff_t>(shown));
    if (shown < mine.size()) {
      size_t errors = 0;
      for (size_t i = shown; i < mine.size(); ++i) errors += mine[i].severity == accel::diag::Severity::Error;
      all.push_back(accel::diag::Diagnostic{
          "",
          accel::diag::Severity::Note,
          fmt::format(
              "{} more diagnostics in `{}` not shown ({} of them errors); `--max-diagnostics 0` shows "
              "them all",
              mine.size() - shown, c.source ? c.source->name() : std::string("this file"), errors),
          nullptr,
          {},
          {},
          {}});
    }
  }
  if (options.format == "json") {
    fmt::print("{}\n", accel::diag::RenderJson(all));
  } else if (options.format == "sarif") {
    fmt::print("{}", accel::diag::RenderSarif(all, kVersion));
  } else if (options.format == "github") {
    fmt::print("{}", accel::diag::RenderGithub(all));
  } else {
    bool color = isatty(STDERR_FILENO) && std::getenv("NO_COLOR") == nullptr;
    fmt::print(stderr, "{}", accel::diag::RenderText(all, {color}));
  }
}

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  return static_cast<bool>(out.flush());
}

diag::DiagnosticEngine ReportedOnce::Unseen(diag::DiagnosticEngine engine) {
  // Filtered in place, and remembered by a 64-bit digest of the key: a file of 65,000 unknown
  // keys held a second vector of its diagnostics and every key's text (54 MB for 1 MB). Two
  // distinct diagnostics share a digest with odds near n^2 / 2^65 (1e-10 for 65,000).
  std::vector<accel::diag::Diagnostic> all = engine.TakeAll();
  llvm::erase_if(all, [this](const accel::diag::Diagnostic& d) {
    return d.file != nullptr && !seen_.insert(llvm::xxHash64(KeyOf(d))).second;
  });
  accel::diag::DiagnosticEngine unseen;
  unseen.AddAll(std::move(all));
  return unseen;
}

std::string ReportedOnce::KeyOf(const diag::Diagnostic& d) {
  auto [it, inserted] = files_.try_emplace(d.file->name());
  if (inserted) {
    std::error_code ec;
    std::filesystem::path canonical = std::filesystem::weakly_canonical(d.file->name(), ec);
    it->second = ec ? d.file->name() : canonical.string();
  }
  return fmt::format("{}\n{}\n{}\n{}\n{}", it->second, d.span.begin, d.span.end, d.code, d.message);
}

// Compiles `files` on `jobs` threads; results keep the order of `files`.
std::vector<Compilation> CompileAll(const std::vector<std::string>& files,
                                    const accel::pipeline::Stdlib& stdlib,
                                    const accel::sema::Environment& environment,
                                    const accel::pipeline::CompileOptions& compile_options, unsigned jobs) {
  std::vector<Compilation> compilations(files.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < files.size();) {
      compilations[i] = accel::pipeline::CompileFile(files[i], stdlib, environment, compile_options);
    }
  };
  unsigned threads = std::min<size_t>(jobs, files.size());
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& thread : pool) thread.join();
  return compilations;
}

// An unknown code in --disable/--enable is a typo that would silently disable nothing.
std::string CheckToggles(const Options& options, const accel::sema::Schema& schema) {
  // Listing every code costs a run without toggles 2% of checking a config.
  if (options.filter.toggles.empty()) return "";
  std::vector<std::string> known = accel::pipeline::KnownCodes(schema);
  for (const auto& [enable, pattern] : options.filter.toggles) {
    if (accel::pipeline::PatternMatchesAny(pattern, known)) continue;
    std::string guess = accel::diag::ClosestMatch(pattern, known);
    return fmt::format(
        "`--{} {}` names no diagnostic code or rule id{}", enable ? "enable" : "disable", pattern,
        guess.empty() ? "; see `accelc explain-code`" : fmt::format("; did you mean `{}`?", guess));
  }
  return "";
}

}  // namespace accel::accelc
