#ifndef ACCEL_RUNTIME_OBSERVE_REPORT_PAGE_H_
#define ACCEL_RUNTIME_OBSERVE_REPORT_PAGE_H_

#include <string>
#include <utility>
#include <vector>

#include "runtime/observe/metrics_history.h"

namespace accel::rt::observe {

// What `accelrun report` puts on its page, gathered from a run directory by the caller.
struct ReportPage {
  // The job's name: the page's title.
  std::string job;
  // The run directory as the user named it.
  std::string run_dir;
  // (label, value) rows about the plan: its hash, source and steps; shown in this order.
  std::vector<std::pair<std::string, std::string>> plan_facts;
  // (label, value) rows of the run's summary (metrics.json), shown in this order.
  std::vector<std::pair<std::string, std::string>> summary;
  // The plan's settings: path, value, where the value came from (`specs/q.accel:5:21`, or
  // `default` for a schema default). The ones not from a default are shown first, as the
  // run's key settings; all of them in a collapsed table below.
  struct Setting {
    std::string path;
    std::string value;
    std::string from;
  };
  std::vector<Setting> settings;
  // Things the reader should know about what is missing (a plan that did not read).
  std::vector<std::string> notes;
  MetricsHistory history;
};

// The report as one self-contained HTML page: inline CSS, charts as inline SVG (svg_chart.h),
// no script and nothing fetched, so it opens offline, from a mail attachment or a CI artifact,
// with JavaScript off. One chart per series of the history on a shared step axis, known series
// (loss, learning rate, throughput, evaluation) first with their own colours; resume points as
// dashed lines on every chart and listed with their metrics.jsonl lines. All text is escaped.
std::string RenderReportPage(const ReportPage& page);

}  // namespace accel::rt::observe

#endif  // ACCEL_RUNTIME_OBSERVE_REPORT_PAGE_H_
