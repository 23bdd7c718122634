#include "runtime/observe/report_page.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "runtime/observe/sparkline.h"
#include "runtime/observe/svg_chart.h"

namespace accel::rt::observe {
namespace {

// The series a training run writes (docs/training.md), in the order the page shows them, with
// their titles and colours. Others (a newer run's) follow by name, in kOtherColour.
struct KnownSeries {
  const char* name;
  const char* title;
  const char* colour;
  // Losses fall by orders of magnitude: their charts switch to a log scale when they do.
  bool log_scale_if_wide;
};
constexpr KnownSeries kKnownSeries[] = {
    {"loss", "Training loss (mean over processes)", "#1f77b4", true},
    {"lr", "Learning rate", "#9467bd", false},
    {"samples_per_second", "Throughput (samples/s)", "#8c564b", false},
    {"eval_loss", "Evaluation loss", "#ff7f0e", true},
    {"eval_accuracy", "Evaluation accuracy", "#2ca02c", false},
    {"grad_norm", "Gradient norm (before clipping)", "#e377c2", true},
    {"epoch", "Epoch", "#7f7f7f", false},
};
constexpr const char* kOtherColour = "#17becf";

constexpr const char* kStyle =
    R"(body{font:14px/1.45 system-ui,sans-serif;color:#1a1a1a;margin:24px auto;max-width:760px;padding:0 12px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #dddddd}
code,.mono{font-family:ui-monospace,monospace;font-size:13px}.where{color:#6b6b6b;margin:0}
figure{margin:0 0 18px}figcaption{font-weight:600;margin-bottom:2px}.range{font-weight:400;color:#6b6b6b}
table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:3px 8px;border-bottom:1px solid #eee;vertical-align:top}
th{color:#5a5a5a;font-weight:600}.from{color:#7a7a7a}.note{background:#fff4e5;border-left:4px solid #f0a030;padding:6px 10px}
details summary{cursor:pointer;color:#5a5a5a;margin-top:8px}
)";

std::string Text(std::string_view text) { return EscapeXml(text); }

// A chart's range line: `last 0.0123 · min 0.0100 · max 1.23 · 11 points`.
std::string RangeOf(const Series& series) {
  std::vector<double> values = Values(series);
  // The sparkline's summary is the finite range and the count of non-finite values.
  Sparkline line = DrawSparkline(values, 1);
  std::string range = fmt::format("{} point{}", values.size(), values.size() == 1 ? "" : "s");
  if (line.finite_points > 0) {
    range = fmt::format("last {} · min {} · max {} · {}", FormatValue(values.back()), FormatValue(line.min),
                        FormatValue(line.max), range);
  }
  if (line.finite_points < line.points)
    range += fmt::format(" · {} not finite (×)", line.points - line.finite_points);
  return range;
}

void AppendCharts(const MetricsHistory& history, std::string& html) {
  html += "<section id=\"curves\">\n<h2>Curves</h2>\n";
  // One step axis for every chart, so a step sits at the same x on all of them.
  int64_t first = std::numeric_limits<int64_t>::max();
  int64_t last = std::numeric_limits<int64_t>::min();
  for (const Series& series : history.series) {
    if (series.points.empty()) continue;
    first = std::min(first, series.points.front().first);
    last = std::max(last, series.points.back().first);
  }
  if (first > last) {
    html +=
        "<p class=\"note\">metrics.jsonl holds no values yet: the run has not reached its first "
        "reported step.</p>\n</section>\n";
    return;
  }
  std::vector<int64_t> resume_steps;
  for (const ResumePoint& resume : history.resumes) resume_steps.push_back(resume.step);

  std::vector<std::pair<const Series*, KnownSeries>> shown;
  for (const KnownSeries& known : kKnownSeries)
    if (const Series* series = history.Find(known.name)) shown.emplace_back(series, known);
  for (const Series& series : history.series) {
    bool known = std::any_of(std::begin(kKnownSeries), std::end(kKnownSeries),
                             [&](const KnownSeries& k) { return series.name == k.name; });
    if (!known)
      shown.emplace_back(&series, KnownSeries{series.name.c_str(), series.name.c_str(), kOtherColour, false});
  }
  for (size_t i = 0; i < shown.size(); ++i) {
    const auto& [series, style] = shown[i];
    LineChart chart;
    // Ids from the position: series names come from the file and need not be valid ids.
    chart.id = fmt::format("s{}", i);
    chart.name = series->name;
    chart.title = style.title;
    chart.colour = style.colour;
    chart.log_scale_if_wide = style.log_scale_if_wide;
    chart.points = series->points;
    chart.resume_steps = resume_steps;
    chart.first_step = first;
    chart.last_step = last;
    html += fmt::format(
        "<figure data-metric=\"{}\">\n<figcaption>{} <code>{}</code> <span class=\"range\">{}</span>"
        "</figcaption>\n",
        Text(series->name), Text(style.title), Text(series->name), Text(RangeOf(*series)));
    html += RenderLineChart(chart);
    html += "</figure>\n";
  }
  html += "</section>\n";
}

void AppendResumes(const MetricsHistory& history, std::string& html) {
  html += "<section id=\"resumes\">\n<h2>Resume points</h2>\n";
  if (history.resumes.empty()) {
    html += "<p>None: metrics.jsonl shows one uninterrupted run.</p>\n";
  } else {
    html +=
        "<p>Dashed lines on the charts. Values the resumed run logged again replace the earlier "
        "ones.</p>\n<ul>\n";
    for (const ResumePoint& resume : history.resumes) {
      std::string from =
          resume.checkpoint.empty() ? "" : fmt::format(" from <code>{}</code>", Text(resume.checkpoint));
      html += fmt::format(
          "<li class=\"resume-point\" data-step=\"{0}\">resumed at step {0}{1} "
          "(metrics.jsonl line {2})</li>\n",
          resume.step, from, resume.line);
    }
    html += "</ul>\n";
  }
  html += "</section>\n";
}

void AppendFacts(const char* id, const char* heading,
                 const std::vector<std::pair<std::string, std::string>>& facts, std::string& html) {
  if (facts.empty()) return;
  html += fmt::format("<section id=\"{}\">\n<h2>{}</h2>\n<table>\n", id, heading);
  for (const auto& [label, value] : facts)
    html += fmt::format("<tr><th>{}</th><td class=\"mono\">{}</td></tr>\n", Text(label), Text(value));
  html += "</table>\n</section>\n";
}

void AppendSettings(const ReportPage& page, std::string& html) {
  if (page.settings.empty()) return;
  auto rows = [&](bool defaults) {
    std::string out;
    for (const ReportPage::Setting& setting : page.settings) {
      if (!defaults && setting.from == "default") continue;
      out += fmt::format(
          "<tr><td class=\"mono\">{}</td><td class=\"mono\">{}</td><td class=\"from\">{}</td></tr>\n",
          Text(setting.path), Text(setting.value), Text(setting.from));
    }
    return out;
  };
  constexpr const char* kHead = "<table>\n<tr><th>setting</th><th>value</th><th>from</th></tr>\n";
  html +=
      "<section id=\"settings\">\n<h2>Key settings</h2>\n<p>Every value the spec, its bases or the command "
      "line set; the rest are schema defaults.</p>\n";
  html += kHead + rows(false) + "</table>\n";
  html +=
      fmt::format("<details>\n<summary>All {} settings, defaults included</summary>\n", page.settings.size());
  html += kHead + rows(true) + "</table>\n</details>\n</section>\n";
}

}  // namespace

std::string RenderReportPage(const ReportPage& page) {
  std::string html = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>{0} — accelrun report</title>\n<style>\n{1}</style>\n</head>\n<body>\n"
      "<h1>Run <code>{0}</code></h1>\n<p class=\"where mono\">{2}</p>\n",
      Text(page.job), kStyle, Text(page.run_dir));
  if (const Series* loss = page.history.Find("loss")) {
    std::string trend = FormatSparkline(DrawSparkline(Values(*loss), 24));
    if (!trend.empty()) html += fmt::format("<p class=\"trend mono\">loss {}</p>\n", Text(trend));
  }
  for (const std::string& note : page.notes) html += fmt::format("<p class=\"note\">{}</p>\n", Text(note));
  if (page.history.dropped_partial_last_line) {
    html +=
        "<p class=\"note\">The last line of metrics.jsonl was cut short (the run was stopped while "
        "writing it) and is left out.</p>\n";
  }
  AppendCharts(page.history, html);
  AppendResumes(page.history, html);
  AppendFacts("summary", "Summary (metrics.json)", page.summary, html);
  AppendFacts("plan", "Plan", page.plan_facts, html);
  AppendSettings(page, html);
  html += "</body>\n</html>\n";
  return html;
}

}  // namespace accel::rt::observe
