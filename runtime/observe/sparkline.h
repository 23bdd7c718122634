#ifndef ACCEL_RUNTIME_OBSERVE_SPARKLINE_H_
#define ACCEL_RUNTIME_OBSERVE_SPARKLINE_H_

#include <cstddef>
#include <string>
#include <vector>

namespace accel::rt::observe {

// A series drawn as one line of text, for a terminal: `█▆▄▃▂▂▁▁`.
struct Sparkline {
  // One UTF-8 block character per bucket, ▁ (lowest) to █ (highest); × for a bucket that holds
  // a NaN or an infinity, since a diverged loss is what the reader must not miss. Empty when the
  // series is.
  std::string bars;
  // The smallest and largest finite values of the series (not of the buckets); both 0 when it
  // has none.
  double min = 0;
  double max = 0;
  // How many values the series has, and how many of them are finite.
  size_t points = 0;
  size_t finite_points = 0;
};

// Draws `values` in at most `width` buckets of consecutive values, each the mean of its values:
// a series no longer than `width` gets one character per value, a longer one is spread evenly
// (bucket i holds values [i*n/width, (i+1)*n/width)). Bars scale linearly from the lowest to the
// highest bucket; a series whose buckets are all equal is drawn at mid height (▄). `width` must
// be positive.
Sparkline DrawSparkline(const std::vector<double>& values, size_t width);

// `bars (min X, max Y)` with X and Y in 4 significant digits, or "" for an empty series.
std::string FormatSparkline(const Sparkline& line);

}  // namespace accel::rt::observe

#endif  // ACCEL_RUNTIME_OBSERVE_SPARKLINE_H_
