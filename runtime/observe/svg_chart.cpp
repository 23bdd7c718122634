#include "runtime/observe/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

namespace accel::rt::observe {
namespace {

// The drawing's size and the plot area inside it, in SVG user units (CSS pixels at 100%).
constexpr double kWidth = 720;
constexpr double kHeight = 240;
constexpr double kLeft = 72;
// Room on the right for half of the last step's label (`200000`).
constexpr double kRight = kWidth - 24;
constexpr double kTop = 12;
constexpr double kBottom = kHeight - 36;

constexpr const char* kAxisColour = "#6b6b6b";
constexpr const char* kGridColour = "#e6e6e6";
constexpr const char* kResumeColour = "#d62728";

}  // namespace

std::string FormatValue(double value) {
  if (std::abs(value) >= 1e4 && std::abs(value) < 1e6) return fmt::format("{:.0f}", value);
  return fmt::format("{:.4g}", value);
}

std::vector<double> LogTicks(double low, double high) {
  int first = static_cast<int>(std::floor(std::log10(low)));
  int last = static_cast<int>(std::ceil(std::log10(high)));
  if (last == first) ++last;
  bool fine = last - first <= 3;
  std::vector<double> ticks;
  for (int decade = first; decade <= last; ++decade) {
    double power = std::pow(10.0, decade);
    ticks.push_back(power);
    if (fine && decade < last) {
      ticks.push_back(2 * power);
      ticks.push_back(5 * power);
    }
  }
  return ticks;
}

std::string EscapeXml(std::string_view text) {
  std::string out;
  llvm::raw_string_ostream stream(out);
  llvm::printHTMLEscaped(llvm::StringRef(text.data(), text.size()), stream);
  return stream.str();
}

std::vector<double> NiceTicks(double low, double high, int target) {
  if (!(high > low)) {
    double pad = low == 0 ? 1 : std::abs(low) * 0.1;
    low -= pad;
    high += pad;
  }
  double raw = (high - low) / std::max(target, 1);
  if (!std::isfinite(raw) || raw <= 0) return {low, high};
  double magnitude = std::pow(10, std::floor(std::log10(raw)));
  double fraction = raw / magnitude;
  // Rounded to the nearest of 1, 2, 5 and 10 rather than up: rounding up can pick a step of
  // 5 for a range just over 4 steps of 2, and leave most of the plot empty.
  double step = magnitude * (fraction < 1.5 ? 1 : fraction < 3 ? 2 : fraction < 7 ? 5 : 10);
  double first = std::floor(low / step);
  double last = std::ceil(high / step);
  std::vector<double> ticks;
  // Multiples of `step` computed one by one, so that rounding does not drift along the axis.
  for (double i = first; i <= last; ++i) {
    double tick = i * step;
    ticks.push_back(std::abs(tick) < step * 1e-9 ? 0 : tick);
  }
  return ticks;
}

std::vector<std::pair<int64_t, double>> ThinForDrawing(const std::vector<std::pair<int64_t, double>>& points,
                                                       size_t limit) {
  if (points.size() <= limit) return points;
  size_t spans = std::max<size_t>(limit / 2, 1);
  std::vector<std::pair<int64_t, double>> kept;
  for (size_t span = 0; span < spans; ++span) {
    size_t begin = span * points.size() / spans;
    size_t end = (span + 1) * points.size() / spans;
    size_t lowest = begin;
    size_t highest = begin;
    for (size_t i = begin; i < end; ++i) {
      // A non-finite value wins both places: it is the one thing a reader must see.
      if (!std::isfinite(points[i].second)) {
        lowest = highest = i;
        break;
      }
      if (points[i].second < points[lowest].second) lowest = i;
      if (points[i].second > points[highest].second) highest = i;
    }
    kept.push_back(points[std::min(lowest, highest)]);
    if (lowest != highest) kept.push_back(points[std::max(lowest, highest)]);
  }
  return kept;
}

std::string RenderLineChart(const LineChart& chart) {
  std::vector<std::pair<int64_t, double>> points = ThinForDrawing(chart.points, kMaxDrawnPoints);
  double low = std::numeric_limits<double>::infinity();
  double high = -std::numeric_limits<double>::infinity();
  for (const auto& [step, value] : points) {
    if (!std::isfinite(value)) continue;
    low = std::min(low, value);
    high = std::max(high, value);
  }
  if (low > high) low = high = 0;  // nothing finite to draw
  bool log_scale = chart.log_scale_if_wide && low > 0 && high >= low * kLogScaleRatio;
  std::vector<double> y_ticks = log_scale ? LogTicks(low, high) : NiceTicks(low, high, 5);
  // On a log scale the axis runs over the logarithms; `scaled` maps a value onto it.
  auto scaled = [log_scale](double value) { return log_scale ? std::log10(value) : value; };
  double y_low = scaled(y_ticks.front());
  double y_high = scaled(y_ticks.back());
  // One step alone still gets an axis with room on both sides.
  double x_low = static_cast<double>(chart.first_step);
  double x_high = static_cast<double>(chart.last_step);
  if (!(x_high > x_low)) {
    x_low -= 1;
    x_high += 1;
  }
  auto x_of = [&](double step) { return kLeft + (step - x_low) / (x_high - x_low) * (kRight - kLeft); };
  auto y_of = [&](double value) {
    return kBottom - (scaled(value) - y_low) / (y_high - y_low) * (kBottom - kTop);
  };

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"chart-{0}\" class=\"chart\" viewBox=\"0 0 {1} {2}\" "
      "width=\"{1}\" height=\"{2}\" role=\"img\" aria-label=\"{3}\">\n<title>{3}</title>\n",
      chart.id, kWidth, kHeight, EscapeXml(chart.title));
  svg += fmt::format(
      "<rect class=\"plot\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#ffffff\" stroke=\"{}\"/>\n",
      kLeft, kTop, kRight - kLeft, kBottom - kTop, kAxisColour);

