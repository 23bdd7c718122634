#ifndef ACCEL_RUNTIME_OBSERVE_SVG_CHART_H_
#define ACCEL_RUNTIME_OBSERVE_SVG_CHART_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace accel::rt::observe {

// One metric drawn against the step as an inline SVG line chart: no script, no stylesheet, no
// font file, so a page that embeds it shows it offline and with JavaScript off.
struct LineChart {
  // The <svg>'s id is `chart-<id>`: letters, digits, `_` and `-` only.
  std::string id;
  // The metric's name (`loss`): every <polyline> of the curve carries `data-series="<name>"`,
  // which tests and scripts select by. Escaped here.
  std::string name;
  // Read by screen readers and shown as a tooltip; escaped here.
  std::string title;
  // Any SVG colour (`#1f77b4`).
  std::string colour;
  // (step, value) in increasing step order; a NaN or an infinity breaks the line there and is
  // marked with a `×` at the top of the plot.
  std::vector<std::pair<int64_t, double>> points;
  // For losses: draw the values on a log scale when they are all positive and the largest is at
  // least kLogScaleRatio times the smallest, so that the end of a loss that fell by orders of
  // magnitude is not a flat line on the floor. The chart then says `log scale`.
  bool log_scale_if_wide = false;
  // Steps where the run was resumed: a dashed vertical line each.
  std::vector<int64_t> resume_steps;
  // The x axis, shared by every chart of a page so their steps line up. first <= last.
  int64_t first_step = 0;
  int64_t last_step = 0;
};

// The chart as one <svg> element. A curve of up to kMaxDrawnPoints points is drawn with one
// vertex per step; a longer one keeps the lowest and highest value of each of
// kMaxDrawnPoints / 2 spans of consecutive points (ThinForDrawing), which keeps spikes and the
// page small. Curves of at most kMaxMarkedPoints points also get a dot per point, so that a
// single evaluation shows.
std::string RenderLineChart(const LineChart& chart);

inline constexpr size_t kMaxDrawnPoints = 2000;
inline constexpr double kLogScaleRatio = 20;
inline constexpr size_t kMaxMarkedPoints = 60;

// `points` when there are at most `limit` of them; otherwise, for each of limit / 2 spans of
// consecutive points, its lowest and highest point in step order (one when they coincide).
// Non-finite points are kept, so a divergence still shows. `limit` must be at least 2.
std::vector<std::pair<int64_t, double>> ThinForDrawing(const std::vector<std::pair<int64_t, double>>& points,
                                                       size_t limit);

// About `target` round values (1, 2 or 5 times a power of ten apart) covering [low, high], the
// first <= low and the last >= high; for low == high, a range around that one value.
std::vector<double> NiceTicks(double low, double high, int target);

// Powers of ten covering [low, high] (both positive), the first <= low and the last >= high,
// with 2 and 5 times each power between them when they span at most three decades.
std::vector<double> LogTicks(double low, double high);

// A value as an axis or caption shows it: 4 significant digits, whole numbers up to a million
// without an exponent (`25049`, not `2.505e+04`).
std::string FormatValue(double value);

// `text` with &, <, >, " and ' replaced by entities, for HTML and SVG text and attributes.
std::string EscapeXml(std::string_view text);

}  // namespace accel::rt::observe

#endif  // ACCEL_RUNTIME_OBSERVE_SVG_CHART_H_
