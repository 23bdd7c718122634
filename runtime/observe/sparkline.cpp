#include "runtime/observe/sparkline.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace accel::rt::observe {
namespace {

// The eight heights, lowest first; each is three bytes of UTF-8.
constexpr const char* kBlocks[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
constexpr const char* kNotFinite = "×";

}  // namespace

Sparkline DrawSparkline(const std::vector<double>& values, size_t width) {
  Sparkline line;
  line.points = values.size();
  line.min = std::numeric_limits<double>::infinity();
  line.max = -std::numeric_limits<double>::infinity();
  for (double value : values) {
    if (!std::isfinite(value)) continue;
    ++line.finite_points;
    line.min = std::min(line.min, value);
    line.max = std::max(line.max, value);
  }
  if (line.finite_points == 0) line.min = line.max = 0;
  if (values.empty() || width == 0) return line;

  // Each bucket's mean, or NaN when it holds a non-finite value.
  size_t buckets = std::min(width, values.size());
  std::vector<double> means(buckets);
  for (size_t i = 0; i < buckets; ++i) {
    size_t begin = i * values.size() / buckets;
    size_t end = (i + 1) * values.size() / buckets;
    // Divided before summing, so that two huge finite values do not overflow into an infinity.
    double count = static_cast<double>(end - begin);
    for (size_t j = begin; j < end; ++j) means[i] += values[j] / count;
  }
  double low = std::numeric_limits<double>::infinity();
  double high = -std::numeric_limits<double>::infinity();
  for (double mean : means) {
    if (!std::isfinite(mean)) continue;
    low = std::min(low, mean);
    high = std::max(high, mean);
  }
  for (double mean : means) {
    if (!std::isfinite(mean)) {
      line.bars += kNotFinite;
      continue;
    }
    // Equal buckets carry no shape: a flat line at mid height rather than one glued to the floor.
    size_t level = high > low ? static_cast<size_t>(std::lround((mean - low) / (high - low) * 7)) : 3;
    line.bars += kBlocks[std::min<size_t>(level, 7)];
  }
  return line;
}

std::string FormatSparkline(const Sparkline& line) {
  if (line.bars.empty()) return "";
  return fmt::format("{} (min {:.4g}, max {:.4g})", line.bars, line.min, line.max);
}

}  // namespace accel::rt::observe