  // Grid and labels: values on the left, steps below.
  for (double tick : y_ticks) {
    double y = y_of(tick);
    svg += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"{}\"/>\n", kLeft, y,
                       kRight, y, kGridColour);
    svg += fmt::format(
        "<text x=\"{}\" y=\"{:.1f}\" font-size=\"11\" text-anchor=\"end\" dominant-baseline=\"middle\" "
        "fill=\"{}\">{}</text>\n",
        kLeft - 6, y, kAxisColour, FormatValue(tick));
  }
  for (double tick : NiceTicks(x_low, x_high, 6)) {
    // Steps are whole numbers; fractional ticks of a short run, and ticks past the run, are not.
    if (tick < x_low || tick > x_high || tick != std::floor(tick)) continue;
    double x = x_of(tick);
    svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"{}\"/>\n", x, kBottom,
                       x, kBottom + 4, kAxisColour);
    svg += fmt::format(
        "<text x=\"{:.1f}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\" fill=\"{}\">{}</text>\n", x,
        kBottom + 16, kAxisColour, FormatValue(tick));
  }
  svg +=
      fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\" fill=\"{}\">step</text>\n",
                  (kLeft + kRight) / 2, kHeight - 4, kAxisColour);
  if (log_scale) {
    svg += fmt::format(
        "<text class=\"log-scale\" x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\" fill=\"{}\">log "
        "scale</text>\n",
        kRight - 4, kTop + 12, kAxisColour);
  }

  for (int64_t step : chart.resume_steps) {
    double x = x_of(static_cast<double>(step));
    svg += fmt::format(
        "<g class=\"resume\" data-step=\"{0}\"><title>resumed at step {0}</title>"
        "<line x1=\"{1:.1f}\" y1=\"{2}\" x2=\"{1:.1f}\" y2=\"{3}\" stroke=\"{4}\" stroke-dasharray=\"4 3\"/>"
        "<text x=\"{5:.1f}\" y=\"{6}\" font-size=\"10\" fill=\"{4}\">resumed</text></g>\n",
        step, x, kTop, kBottom, kResumeColour, x + 3, kTop + 10);
  }

  // The curve: one polyline per run of finite values, a × where a value is not finite.
  std::string vertices;
  auto end_line = [&] {
    if (vertices.empty()) return;
    svg += fmt::format(
        "<polyline class=\"series\" data-series=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\" "
        "stroke-linejoin=\"round\" points=\"{}\"/>\n",
        EscapeXml(chart.name), chart.colour, vertices);
    vertices.clear();
  };
  for (const auto& [step, value] : points) {
    double x = x_of(static_cast<double>(step));
    if (!std::isfinite(value)) {
      end_line();
      svg += fmt::format(
          "<text class=\"nonfinite\" data-step=\"{}\" x=\"{:.1f}\" y=\"{}\" font-size=\"14\" "
          "text-anchor=\"middle\" "
          "fill=\"{}\">×</text>\n",
          step, x, kTop + 12, kResumeColour);
      continue;
    }
    vertices += fmt::format("{}{:.1f},{:.1f}", vertices.empty() ? "" : " ", x, y_of(value));
  }
  end_line();
  if (points.size() <= kMaxMarkedPoints) {
    for (const auto& [step, value] : points) {
      if (!std::isfinite(value)) continue;
      svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n",
                         x_of(static_cast<double>(step)), y_of(value), chart.colour);
    }
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace accel::rt::observe
