#include "compiler/pipeline/release_diff.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include <fmt/format.h>

namespace accel::pipeline {
namespace {

// A finding, as both checks place it: the same code at the same place of the same file.
using Place = std::tuple<std::string, uint32_t, std::string>;  // file, offset, code

std::map<Place, const diag::Diagnostic*> Findings(const Compilation& compilation) {
  std::map<Place, const diag::Diagnostic*> out;
  for (const diag::Diagnostic& d : compilation.diagnostics.diagnostics()) {
    if (d.file == nullptr) continue;
    out.emplace(Place{d.file->name(), d.span.begin, d.code}, &d);
  }
  return out;
}

}  // namespace

std::string DiffReleases(const std::string& path, const Stdlib& stdlib, const sema::Environment& environment,
                         const CompileOptions& options, bool& unreadable) {
  CompileOptions newer = options;
  if (options.upgrade_to.accelerate != nullptr) newer.releases.accelerate = options.upgrade_to.accelerate;
  if (options.upgrade_to.deepspeed != nullptr) newer.releases.deepspeed = options.upgrade_to.deepspeed;
  newer.upgrade_to = {};
  Compilation before = CompileFile(path, stdlib, environment, options);
  Compilation after = CompileFile(path, stdlib, environment, newer);
  unreadable = before.source == nullptr;
  std::map<Place, const diag::Diagnostic*> old_findings = Findings(before);
  std::map<Place, const diag::Diagnostic*> new_findings = Findings(after);
  const std::string_view default_note = diag::Info(diag::Kind::DefaultDiffersByRelease).code;

  // (file, offset, line): sorted into the file's order.
  std::vector<std::tuple<std::string, uint32_t, std::string>> changes;
  auto add = [&](const diag::Diagnostic& d, std::string_view what) {
    source::LineColumn at = d.file->Locate(d.span.begin);
    changes.emplace_back(d.file->name(), d.span.begin,
                         fmt::format("{}:{}:{}: {}: {} [{}]", d.file->name(), at.line, at.column, what,
                                     d.message, d.code));
  };
  for (const auto& [place, d] : old_findings) {
    if (d->code == default_note) {
      add(*d, "default changes");
      continue;
    }
    if (d->severity == diag::Severity::Note) continue;
    auto now = new_findings.find(place);
    if (now == new_findings.end() || now->second->severity == diag::Severity::Note) {
      add(*d, fmt::format("no longer {}", d->severity == diag::Severity::Error ? "an error" : "a warning"));
    } else if (now->second->severity != d->severity) {
      add(*now->second, fmt::format("{} becomes {}", diag::SeverityName(d->severity),
                                    diag::SeverityName(now->second->severity)));
    }
  }
  for (const auto& [place, d] : new_findings) {
    if (d->severity == diag::Severity::Note || d->code == default_note) continue;
    auto was = old_findings.find(place);
    if (was == old_findings.end() || was->second->severity == diag::Severity::Note) {
      add(*d, fmt::format("new {}", diag::SeverityName(d->severity)));
    }
  }
  std::sort(changes.begin(), changes.end());
  std::string out;
  for (const auto& change : changes) out += std::get<2>(change) + "\n";
  return out;
}

}  // namespace accel::pipeline
