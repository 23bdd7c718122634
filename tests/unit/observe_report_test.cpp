// What reads a run's metrics back: the metrics.jsonl reader, the loss sparkline of accelrun's
// done line, the SVG charts and the report page.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <regex>
#include <string>
#include <vector>

#include "runtime/observe/metrics_history.h"
#include "runtime/observe/metrics_log.h"
#include "runtime/observe/report_page.h"
#include "runtime/observe/sparkline.h"
#include "runtime/observe/svg_chart.h"

namespace accel::rt::observe {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// The vertices of every polyline of series `name` in `svg`.
std::vector<std::string> Vertices(const std::string& svg, const std::string& name) {
  std::vector<std::string> out;
  std::regex polyline("<polyline[^>]*data-series=\"" + name + "\"[^>]*points=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), polyline); it != std::sregex_iterator(); ++it) {
    std::string points = (*it)[1].str();
    std::regex vertex(R"([-0-9.]+,[-0-9.]+)");
    for (auto v = std::sregex_iterator(points.begin(), points.end(), vertex); v != std::sregex_iterator();
         ++v)
      out.push_back(v->str());
  }
  return out;
}

// The bars as a list of characters (each block character is 3 bytes of UTF-8; so is ×).
std::vector<std::string> Chars(const std::string& bars) {
  std::vector<std::string> out;
  for (size_t i = 0; i < bars.size(); i += 3) out.push_back(bars.substr(i, 3));
  return out;
}

TEST(Sparkline, FallingSeriesGoesFromTheTopBlockToTheBottomOne) {
  std::vector<double> falling;
  for (int i = 0; i < 48; ++i) falling.push_back(10.0 - i * 0.2);
  Sparkline line = DrawSparkline(falling, 24);
  std::vector<std::string> chars = Chars(line.bars);
  ASSERT_EQ(chars.size(), 24u);
  EXPECT_EQ(chars.front(), "█");
  EXPECT_EQ(chars.back(), "▁");
  // Never rising along the way.
  const std::string order = "▁▂▃▄▅▆▇█";
  for (size_t i = 1; i < chars.size(); ++i) EXPECT_LE(order.find(chars[i]), order.find(chars[i - 1])) << i;
  EXPECT_DOUBLE_EQ(line.max, 10.0);
  EXPECT_DOUBLE_EQ(line.min, 10.0 - 47 * 0.2);
  EXPECT_EQ(line.points, 48u);
  EXPECT_EQ(FormatSparkline(line), line.bars + " (min 0.6, max 10)");
}

TEST(Sparkline, BucketsAreMeansOfConsecutiveValues) {
  // 8 values in 4 buckets of 2: means 1, 3, 5, 7 spread over the eight heights.
  Sparkline line = DrawSparkline({0, 2, 2, 4, 4, 6, 6, 8}, 4);
  EXPECT_EQ(line.bars, "▁▃▆█");
  EXPECT_DOUBLE_EQ(line.min, 0);
  EXPECT_DOUBLE_EQ(line.max, 8);
}

TEST(Sparkline, ConstantSeriesIsAFlatLineAtMidHeight) {
  Sparkline line = DrawSparkline(std::vector<double>(30, 0.5), 24);
  std::string flat;
  for (int i = 0; i < 24; ++i) flat += "▄";
  EXPECT_EQ(line.bars, flat);
  EXPECT_EQ(FormatSparkline(line), line.bars + " (min 0.5, max 0.5)");
}

TEST(Sparkline, FewerPointsThanBucketsGetOneCharacterEach) {
  Sparkline line = DrawSparkline({3, 1, 2}, 24);
  EXPECT_EQ(line.bars, "█▁▅");
  EXPECT_EQ(line.points, 3u);
}

TEST(Sparkline, NonFiniteValuesAreMarkedAndLeftOutOfTheRange) {
  Sparkline line = DrawSparkline({4, kNaN, 2, kInf, 0}, 24);
  EXPECT_EQ(line.bars, "█×▅×▁");
  EXPECT_DOUBLE_EQ(line.min, 0);
  EXPECT_DOUBLE_EQ(line.max, 4);
  EXPECT_EQ(line.finite_points, 3u);
  // A bucket holding a NaN shows it even among finite neighbours.
  EXPECT_EQ(DrawSparkline({1, 2, kNaN, 4}, 2).bars, "▄×");
  // Nothing finite at all: marks only, and a range of zeros rather than infinities.
  Sparkline none = DrawSparkline({kNaN, -kInf}, 24);
  EXPECT_EQ(none.bars, "××");
  EXPECT_EQ(none.min, 0);
  EXPECT_EQ(none.max, 0);
}

TEST(Sparkline, EmptySeriesDrawsNothing) {
  EXPECT_EQ(DrawSparkline({}, 24).bars, "");
  EXPECT_EQ(FormatSparkline(DrawSparkline({}, 24)), "");
}

TEST(MetricsHistory, ReadsWhatMetricsLogWrites) {
  std::string text = MetricsLog::FormatLine(1, {{"loss", 2.5}, {"lr", 0.001}}, 100) +
                     MetricsLog::FormatLine(20, {{"loss", kNaN}, {"lr", 0.002}}, 101) +
                     MetricsLog::FormatLine(20, {{"eval_loss", 1.5}}, 102);
  llvm::Expected<MetricsHistory> history = ParseMetricsHistory(text, "m.jsonl");
  ASSERT_TRUE(static_cast<bool>(history)) << llvm::toString(history.takeError());
  EXPECT_EQ(history->records, 3u);
  ASSERT_EQ(history->series.size(), 3u);  // eval_loss, loss, lr: `step` and `time` are no series
  const Series* loss = history->Find("loss");
  ASSERT_NE(loss, nullptr);
  ASSERT_EQ(loss->points.size(), 2u);
  EXPECT_EQ(loss->points[0], (std::pair<int64_t, double>{1, 2.5}));
  EXPECT_EQ(loss->points[1].first, 20);
  EXPECT_TRUE(std::isnan(loss->points[1].second));  // written as null
  ASSERT_NE(history->Find("eval_loss"), nullptr);
  EXPECT_EQ(history->Find("eval_loss")->points.size(), 1u);
  EXPECT_TRUE(history->resumes.empty());
}

TEST(MetricsHistory, StepGoingBackMarksAResumeAndDropsTheAbandonedValues) {
  // Logged to step 40; resumed from the checkpoint at 40 (41 and 60 logged: a step forward, so
  // unseen without a marker); killed, and resumed from the checkpoint at step 20: 21, 40, 60, 80.
  // Step 41 belongs to the abandoned attempt only: it must go, not stay between 40 and 60.
  std::string text =
      "{\"step\":1,\"loss\":4}\n{\"step\":20,\"loss\":3}\n{\"step\":40,\"loss\":2}\n"
      "{\"step\":41,\"loss\":1.8,\"grad_norm\":7}\n{\"step\":60,\"loss\":1.5}\n"
      "{\"step\":21,\"loss\":2.9}\n{\"step\":40,\"loss\":2.1}\n{\"step\":60,\"loss\":1.4}\n{\"step\":80,"
      "\"loss\":1}\n";
  llvm::Expected<MetricsHistory> history = ParseMetricsHistory(text, "m.jsonl");
  ASSERT_TRUE(static_cast<bool>(history)) << llvm::toString(history.takeError());
  ASSERT_EQ(history->resumes.size(), 1u);
  EXPECT_EQ(history->resumes[0].step, 20);  // as the console says it: resumed at step 20
  EXPECT_EQ(history->resumes[0].line, 6u);
  std::vector<std::pair<int64_t, double>> expected = {{1, 4},    {20, 3},   {21, 2.9},
                                                      {40, 2.1}, {60, 1.4}, {80, 1}};
  EXPECT_EQ(history->Find("loss")->points, expected);
  // The abandoned attempt's only grad_norm is dropped too: the series stays, empty.
  ASSERT_NE(history->Find("grad_norm"), nullptr);
  EXPECT_TRUE(history->Find("grad_norm")->points.empty());
}

TEST(MetricsHistory, LaterRecordForTheSameStepReplacesTheEarlierOne) {
  llvm::Expected<MetricsHistory> history =
      ParseMetricsHistory("{\"step\":5,\"loss\":1}\n{\"step\":5,\"loss\":0.5,\"lr\":3}\n", "m.jsonl");
  ASSERT_TRUE(static_cast<bool>(history)) << llvm::toString(history.takeError());
  EXPECT_EQ(history->Find("loss")->points, (std::vector<std::pair<int64_t, double>>{{5, 0.5}}));
  EXPECT_TRUE(history->resumes.empty());  // the same step again is no step back
}

TEST(MetricsHistory, ResumeMarkerDropsWhatTheAbandonedAttemptLoggedAfterItsCheckpoint) {
  // Logged to step 30 with checkpoints at 10 and 20; killed after logging 30; resumed from the
  // checkpoint at step 20. Marker lines add no series (not even elapsed_seconds).
  std::string text =
      "{\"step\":1,\"loss\":4}\n{\"step\":10,\"loss\":3}\n"
      "{\"step\":10,\"time\":1,\"event\":\"checkpoint\",\"elapsed_seconds\":2.5}\n"
      "{\"step\":20,\"loss\":2}\n{\"step\":20,\"time\":2,\"event\":\"checkpoint\",\"elapsed_seconds\":5}\n"
      "{\"step\":25,\"loss\":1.9}\n{\"step\":30,\"loss\":1.5}\n"
      "{\"step\":20,\"time\":3,\"event\":\"resume\",\"checkpoint\":\"runs/j/checkpoints/checkpoint_1\","
      "\"elapsed_seconds\":5}\n"
      "{\"step\":21,\"loss\":1.95}\n{\"step\":30,\"loss\":1.4}\n"
      // A resume from the very last checkpoint repeats no step: only its marker shows it.
      "{\"step\":30,\"time\":4,\"event\":\"resume\"}\n{\"step\":31,\"loss\":1.3}\n";
  llvm::Expected<MetricsHistory> history = ParseMetricsHistory(text, "m.jsonl");
  ASSERT_TRUE(static_cast<bool>(history)) << llvm::toString(history.takeError());
  ASSERT_EQ(history->resumes.size(), 2u);  // the marker's own, not another for step 21 < 30
  EXPECT_EQ(history->resumes[0].step, 20);  // the marker's step: the checkpoint's
  EXPECT_EQ(history->resumes[0].line, 8u);
  EXPECT_EQ(history->resumes[0].checkpoint, "runs/j/checkpoints/checkpoint_1");
  EXPECT_EQ(history->resumes[1].step, 30);
  EXPECT_EQ(history->resumes[1].checkpoint, "");
  EXPECT_EQ(history->series.size(), 1u);
  // 25 was logged only by the abandoned attempt; 20, the checkpoint's own step, stays.
  EXPECT_EQ(history->Find("loss")->points, (std::vector<std::pair<int64_t, double>>{
                                               {1, 4}, {10, 3}, {20, 2}, {21, 1.95}, {30, 1.4}, {31, 1.3}}));
}

TEST(MetricsHistory, PartialLastLineOfAKilledRunIsDropped) {
  llvm::Expected<MetricsHistory> history =
      ParseMetricsHistory("{\"step\":1,\"loss\":2}\n{\"step\":20,\"lo", "m.jsonl");
  ASSERT_TRUE(static_cast<bool>(history)) << llvm::toString(history.takeError());
  EXPECT_TRUE(history->dropped_partial_last_line);
  EXPECT_EQ(history->Find("loss")->points.size(), 1u);
}

// The file is read line by line (a run's file can hold millions of records): what it gives is
// what the same text parsed whole gives, resumes, replaced steps and a cut-short last line too.
TEST(MetricsHistory, ReadingTheFileGivesWhatParsingItsTextGives) {
  const std::string text =
      "{\"step\":1,\"loss\":2}\n{\"step\":2,\"loss\":1.5,\"lr\":0.1}\n{\"step\":3,\"loss\":1}\n"
      "{\"step\":2,\"event\":\"resume\",\"checkpoint\":\"c\"}\n{\"step\":3,\"loss\":0.9}\n"
      "{\"step\":3,\"lr\":0.05}\n{\"step\":2,\"loss\":7}\n{\"step\":4,\"lo";
  const std::string path = (std::filesystem::temp_directory_path() / "accel_metrics_history_test.jsonl").string();
  std::ofstream(path, std::ios::binary) << text;
  llvm::Expected<MetricsHistory> parsed = ParseMetricsHistory(text, path);
  llvm::Expected<MetricsHistory> read = ReadMetricsHistory(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(static_cast<bool>(parsed)) << llvm::toString(parsed.takeError());
  ASSERT_TRUE(static_cast<bool>(read)) << llvm::toString(read.takeError());
  EXPECT_TRUE(read->dropped_partial_last_line);
  EXPECT_EQ(read->records, parsed->records);
  ASSERT_EQ(read->resumes.size(), 2u);
  EXPECT_EQ(read->resumes[0].checkpoint, "c");
  EXPECT_EQ(read->resumes[1].step, 1);
  ASSERT_EQ(read->series.size(), parsed->series.size());
  for (size_t i = 0; i < read->series.size(); ++i) {
    EXPECT_EQ(read->series[i].name, parsed->series[i].name);
    EXPECT_EQ(read->series[i].points, parsed->series[i].points) << read->series[i].name;
  }
  // After the second resume (at step 1) only step 2's loss of 7 is left.
  ASSERT_NE(read->Find("loss"), nullptr);
  EXPECT_EQ(read->Find("loss")->points, (std::vector<std::pair<int64_t, double>>{{1, 2}, {2, 7}}));
}

TEST(MetricsHistory, IgnoresBlankLinesAndFieldsThatAreNotNumbers) {
  llvm::Expected<MetricsHistory> history =
      ParseMetricsHistory("\n{\"step\":1,\"loss\":2,\"note\":\"x\",\"tags\":[1]}\n\n", "m.jsonl");
  ASSERT_TRUE(static_cast<bool>(history)) << llvm::toString(history.takeError());
  EXPECT_EQ(history->series.size(), 1u);
  EXPECT_FALSE(history->dropped_partial_last_line);
}

std::string ErrorOf(std::string_view text) {
  llvm::Expected<MetricsHistory> history = ParseMetricsHistory(text, "run/metrics.jsonl");
  if (history) return "no error";
  return llvm::toString(history.takeError());
}

TEST(MetricsHistory, CorruptLinesAreNamedWithTheirLineAndColumn) {
  EXPECT_EQ(
      ErrorOf("{\"step\":1}\n{\"step\":2,,}\n"),
      "run/metrics.jsonl:2:11: not a JSON object: Expected object key; each line of metrics.jsonl is one "
      "object such as {\"step\":20,\"time\":1718000000.5,\"loss\":0.25}");
  EXPECT_EQ(ErrorOf("{\"step\":1}\n[1,2]\n"),
            "run/metrics.jsonl:2:1: found an array; each line of metrics.jsonl is one JSON object such as "
            "{\"step\":20,\"time\":1718000000.5,\"loss\":0.25}");
  EXPECT_EQ(ErrorOf("{\"loss\":1}\n"),
            "run/metrics.jsonl:1:1: the record has no `step`; every record names its step as \"step\": N, an "
            "integer >= 0");
  EXPECT_EQ(ErrorOf("{\"loss\":1, \"step\":\"3\"}\n"),
            "run/metrics.jsonl:1:12: `step` is a string; expected an integer >= 0");
  EXPECT_EQ(ErrorOf("{\"step\":-4}\n"), "run/metrics.jsonl:1:2: `step` is -4; expected an integer >= 0");
  // Nesting that would exhaust the parser's stack is refused before parsing.
  EXPECT_EQ(ErrorOf(std::string(100000, '[') + "\n"),
            "run/metrics.jsonl:1:1: nested deeper than 64 levels; a metrics record is one flat object");
  // A bad line in the middle is not a cut-short last line.
  EXPECT_NE(ErrorOf("{\"step\":1}\n{\"st\n{\"step\":2}\n"), "no error");
}

TEST(SvgChart, ThinningKeepsEachSpansExtremesAndEveryNonFiniteValue) {
  std::vector<std::pair<int64_t, double>> points;
  for (int64_t i = 0; i < 100; ++i) points.emplace_back(i, i == 37 ? 50.0 : i == 71 ? kNaN : 1.0);
  EXPECT_EQ(ThinForDrawing(points, 100).size(), 100u);
  std::vector<std::pair<int64_t, double>> thin = ThinForDrawing(points, 10);
  EXPECT_LE(thin.size(), 10u);
  auto has = [&](int64_t step) {
    for (const auto& point : thin)
      if (point.first == step) return true;
    return false;
  };
  EXPECT_TRUE(has(37));  // the spike
  EXPECT_TRUE(has(71));  // the NaN
  for (size_t i = 1; i < thin.size(); ++i) EXPECT_LT(thin[i - 1].first, thin[i].first);
}

TEST(SvgChart, NiceTicksAreRoundAndCoverTheRange) {
  EXPECT_EQ(NiceTicks(0.13, 0.92, 5), (std::vector<double>{0, 0.2, 0.4, 0.6000000000000001, 0.8, 1}));
  EXPECT_EQ(NiceTicks(1, 200, 6), (std::vector<double>{0, 50, 100, 150, 200}));
  // Just over 4 steps of 0.2: steps of 0.2, not of 0.5 with half the plot empty.
  EXPECT_EQ(NiceTicks(-0.0095, 0.9985, 5).front(), -0.2);
  EXPECT_EQ(NiceTicks(-0.0095, 0.9985, 5).back(), 1);
  // One value: a range around it.
  std::vector<double> single = NiceTicks(5, 5, 5);
  EXPECT_LT(single.front(), 5);
  EXPECT_GT(single.back(), 5);
}

TEST(SvgChart, LogTicksArePowersOfTenWithTwoAndFiveBetweenOverFewDecades) {
  EXPECT_EQ(LogTicks(0.0018, 0.47),
            (std::vector<double>{0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1}));
  EXPECT_EQ(LogTicks(0.002, 900), (std::vector<double>{0.001, 0.01, 0.1, 1, 10, 100, 1000}));
  EXPECT_EQ(LogTicks(3, 7), (std::vector<double>{1, 2, 5, 10}));
}

TEST(SvgChart, FormatsValuesWithoutExponentsUpToAMillion) {
  EXPECT_EQ(FormatValue(25048.7), "25049");
  EXPECT_EQ(FormatValue(0.003), "0.003");
  EXPECT_EQ(FormatValue(0.0019854), "0.001985");
  EXPECT_EQ(FormatValue(2.5e7), "2.5e+07");
}

TEST(SvgChart, DrawsOneVertexPerStepBrokenAtNonFiniteValues) {
  LineChart chart;
  chart.id = "s0";
  chart.name = "loss";
  chart.colour = "#1f77b4";
  chart.points = {{1, 4}, {20, 3}, {40, kNaN}, {60, 1}, {80, 0.5}};
  chart.resume_steps = {41};
  chart.first_step = 1;
  chart.last_step = 80;
  std::string svg = RenderLineChart(chart);
  std::vector<std::string> vertices = Vertices(svg, "loss");
  EXPECT_EQ(vertices.size(), 4u);
  // Step 1 at the plot's left edge (x 72); the highest value on top of the value axis.
  EXPECT_EQ(vertices.front().substr(0, 5), "72.0,");
  EXPECT_NE(svg.find("<polyline"), svg.rfind("<polyline")) << "the NaN splits the line in two";
  EXPECT_NE(svg.find("class=\"nonfinite\" data-step=\"40\""), std::string::npos);
  EXPECT_NE(svg.find("class=\"resume\" data-step=\"41\""), std::string::npos);
  EXPECT_NE(svg.find("id=\"chart-s0\""), std::string::npos);
}

TEST(SvgChart, LossThatFellByOrdersOfMagnitudeIsDrawnOnALogScale) {
  LineChart chart;
  chart.id = "s0";
  chart.name = "loss";
  chart.colour = "#1f77b4";
  chart.points = {{1, 1}, {2, 0.1}, {3, 0.01}};
  chart.first_step = 1;
  chart.last_step = 3;
  std::string linear = RenderLineChart(chart);
  EXPECT_EQ(linear.find("log scale"), std::string::npos);
  chart.log_scale_if_wide = true;
  std::string log = RenderLineChart(chart);
  EXPECT_NE(log.find("log scale"), std::string::npos);
  // Equal ratios are equal distances: 1 -> 0.1 drops as far as 0.1 -> 0.01.
  std::vector<std::string> vertices = Vertices(log, "loss");
  ASSERT_EQ(vertices.size(), 3u);
  auto y = [](const std::string& vertex) { return std::stod(vertex.substr(vertex.find(',') + 1)); };
  EXPECT_NEAR(y(vertices[1]) - y(vertices[0]), y(vertices[2]) - y(vertices[1]), 0.11);
  // Not wide enough, or not all positive: linear after all.
  chart.points = {{1, 1}, {2, 0.5}, {3, 0.1}};
  EXPECT_EQ(RenderLineChart(chart).find("log scale"), std::string::npos);
  chart.points = {{1, 1}, {2, -1}, {3, 0.01}};
  EXPECT_EQ(RenderLineChart(chart).find("log scale"), std::string::npos);
}

TEST(ReportPage, IsSelfContainedAndEscapesWhatItShows) {
  ReportPage page;
  page.job = "quick<start>";
  page.run_dir = "runs/a&b";
  page.plan_facts = {{"hash", "sha256:abc"}};
  page.settings = {{"train.steps", "200", "spec.accel:3:5"}, {"train.log_every", "20", "default"}};
  page.notes = {"cannot read `plan.json`"};
  llvm::Expected<MetricsHistory> history = ParseMetricsHistory(
      "{\"step\":1,\"loss\":2,\"lr\":0.1}\n{\"step\":2,\"loss\":1,\"lr\":0.1}\n"
      "{\"step\":1,\"loss\":1.5}\n{\"step\":2,\"loss\":0.5,\"eval_loss\":0.7,\"x<y\":1}\n",
      "m.jsonl");
  ASSERT_TRUE(static_cast<bool>(history)) << llvm::toString(history.takeError());
  page.history = std::move(*history);
  std::string html = RenderReportPage(page);
  // Nothing fetched, nothing run.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  // Text from files is escaped, names included.
  EXPECT_NE(html.find("<title>quick&lt;start&gt; — accelrun report</title>"), std::string::npos);
  EXPECT_NE(html.find("runs/a&amp;b"), std::string::npos);
  EXPECT_NE(html.find("data-series=\"x&lt;y\""), std::string::npos);
  EXPECT_EQ(html.find("x<y"), std::string::npos);
  // Known series first, in the page's order, then the others.
  size_t loss = html.find("data-metric=\"loss\"");
  size_t lr = html.find("data-metric=\"lr\"");
  size_t eval = html.find("data-metric=\"eval_loss\"");
  size_t other = html.find("data-metric=\"x&lt;y\"");
  EXPECT_LT(loss, lr);
  EXPECT_LT(lr, eval);
  EXPECT_LT(eval, other);
  EXPECT_NE(other, std::string::npos);
  EXPECT_EQ(Vertices(html, "loss").size(), 2u);
  EXPECT_NE(
      html.find("<li class=\"resume-point\" data-step=\"0\">resumed at step 0 (metrics.jsonl line 3)</li>"),
      std::string::npos);
  // Key settings: the spec's value in the first table, the default only under "all".
  size_t key_table = html.find("<h2>Key settings</h2>");
  size_t all_table = html.find("<details>");
  EXPECT_LT(key_table, html.find("train.steps"));
  EXPECT_GT(html.find("train.log_every"), all_table);
  EXPECT_NE(html.find("<p class=\"note\">cannot read `plan.json`</p>"), std::string::npos);
}

TEST(ReportPage, SaysSoWhenThereIsNothingToDrawYet) {
  ReportPage page;
  page.job = "j";
  std::string html = RenderReportPage(page);
  EXPECT_NE(html.find("holds no values yet"), std::string::npos);
  EXPECT_EQ(html.find("<svg"), std::string::npos);
}

}  // namespace
}  // namespace accel::rt::observe
