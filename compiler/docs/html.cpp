// The reference as one self-contained HTML page: the Markdown pages' content, plus a search box
// whose plain JavaScript filters types, fields, enums, rules and diagnostics as you type. No
// external resources, so the page works offline and from `file://`.
#include <set>

#include <fmt/format.h>

#include "compiler/docs/describe.h"
#include "compiler/docs/docs.h"
#include "compiler/sema/evaluate.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

namespace accel::docs {
namespace {

std::string Escape(std::string_view text) {
  std::string out;
  llvm::raw_string_ostream stream(out);
  llvm::printHTMLEscaped(llvm::StringRef(text.data(), text.size()), stream);
  return stream.str();
}

// Schema docs mark code with backticks; they become <code> here, everything else is escaped.
std::string Markup(std::string_view text) {
  std::string out;
  bool in_code = false;
  for (char c : text) {
    if (c == '`') {
      out += in_code ? "</code>" : "<code>";
      in_code = !in_code;
    } else {
      out += Escape(std::string_view(&c, 1));
    }
  }
  // An unmatched backtick would leave a <code> open to the end of the page.
  if (in_code) out += "</code>";
  return out;
}

std::string Code(std::string_view text) { return "<code>" + Escape(text) + "</code>"; }

std::string TypeLink(const sema::Schema& schema, const std::string& name) {
  const char* prefix = schema.records.count(name) > 0 ? "type" : "enum";
  return fmt::format("<a href=\"#{}-{}\">{}</a>", prefix, Escape(name), Escape(name));
}

std::string TypeHtml(const sema::Schema& schema, const sema::Type& type) {
  return "<code>" +
         RenderType(
             type, [&](const std::string& name) { return TypeLink(schema, name); },
             [](std::string_view text) { return Escape(text); }) +
         "</code>";
}

std::string UsedByText(const sema::Schema& schema,
                       const std::map<std::string, std::vector<std::string>>& used_by,
                       const std::string& name) {
  auto it = used_by.find(name);
  if (it == used_by.end()) return "";
  std::string out = " Used by ";
  for (size_t i = 0; i < it->second.size(); ++i) {
    const std::string& place = it->second[i];
    out += (i ? ", " : "") + TypeLink(schema, place.substr(0, place.find('.'))) +
           Escape(place.substr(place.find('.')));
  }
  return out + ".";
}

std::string FieldRow(const sema::Schema& schema, const sema::RecordSchema& record,
                     const sema::FieldSchema& field) {
  std::string name = Code(field.name);
  if (field.file_key) name += "<br><span class=\"key\">key " + Code(*field.file_key) + "</span>";
  std::string notes = Markup(OneLine(field.doc));
  if (field.deprecated) notes += " <strong>Deprecated:</strong> " + Markup(*field.deprecated) + ".";
  if (!field.aliases.empty()) {
    notes += record.FileTakesOldNames() ? " Old names:"
                                        : " Old names (in a spec; a config file's loader refuses them):";
    for (size_t i = 0; i < field.aliases.size(); ++i) notes += (i ? ", " : " ") + Code(field.aliases[i]);
    notes += ".";
  }
  if (!field.synonyms.empty()) {
    notes += " Also accepted as:";
    for (size_t i = 0; i < field.synonyms.size(); ++i) notes += (i ? ", " : " ") + Code(field.synonyms[i]);
    notes += ".";
  }
  std::string env;
  for (size_t i = 0; i < field.env_vars.size(); ++i) env += (i ? "<br>" : "") + Code(field.env_vars[i]);
  std::string default_text = DefaultText(field);
  return fmt::format(
      "<tr class=\"item{}\" "
      "id=\"field-{}-{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
      field.deprecated ? " deprecated" : "", Escape(record.name), Escape(field.name), name,
      TypeHtml(schema, field.type), default_text == "required" ? "<em>required</em>" : Code(default_text),
      env, field.constraint ? Code(sema::ExprText(*field.constraint)) : "", notes);
}

std::string RecordSection(const sema::Schema& schema, const sema::RecordSchema& record,
                          const std::map<std::string, std::vector<std::string>>& used_by) {
  std::string out =
      fmt::format("<section class=\"entry\" id=\"type-{}\">\n<div class=\"head\">", Escape(record.name));
  out += fmt::format("<h3>{} <span class=\"tag\">{}</span></h3>", Escape(record.name), Escape(record.kind));
  if (!record.doc.empty()) out += "<p>" + Markup(OneLine(record.doc)) + "</p>";
  out += fmt::format("<p class=\"meta\">Declared in {}.{}</p></div>\n", Code(SourceName(record.file)),
                     UsedByText(schema, used_by, record.name));
  if (!record.fields.empty()) {
    out +=
        "<table><thead><tr><th>field</th><th>type</th><th>default</th><th>from env</th><th>constraint</th>"
        "<th>description</th></tr></thead><tbody>\n";
    for (const sema::FieldSchema& field : record.fields) out += FieldRow(schema, record, field);
    out += "</tbody></table>\n";
  }
  if (!record.rules.empty()) {
    out +=
        "<h4>Rules</h4><table><thead><tr><th>id</th><th>severity</th><th>message</th><th>holds when</th></tr>"
        "</thead><tbody>\n";
    for (const sema::RuleSchema& rule : record.rules) {
      std::string message = Markup(rule.message);
      if (!rule.doc.empty()) message += "<br><span class=\"meta\">" + Markup(OneLine(rule.doc)) + "</span>";
      out +=
          fmt::format("<tr class=\"item\"><td>{}</td><td class=\"{}\">{}</td><td>{}</td><td>{}</td></tr>\n",
                      Code(rule.code), diag::SeverityName(rule.severity), diag::SeverityName(rule.severity),
                      message, Code(sema::ExprText(*rule.condition)));
    }
    out += "</tbody></table>\n";
  }
  return out + "</section>\n";
}

std::string EnumSection(const sema::Schema& schema, const sema::EnumSchema& e,
                        const std::map<std::string, std::vector<std::string>>& used_by) {
  std::string out =
      fmt::format("<section class=\"entry\" id=\"enum-{}\">\n<div class=\"head\">", Escape(e.name));
  out += fmt::format("<h3>{} <span class=\"tag\">enum</span></h3>", Escape(e.name));
  if (!e.doc.empty()) out += "<p>" + Markup(OneLine(e.doc)) + "</p>";
  std::string used = UsedByText(schema, used_by, e.name);
  if (!used.empty()) out += "<p class=\"meta\">" + used.substr(1) + "</p>";
  out +=
      "</div>\n<table><thead><tr><th>member</th><th>value in config "
      "files</th><th>description</th></tr></thead>"
      "<tbody>\n";
  for (const sema::EnumSchema::Member& member : e.members) {
    out += fmt::format("<tr class=\"item\" id=\"member-{}-{}\"><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                       Escape(e.name), Escape(member.name), Code(member.name), Code(member.value),
                       Markup(OneLine(member.doc)));
  }
  return out + "</tbody></table>\n</section>\n";
}

// The rules and diagnostics indexes are one entry each with no head: only their rows match.
std::string RulesSection(const sema::Schema& schema) {
  std::string out =
      "<section class=\"entry\" id=\"rule-index\">\n<table><thead><tr><th>id</th><th>severity</th>"
      "<th>record</th><th>message</th></tr></thead><tbody>\n";
  std::set<std::string> seen;
  for (const RuleEntry& entry : AllRules(schema)) {
    // Several declarations share an id; the first carries the anchor.
    std::string id =
        seen.insert(entry.rule->code).second ? " id=\"rule-" + Escape(entry.rule->code) + "\"" : "";
    out +=
        fmt::format("<tr class=\"item\"{}><td>{}</td><td class=\"{}\">{}</td><td>{}</td><td>{}</td></tr>\n",
                    id, Code(entry.rule->code), diag::SeverityName(entry.rule->severity),
                    diag::SeverityName(entry.rule->severity), TypeLink(schema, entry.record->name),
                    Markup(entry.rule->message));
  }
  return out + "</tbody></table>\n</section>\n";
}

std::string DiagnosticsSection() {
  std::string out =
      "<section class=\"entry\" id=\"diagnostic-index\">\n<table><thead><tr><th>code</th>"
      "<th>severity</th><th>message</th><th>explanation</th></tr></thead><tbody>\n";
  for (const diag::KindInfo& kind : SortedKinds()) {
    std::string explanation;
    std::string text = Explanation(kind.code);
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      explanation += "<p>" + Markup(text.substr(start, end - start)) + "</p>";
      start = end + 1;
    }
    out += fmt::format(
        "<tr class=\"item\" id=\"diag-{}\"><td>{}<br><span class=\"meta\">{}</span></td><td "
        "class=\"{}\">{}</td>"
        "<td>{}</td><td>{}</td></tr>\n",
        Escape(kind.code), Code(kind.code), Escape(kind.name), diag::SeverityName(kind.severity),
        diag::SeverityName(kind.severity), Code(FormatText(kind.format)), explanation);
  }
  return out + "</tbody></table>\n</section>\n";
}

constexpr std::string_view kStyle = R"css(
:root { --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --bg2: #f6f8fa; --accent: #0969da; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); }
header { position: sticky; top: 0; z-index: 1; display: flex; gap: 1em; align-items: center;
         padding: .6em 1.2em; background: #fff; border-bottom: 1px solid var(--line); }
header h1 { font-size: 1.15em; margin: 0; white-space: nowrap; }
#q { flex: 1; max-width: 40em; font: inherit; padding: .35em .6em; border: 1px solid var(--line); border-radius: 6px; }
#count { color: var(--muted); font-size: .9em; white-space: nowrap; }
.layout { display: flex; }
nav { flex: 0 0 15em; position: sticky; top: 3.2em; align-self: flex-start; max-height: calc(100vh - 3.2em);
      overflow: auto; padding: .5em 1em; border-right: 1px solid var(--line); font-size: .9em; }
nav ul { list-style: none; margin: 0 0 1em; padding: 0; }
nav h2 { font-size: 1em; margin: .6em 0 .2em; }
main { flex: 1; min-width: 0; padding: 0 1.5em 4em; }
main > div > h2 { border-bottom: 1px solid var(--line); padding-bottom: .2em; margin-top: 1.5em; }
section.entry { margin: 1.2em 0 2em; }
h3 { margin: .2em 0; }
.tag { font-size: .7em; font-weight: normal; color: var(--muted); border: 1px solid var(--line);
       border-radius: 1em; padding: 0 .6em; vertical-align: middle; }
.meta { color: var(--muted); font-size: .9em; }
table { border-collapse: collapse; width: 100%; font-size: .92em; margin: .4em 0; }
th, td { border: 1px solid var(--line); padding: .3em .5em; text-align: left; vertical-align: top; }
th { background: var(--bg2); }
code { font: .9em ui-monospace, SFMono-Regular, Menlo, monospace; background: var(--bg2); padding: 0 .2em;
       border-radius: 4px; word-break: break-word; }
a { color: var(--accent); text-decoration: none; }
a:hover { text-decoration: underline; }
td p { margin: 0 0 .3em; }
.error { color: #cf222e; }
.warning { color: #9a6700; }
td:first-child code { white-space: nowrap; }
tr.deprecated td:first-child code { text-decoration: line-through; }
[hidden] { display: none !important; }
)css";

// Filters on every keystroke. Each whitespace-separated term must appear in an entry's head
// (its name and doc) or in one of its rows; a head match shows the whole entry. `#q=term` in
// the URL sets the search, so a search can be linked (and tested headless).
constexpr std::string_view kScript = R"js(
(function () {
  var box = document.getElementById('q');
  var count = document.getElementById('count');
  var entries = Array.prototype.slice.call(document.querySelectorAll('section.entry'));
  var texts = new Map();
  function text(el) {
    if (!texts.has(el)) texts.set(el, el.textContent.toLowerCase());
    return texts.get(el);
  }
  function matches(haystack, terms) {
    return terms.every(function (t) { return haystack.indexOf(t) >= 0; });
  }
  function apply(query) {
    var terms = query.toLowerCase().split(/\s+/).filter(Boolean);
    var shown = 0, total = 0;
    entries.forEach(function (entry) {
      var head = entry.querySelector('.head');
      var headText = head ? text(head) : '';
      var headHit = head !== null && matches(headText, terms);
      var rows = entry.querySelectorAll('tr.item');
      var any = false;
      rows.forEach(function (row) {
        var hit = headHit || matches(headText + ' ' + text(row), terms);
        row.hidden = !hit;
        any = any || hit;
        total++;
        if (hit) shown++;
      });
      entry.hidden = !(terms.length === 0 || headHit || any);
      // A table whose rows are all filtered out goes too, with its heading.
      entry.querySelectorAll('table').forEach(function (table) {
        table.hidden = table.querySelector('tr.item:not([hidden])') === null;
        var heading = table.previousElementSibling;
        if (heading && heading.tagName === 'H4') heading.hidden = table.hidden;
      });
    });
    document.querySelectorAll('main > div').forEach(function (group) {
      group.hidden = group.querySelector('section.entry:not([hidden])') === null;
    });
    document.querySelectorAll('nav a[href^="#"]').forEach(function (link) {
      var target = document.getElementById(link.getAttribute('href').slice(1));
      link.parentElement.hidden = target !== null && target.closest('[hidden]') !== null;
    });
    count.textContent = terms.length ? shown + ' of ' + total + ' rows match' : total + ' rows';
  }
  function fromHash() {
    var m = /^#q=(.*)$/.exec(location.hash);
    if (m) box.value = decodeURIComponent(m[1].replace(/\+/g, ' '));
    apply(box.value);
  }
  box.addEventListener('input', function () {
    history.replaceState(null, '', box.value ? '#q=' + encodeURIComponent(box.value) : location.pathname);
    apply(box.value);
  });
  window.addEventListener('hashchange', fromHash);
  fromHash();
})();
)js";

}  // namespace

std::string HtmlReference(const sema::Schema& schema) {
  std::map<std::string, std::vector<std::string>> used_by = UsedBy(schema);
  std::string out =
      "<!DOCTYPE html>\n<!-- Generated by `accelc docs` from stdlib/*.accel (scripts/gen-docs.sh); do not "
      "edit. "
      "-->\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>Accel schema reference</title>\n<style>";
  out += kStyle;
  out +=
      "</style>\n</head>\n<body>\n<header><h1>Accel schema reference</h1>"
      "<input id=\"q\" type=\"search\" placeholder=\"Filter types, fields, enums, rules, diagnostics\" "
      "aria-label=\"Filter\" autofocus><span id=\"count\"></span></header>\n<div class=\"layout\">\n<nav>\n";
  out += "<h2><a href=\"#types\">Types</a></h2><ul>\n";
  for (const auto& [name, record] : schema.records) out += "<li>" + TypeLink(schema, name) + "</li>\n";
  out += "</ul>\n<h2><a href=\"#enums\">Enums</a></h2><ul>\n";
  for (const auto& [name, e] : schema.enums) out += "<li>" + TypeLink(schema, name) + "</li>\n";
  out +=
      "</ul>\n<h2><a href=\"#rules\">Rules</a></h2>\n<h2><a "
      "href=\"#diagnostics\">Diagnostics</a></h2>\n</nav>\n";
  out += "<main>\n<div id=\"types\"><h2>Types</h2>\n";
  for (const auto& [name, record] : schema.records) out += RecordSection(schema, record, used_by);
  out +=
      "</div>\n<div id=\"enums\"><h2>Enums</h2>\n<p class=\"meta\">A spec names a member; a config file "
      "writes "
      "its value.</p>\n";
  for (const auto& [name, e] : schema.enums) out += EnumSection(schema, e, used_by);
  out += "</div>\n<div id=\"rules\"><h2>Rules</h2>\n" + RulesSection(schema);
  out += "</div>\n<div id=\"diagnostics\"><h2>Diagnostics</h2>\n" + DiagnosticsSection();
  out += "</div>\n</main>\n</div>\n<script>";
  out += kScript;
  out += "</script>\n</body>\n</html>\n";
  return out;
}

}  // namespace accel::docs
