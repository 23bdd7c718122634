#include "compiler/sema/releases.h"

#include <cstdlib>

#include <fmt/format.h>

namespace accel::sema {
namespace {

constexpr Tool accelerate = Tool::kAccelerate;
constexpr Tool deepspeed = Tool::kDeepSpeed;

// A row of releases.def over the releases `first` to `last` of `tool`.
struct Span {
  Tool tool;
  std::string_view section;
  std::string_view first;
  std::string_view last;
};
struct SectionRow {
  Span span;
  bool closed;
};
struct KeyRow {
  Span span;
  std::string_view key;
  std::string_view default_json;
  std::string_view bounds;
};
struct CheckRow {
  Span span;
  std::string_view check;
};
struct RefusedRow {
  Span span;
  std::string_view key;
};

struct Table {
  std::vector<Release> releases[2];
  std::vector<SectionRow> sections;
  std::vector<KeyRow> keys;
  std::vector<CheckRow> checks;
  std::vector<RefusedRow> refused;
};

const Table& TheTable() {
  static const Table table = [] {
    Table t;
#define ACCEL_RELEASE(tool, version)                          \
  {                                                            \
    std::vector<Release>& of_tool = t.releases[static_cast<int>(tool)]; \
    of_tool.push_back({tool, static_cast<int>(of_tool.size()), version}); \
  }
#define ACCEL_RELEASE_SECTION(tool, section, first, last, closed) \
  t.sections.push_back({{tool, section, first, last}, closed});
#define ACCEL_RELEASE_KEY(tool, section, key, first, last, default_json, bounds) \
  t.keys.push_back({{tool, section, first, last}, key, default_json, bounds});
#define ACCEL_RELEASE_CHECK(tool, section, check, first, last) \
  t.checks.push_back({{tool, section, first, last}, check});
#define ACCEL_RELEASE_REFUSED(tool, section, key, first, last) \
  t.refused.push_back({{tool, section, first, last}, key});
#include "compiler/sema/releases.def"
#undef ACCEL_RELEASE
#undef ACCEL_RELEASE_SECTION
#undef ACCEL_RELEASE_KEY
#undef ACCEL_RELEASE_CHECK
#undef ACCEL_RELEASE_REFUSED
    return t;
  }();
  return table;
}

int IndexOf(Tool tool, std::string_view version) {
  for (const Release& r : ReleasesOf(tool)) {
    if (r.version == version) return r.index;
  }
  std::abort();  // releases.def names a release in a row that it does not list
}

bool Covers(const Span& span, const Release& release) {
  return span.tool == release.tool && IndexOf(span.tool, span.first) <= release.index &&
         release.index <= IndexOf(span.tool, span.last);
}

}  // namespace

std::string_view ToolName(Tool tool) { return tool == Tool::kAccelerate ? "Accelerate" : "DeepSpeed"; }

const std::vector<Release>& ReleasesOf(Tool tool) { return TheTable().releases[static_cast<int>(tool)]; }

const Release& NewestRelease(Tool tool) { return ReleasesOf(tool).back(); }

const Release* FindRelease(Tool tool, std::string_view version) {
  const Release* newest_of_minor = nullptr;
  for (const Release& r : ReleasesOf(tool)) {
    if (r.version == version) return &r;
    // `0.19` names 0.19.x: the version, a dot, then the patch number.
    if (r.version.size() > version.size() && r.version.substr(0, version.size()) == version &&
        r.version[version.size()] == '.' && version.find('.') != std::string_view::npos) {
      newest_of_minor = &r;
    }
  }
  return newest_of_minor;
}

KeyInRelease LookUpKey(const Release& release, std::string_view section, std::string_view key) {
  const Table& t = TheTable();
  bool removed_later = false;
  for (const RefusedRow& row : t.refused) {
    if (row.span.tool != release.tool || row.span.section != section || row.key != key) continue;
    if (Covers(row.span, release)) return {KeyFate::kRefused, "", ""};
    // A removed feature: the releases before its refusal read it (with `.get`, so with no
    // default the table knows).
    removed_later = removed_later || release.index < IndexOf(release.tool, row.span.first);
  }
  for (const KeyRow& row : t.keys) {
    if (row.span.section == section && row.key == key && Covers(row.span, release)) {
      return {KeyFate::kRead, row.default_json, row.bounds};
    }
  }
  if (removed_later) return {KeyFate::kRead, "", ""};
  for (const SectionRow& row : t.sections) {
    if (row.span.section == section && Covers(row.span, release)) {
      return {row.closed ? KeyFate::kRefused : KeyFate::kIgnored, "", ""};
    }
  }
  return {};
}

std::vector<ModelledSection> SectionsOf(const Release& release) {
  std::vector<ModelledSection> out;
  for (const SectionRow& row : TheTable().sections) {
    if (Covers(row.span, release)) out.push_back({row.span.section, row.closed});
  }
  return out;
}

std::vector<KeyRead> KeysOf(const Release& release, std::string_view section) {
  std::vector<KeyRead> out;
  for (const KeyRow& row : TheTable().keys) {
    if (row.span.section == section && Covers(row.span, release)) {
      out.push_back({row.key, row.default_json, row.bounds});
    }
  }
  return out;
}

std::optional<bool> RunsCheck(const Release& release, std::string_view section, std::string_view check) {
  const Table& t = TheTable();
  bool modelled = false;
  for (const SectionRow& row : t.sections) {
    modelled = modelled || (row.span.section == section && Covers(row.span, release));
  }
  if (!modelled) return std::nullopt;
  for (const CheckRow& row : t.checks) {
    if (row.span.section == section && row.check == check && Covers(row.span, release)) return true;
  }
  return false;
}

std::string ReleasesReading(Tool tool, std::string_view section, std::string_view key) {
  std::string_view first, last;
  for (const Release& r : ReleasesOf(tool)) {
    if (LookUpKey(r, section, key).fate != KeyFate::kRead) continue;
    if (first.empty()) first = r.version;
    last = r.version;
  }
  if (first.empty()) return "";
  // The table starts at its oldest covered release: what read the key before is not known.
  if (first == ReleasesOf(tool).front().version) return fmt::format("{} up to {}", ToolName(tool), last);
  if (first == last) return fmt::format("{} {}", ToolName(tool), first);
  return fmt::format("{} {} to {}", ToolName(tool), first, last);
}

bool WithinBounds(double value, std::string_view bounds) {
  while (!bounds.empty()) {
    size_t end = bounds.find(' ');
    std::string_view bound = bounds.substr(0, end);
    bounds = end == std::string_view::npos ? "" : bounds.substr(end + 1);
    size_t op_length = bound.size() > 1 && bound[1] == '=' ? 2 : 1;
    std::string_view op = bound.substr(0, op_length);
    double limit = std::strtod(std::string(bound.substr(op_length)).c_str(), nullptr);
    bool ok = op == ">"    ? value > limit
              : op == ">=" ? value >= limit
              : op == "<"  ? value < limit
                           : value <= limit;
    if (!ok) return false;
  }
  return true;
}

std::string BoundsText(std::string_view key, std::string_view bounds) {
  std::string out;
  while (!bounds.empty()) {
    size_t end = bounds.find(' ');
    std::string_view bound = bounds.substr(0, end);
    bounds = end == std::string_view::npos ? "" : bounds.substr(end + 1);
    size_t op_length = bound.size() > 1 && bound[1] == '=' ? 2 : 1;
    if (!out.empty()) out += " and ";
    out += fmt::format("{} {} {}", key, bound.substr(0, op_length), bound.substr(op_length));
  }
  return out;
}

}  // namespace accel::sema
