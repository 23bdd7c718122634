#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "llvm/Support/JSON.h"
#include "runtime/observe/metrics_log.h"
#include "runtime/observe/progress.h"
#include "runtime/observe/tensorboard.h"
#include "tests/unit/scratch_dir.h"

namespace accel::rt::observe {
namespace {

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

void WriteFile(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// Everything written to a tmpfile so far.
std::string Contents(std::FILE* file) {
  std::fflush(file);
  std::rewind(file);
  std::string text;
  char buffer[4096];
  while (size_t got = std::fread(buffer, 1, sizeof(buffer), file)) text.append(buffer, got);
  return text;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// --- MetricsLog -------------------------------------------------------------------------------

TEST(MetricsLog, WritesStepTimeAndScalarsInOrder) {
  std::string path = (testing::ScratchDir("order") / "nested" / "metrics.jsonl").string();
  llvm::Expected<MetricsLog> log = MetricsLog::Open(path, /*append=*/false);
  ASSERT_TRUE(bool(log)) << llvm::toString(log.takeError());
  ASSERT_FALSE(bool(log->Write(1, {{"loss", 0.5}, {"lr", 0.003}, {"accuracy", 3}}, 1718000000.25)));
  ASSERT_FALSE(bool(log->Write(2, {{"zeta", 1e20}, {"alpha", -0.1}}, 1718000001.0)));
  EXPECT_EQ(ReadFile(path),
            "{\"step\":1,\"time\":1718000000.250000,\"loss\":0.5,\"lr\":0.003,\"accuracy\":3}\n"
            "{\"step\":2,\"time\":1718000001.000000,\"zeta\":1e+20,\"alpha\":-0.1}\n");
  for (const std::string& line : Lines(ReadFile(path))) {
    llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(line);
    EXPECT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
  }
}

// A disk that fills in the middle of a line took part of it, and the file ended with a torn
// line. The part is cut off again: the write fails, the file still ends with a whole line.
// The full disk is a file size limit (RLIMIT_FSIZE), set in a child so it binds nothing else.
TEST(MetricsLog, AFullDiskLeavesNoTornLine) {
  std::string path = (testing::ScratchDir("full_disk") / "metrics.jsonl").string();
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::signal(SIGXFSZ, SIG_IGN);  // a write past the limit then fails with EFBIG
    llvm::Expected<MetricsLog> log = MetricsLog::Open(path, /*append=*/false);
    if (!log || log->Write(1, {{"loss", 0.5}}, 1.0)) ::_exit(2);
    rlimit limit{};
    limit.rlim_cur = limit.rlim_max = std::filesystem::file_size(path) + 10;
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(3);
    llvm::Error error = log->Write(2, {{"loss", 0.25}, {"lr", 0.003}}, 2.0);
    bool failed = static_cast<bool>(error);
    llvm::consumeError(std::move(error));
    ::_exit(failed ? 0 : 4);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: no log, 3: no limit, 4: the write past the limit did not fail";
  EXPECT_EQ(ReadFile(path), "{\"step\":1,\"time\":1.000000,\"loss\":0.5}\n");
}

TEST(MetricsLog, WritesNonFiniteValuesAsNull) {
  std::string path = (testing::ScratchDir("nan") / "metrics.jsonl").string();
  llvm::Expected<MetricsLog> log = MetricsLog::Open(path, false);
  ASSERT_TRUE(bool(log)) << llvm::toString(log.takeError());
  double inf = std::numeric_limits<double>::infinity();
  ASSERT_FALSE(bool(log->Write(3, {{"loss", std::nan("")}, {"grad_norm", inf}, {"low", -inf}}, 5.0)));
  EXPECT_EQ(ReadFile(path), "{\"step\":3,\"time\":5.000000,\"loss\":null,\"grad_norm\":null,\"low\":null}\n");
}

TEST(MetricsLog, StampsTheCurrentTime) {
  std::string path = (testing::ScratchDir("now") / "metrics.jsonl").string();
  llvm::Expected<MetricsLog> log = MetricsLog::Open(path, false);
  ASSERT_TRUE(bool(log)) << llvm::toString(log.takeError());
  double before = static_cast<double>(std::time(nullptr));
  ASSERT_FALSE(bool(log->Write(1, {{"loss", 1.0}})));
  llvm::Expected<llvm::json::Value> line = llvm::json::parse(Lines(ReadFile(path)).at(0));
  ASSERT_TRUE(bool(line)) << llvm::toString(line.takeError());
  auto time = line->getAsObject()->getNumber("time");
  ASSERT_TRUE(time.hasValue());
  EXPECT_GE(*time, before - 1);
  EXPECT_LE(*time, before + 60);
}

TEST(MetricsLog, AppendKeepsEarlierLines) {
  std::string path = (testing::ScratchDir("append") / "metrics.jsonl").string();
  {
    llvm::Expected<MetricsLog> log = MetricsLog::Open(path, false);
    ASSERT_TRUE(bool(log)) << llvm::toString(log.takeError());
    ASSERT_FALSE(bool(log->Write(1, {{"loss", 1.0}}, 1.0)));
  }
  llvm::Expected<MetricsLog> log = MetricsLog::Open(path, /*append=*/true);
  ASSERT_TRUE(bool(log)) << llvm::toString(log.takeError());
  ASSERT_FALSE(bool(log->Write(2, {{"loss", 0.5}}, 2.0)));
  EXPECT_EQ(ReadFile(path),
            "{\"step\":1,\"time\":1.000000,\"loss\":1}\n"
            "{\"step\":2,\"time\":2.000000,\"loss\":0.5}\n");
}

TEST(MetricsLog, AppendTruncatesAPartialLastLine) {
  std::filesystem::path path = testing::ScratchDir("partial") / "metrics.jsonl";
  WriteFile(path, "{\"step\":1,\"time\":1.000000,\"loss\":1}\n{\"step\":2,\"ti");
  llvm::Expected<MetricsLog> log = MetricsLog::Open(path.string(), true);
  ASSERT_TRUE(bool(log)) << llvm::toString(log.takeError());
  ASSERT_FALSE(bool(log->Write(2, {{"loss", 0.5}}, 2.0)));
  EXPECT_EQ(ReadFile(path),
            "{\"step\":1,\"time\":1.000000,\"loss\":1}\n"
            "{\"step\":2,\"time\":2.000000,\"loss\":0.5}\n");
}

TEST(MetricsLog, AppendTruncatesAFileWithOnlyAPartialLine) {
  std::filesystem::path path = testing::ScratchDir("only_partial") / "metrics.jsonl";
  // Longer than the 64 KiB backwards read, so the scan crosses a chunk boundary.
  WriteFile(path, "{\"step\":1,\"note\":\"" + std::string(100000, 'x'));
  llvm::Expected<MetricsLog> log = MetricsLog::Open(path.string(), true);
  ASSERT_TRUE(bool(log)) << llvm::toString(log.takeError());
  ASSERT_FALSE(bool(log->Write(1, {{"loss", 2.0}}, 1.0)));
  EXPECT_EQ(ReadFile(path), "{\"step\":1,\"time\":1.000000,\"loss\":2}\n");
}

TEST(MetricsLog, AppendCreatesAMissingFile) {
  std::filesystem::path path = testing::ScratchDir("append_new") / "metrics.jsonl";
  llvm::Expected<MetricsLog> log = MetricsLog::Open(path.string(), true);
  ASSERT_TRUE(bool(log)) << llvm::toString(log.takeError());
  ASSERT_FALSE(bool(log->Write(7, {}, 1.0)));
  EXPECT_EQ(ReadFile(path), "{\"step\":7,\"time\":1.000000}\n");
}

TEST(MetricsLog, OpenWithoutAppendStartsOver) {
  std::filesystem::path path = testing::ScratchDir("truncate") / "metrics.jsonl";
  WriteFile(path, "{\"step\":1}\n");
  llvm::Expected<MetricsLog> log = MetricsLog::Open(path.string(), false);
  ASSERT_TRUE(bool(log)) << llvm::toString(log.takeError());
  EXPECT_EQ(ReadFile(path), "");
}

TEST(MetricsLog, RejectsScalarsNamedLikeTheLinesOwnFields) {
  std::filesystem::path path = testing::ScratchDir("reserved") / "metrics.jsonl";
  llvm::Expected<MetricsLog> log = MetricsLog::Open(path.string(), false);
  ASSERT_TRUE(bool(log)) << llvm::toString(log.takeError());
  llvm::Error error = log->Write(1, {{"loss", 1.0}, {"step", 2.0}}, 1.0);
  ASSERT_TRUE(bool(error));
  EXPECT_NE(llvm::toString(std::move(error)).find("metric `step`"), std::string::npos);
  EXPECT_EQ(ReadFile(path), "");
}

TEST(MetricsLog, MarkerLinesCarryTheirEventAndText) {
  std::string path = (testing::ScratchDir("events") / "metrics.jsonl").string();
  llvm::Expected<MetricsLog> log = MetricsLog::Open(path, false);
  ASSERT_TRUE(bool(log)) << llvm::toString(log.takeError());
  ASSERT_FALSE(bool(log->WriteEvent(20, "resume", {{"checkpoint", "runs/j/checkpoints/checkpoint_1"}},
                                    {{"elapsed_seconds", 12.5}}, 1718000000.5)));
  EXPECT_EQ(ReadFile(path),
            "{\"step\":20,\"time\":1718000000.500000,\"event\":\"resume\",\"checkpoint\":"
            "\"runs/j/checkpoints/checkpoint_1\",\"elapsed_seconds\":12.5}\n");
  llvm::Error clash = log->WriteEvent(21, "resume", {{"event", "x"}}, {}, 1.0);
  EXPECT_TRUE(bool(clash));
  llvm::consumeError(std::move(clash));
}

TEST(MetricsLog, RunHistoryCoversEveryLaunchUpToTheResumedStep) {
  std::filesystem::path path = testing::ScratchDir("history") / "metrics.jsonl";
  // A first launch logged to step 30 and was killed after its checkpoint at 20; the second
  // resumed at 20 and logged again from 21.
  WriteFile(path,
            "{\"step\":1,\"time\":1,\"loss\":2.5}\n"
            "{\"step\":10,\"time\":2,\"loss\":1.5}\n"
            "{\"step\":10,\"time\":2,\"event\":\"checkpoint\",\"elapsed_seconds\":4}\n"
            "{\"step\":20,\"time\":3,\"loss\":1.0}\n"
            "{\"step\":20,\"time\":3,\"event\":\"checkpoint\",\"elapsed_seconds\":8}\n"
            "{\"step\":30,\"time\":4,\"loss\":0.75}\n"
            "not json\n"
            "{\"step\":20,\"time\":9,\"event\":\"resume\",\"elapsed_seconds\":8}\n"
            "{\"step\":30,\"time\":10,\"loss\":0.5}\n"
            "{\"step\":30,\"time\":10,\"event\":\"checkpoint\",\"elapsed_seconds\":11}\n");
  RunHistory at_30 = ReadRunHistory(path.string(), 30);
  EXPECT_EQ(at_30.first_loss, 2.5);
  EXPECT_EQ(at_30.last_loss, 0.5);
  EXPECT_EQ(at_30.elapsed_seconds, 11);
  // Resumed from the checkpoint at 20 (the one at 30 did not verify): what led there.
  RunHistory at_20 = ReadRunHistory(path.string(), 20);
  EXPECT_EQ(at_20.first_loss, 2.5);
  EXPECT_EQ(at_20.last_loss, 1.0);
  EXPECT_EQ(at_20.elapsed_seconds, 8);
  RunHistory none = ReadRunHistory((path.parent_path() / "absent.jsonl").string(), 20);
  EXPECT_FALSE(none.first_loss || none.last_loss || none.elapsed_seconds);
}

// A line nested deeper than any record (a corrupted or hostile file) is skipped like any
// unreadable line instead of exhausting the JSON parser's stack on resume.
TEST(MetricsLog, RunHistorySkipsALineNestedTooDeep) {
  std::filesystem::path path = testing::ScratchDir("deep_history") / "metrics.jsonl";
  WriteFile(path, "{\"step\":1,\"time\":1,\"loss\":2.5}\n" + std::string(200000, '[') + "\n" +
                      "{\"step\":2,\"time\":2,\"loss\":1.5}\n");
  RunHistory history = ReadRunHistory(path.string(), 2);
  EXPECT_EQ(history.first_loss, 2.5);
  EXPECT_EQ(history.last_loss, 1.5);
}

TEST(MetricsLog, OpenErrorNamesThePath) {
  std::filesystem::path dir = testing::ScratchDir("is_dir");
  llvm::Expected<MetricsLog> log = MetricsLog::Open(dir.string(), false);
  ASSERT_FALSE(bool(log));
  EXPECT_NE(llvm::toString(log.takeError()).find(dir.string()), std::string::npos);
}

// --- ProgressReporter -------------------------------------------------------------------------

TEST(Progress, PlainLinesAtFirstEveryLogEveryAndLastStep) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  {
    ProgressReporter progress(/*total_steps=*/205, /*first_step=*/1, /*log_every=*/20, /*tty=*/false, out);
    for (int64_t step = 1; step <= 205; ++step) progress.Update(step, 0.123456789, 0.003, 1234.4);
    progress.Finish();
  }
  std::vector<std::string> lines = Lines(Contents(out));
  std::fclose(out);
  ASSERT_EQ(lines.size(), 12u);  // 1, 20, 40, ..., 200, 205
  EXPECT_EQ(lines[0], "step   1/205  loss 0.123457  lr 0.003  1234 samples/s");
  EXPECT_EQ(lines[1], "step  20/205  loss 0.123457  lr 0.003  1234 samples/s");
  EXPECT_EQ(lines[10], "step 200/205  loss 0.123457  lr 0.003  1234 samples/s");
  EXPECT_EQ(lines[11], "step 205/205  loss 0.123457  lr 0.003  1234 samples/s");
}

TEST(Progress, PlainLinesOnResumeAndWithoutThroughput) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  {
    ProgressReporter progress(100, /*first_step=*/51, 25, false, out);
    for (int64_t step = 51; step <= 100; ++step) progress.Update(step, 2.0, 1e-5, step == 51 ? 0.0 : 10.0);
  }
  std::vector<std::string> lines = Lines(Contents(out));
  std::fclose(out);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "step  51/100  loss 2.000000  lr 1e-05");
  EXPECT_EQ(lines[1], "step  75/100  loss 2.000000  lr 1e-05  10 samples/s");
  EXPECT_EQ(lines[2], "step 100/100  loss 2.000000  lr 1e-05  10 samples/s");
}

TEST(Progress, MessagesGetTheirOwnLineAndTheBarComesBackBelowThem) {
  std::FILE* plain = std::tmpfile();
  ASSERT_NE(plain, nullptr);
  {
    ProgressReporter progress(10, 1, 5, /*tty=*/false, plain);
    progress.Update(1, 1.0, 0.1, 0);
    progress.Message("eval at step 1:  eval_loss 0.500000");
    progress.Update(5, 0.5, 0.1, 0);
  }
  EXPECT_EQ(Lines(Contents(plain)), (std::vector<std::string>{"step  1/10  loss 1.000000  lr 0.1",
                                                              "eval at step 1:  eval_loss 0.500000",
                                                              "step  5/10  loss 0.500000  lr 0.1"}));
  std::fclose(plain);

  std::FILE* tty = std::tmpfile();
  ASSERT_NE(tty, nullptr);
  double now = 0;
  {
    ProgressReporter progress(10, 1, 5, /*tty=*/true, tty, [&] { return now; });
    progress.Update(1, 1.0, 0.1, 0);
    progress.Message("eval");
    now += 1;
    progress.Update(2, 0.5, 0.1, 0);
  }
  std::string text = Contents(tty);
  std::fclose(tty);
  // The message overwrites the bar (padded to its width) and ends the line; the bar follows.
  size_t message = text.find("\reval ");
  ASSERT_NE(message, std::string::npos) << text;
  size_t newline = text.find('\n', message);
  ASSERT_NE(newline, std::string::npos);
  EXPECT_EQ(text.find_first_not_of(' ', message + 5), newline) << "padding, then the newline";
  EXPECT_NE(text.find("2/10", newline), std::string::npos) << text;
}

TEST(Progress, TerminalLineIsRedrawnAtMostTenTimesASecond) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  double now = 0;
  {
    ProgressReporter progress(1000, 1, /*log_every=*/0, /*tty=*/true, out, [&] { return now; });
    // 1000 steps of 1 ms: 1 s in all.
    for (int64_t step = 1; step <= 1000; ++step) {
      now += 0.001;
      progress.Update(step, 0.25, 0.001, 0);
    }
    progress.Finish();
  }
  std::string text = Contents(out);
  std::fclose(out);
  size_t draws = std::count(text.begin(), text.end(), '\r');
  // The first step, about ten redraws in the second, the last step.
  EXPECT_GE(draws, 10u);
  EXPECT_LE(draws, 13u);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1);
  ASSERT_EQ(text.back(), '\n');
  std::string last = text.substr(text.rfind('\r') + 1);
  EXPECT_EQ(last,
            "[####################] 1000/1000 100%  loss 0.250000  lr 0.001  1000.00 it/s  elapsed 0:00:01  "
            "ETA 0:00:00\n");
}

TEST(Progress, TerminalLineShowsRateAndEtaAndPadsShorterLines) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  double now = 100;
  ProgressReporter progress(200, 1, 10, true, out, [&] { return now; });
  now += 2;
  progress.Update(1, 10.5, 0.01, 0);
  now += 18;  // 10 steps in 20 s: 0.5 it/s, 190 steps left
  progress.Update(10, 1.5, 0.01, 0);
  progress.Finish();
  std::string text = Contents(out);
  std::fclose(out);
  EXPECT_EQ(text,
            "\r[--------------------]   1/200   0%  loss 10.500000  lr 0.01  0.50 it/s  elapsed 0:00:02  ETA "
            "0:06:38"
            "\r[#-------------------]  10/200   5%  loss 1.500000  lr 0.01  0.50 it/s  elapsed 0:00:20  ETA "
            "0:06:20 "
            "\n");
}

TEST(Progress, FinishDrawsAThrottledLastUpdate) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  double now = 0;
  ProgressReporter progress(100, 1, 0, true, out, [&] { return now; });
  progress.Update(1, 1.0, 0.1, 0);
  progress.Update(2, 0.5, 0.1, 0);  // same instant: not drawn yet
  progress.Finish();
  progress.Finish();
  progress.Update(3, 0.25, 0.1, 0);
  std::string text = Contents(out);
  std::fclose(out);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\r'), 2);
  EXPECT_NE(text.find("  2/100"), std::string::npos);
  EXPECT_EQ(text.find("  3/100"), std::string::npos);
  EXPECT_EQ(text.back(), '\n');
}

TEST(Progress, NoOutputWithoutUpdates) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  { ProgressReporter progress(10, 1, 1, true, out); }
  EXPECT_EQ(Contents(out), "");
  std::fclose(out);
}

// --- CRC-32C and TFRecord ---------------------------------------------------------------------

TEST(Crc32c, KnownVectors) {
  EXPECT_EQ(Crc32c(""), 0u);
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  // RFC 3720 (iSCSI) appendix B.4.
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  std::string ascending;
  for (int i = 0; i < 32; ++i) ascending += static_cast<char>(i);
  EXPECT_EQ(Crc32c(ascending), 0x46DD794Eu);
}

TEST(Crc32c, MaskRotatesAndAddsTheConstant) {
  EXPECT_EQ(MaskCrc(0), 0xa282ead8u);
  EXPECT_EQ(MaskCrc(0x00008000u), 0xa282ead9u);
  EXPECT_EQ(MaskCrc(0x00000001u), 0xa282ead8u + 0x20000u);
}

uint32_t LittleEndian32(std::string_view bytes) {
  uint32_t value = 0;
  for (int i = 3; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(bytes[i]);
  return value;
}

TEST(TfRecord, FramesLengthDataAndBothCrcs) {
  std::string record = FrameRecord("abc");
  ASSERT_EQ(record.size(), 8u + 4 + 3 + 4);
  EXPECT_EQ(record.substr(0, 8), std::string("\x03\0\0\0\0\0\0\0", 8));
  EXPECT_EQ(LittleEndian32(record.substr(8, 4)), MaskCrc(Crc32c(record.substr(0, 8))));
  EXPECT_EQ(record.substr(12, 3), "abc");
  EXPECT_EQ(LittleEndian32(record.substr(15, 4)), MaskCrc(Crc32c("abc")));
}

TEST(TfRecord, EncodesTheFileVersionEvent) {
  EXPECT_EQ(EncodeFileVersionEvent(1.0), std::string("\x09\0\0\0\0\0\0\xf0\x3f\x1a\x0d"
                                                     "brain.Event:2",
                                                     24));
}

TEST(TfRecord, EncodesAScalarEvent) {
  // wall_time 1.0; step 3; summary { value { tag "loss" simple_value 0.5 } }
  EXPECT_EQ(EncodeScalarEvent("loss", 0.5f, 3, 1.0), std::string("\x09\0\0\0\0\0\0\xf0\x3f"
                                                                 "\x10\x03"
                                                                 "\x2a\x0d\x0a\x0b\x0a\x04loss\x15\0\0\0\x3f",
                                                                 26));
}

TEST(TfRecord, EncodesNegativeAndLargeStepsAsTenByteVarints) {
  std::string event = EncodeScalarEvent("a", 0, -1, 0);
  EXPECT_NE(event.find(std::string("\x10\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11)), std::string::npos);
  event = EncodeScalarEvent("a", 0, 300, 0);
  EXPECT_NE(event.find("\x10\xac\x02"), std::string::npos);
}

// --- TensorBoardWriter ------------------------------------------------------------------------

TEST(TensorBoardWriter, CreatesTheDirectoryAndAFileStartingWithFileVersion) {
  std::filesystem::path dir = testing::ScratchDir("tb") / "logs" / "project";
  llvm::Expected<TensorBoardWriter> writer = TensorBoardWriter::Open(dir.string());
  ASSERT_TRUE(bool(writer)) << llvm::toString(writer.takeError());
  std::string name = std::filesystem::path(writer->path()).filename().string();
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  EXPECT_TRUE(std::regex_match(name, std::regex(R"(events\.out\.tfevents\.\d+\.)" + std::string(host))))
      << name;
  EXPECT_EQ(std::filesystem::path(writer->path()).parent_path(), dir);
  std::string bytes = ReadFile(writer->path());
  ASSERT_EQ(bytes.size(), 16u + 24);
  EXPECT_EQ(bytes.substr(12, 24).substr(9), std::string("\x1a\x0d") + "brain.Event:2");
  EXPECT_EQ(bytes.substr(0, 12), FrameRecord(bytes.substr(12, 24)).substr(0, 12));
}

TEST(TensorBoardWriter, WritesScalarRecordsOnFlushAndOnDestruction) {
  std::filesystem::path dir = testing::ScratchDir("tb_flush");
  std::string path;
  size_t header = 0;
  {
    // An interval longer than the test: only Flush() and the destructor write.
    llvm::Expected<TensorBoardWriter> writer = TensorBoardWriter::Open(dir.string(), std::chrono::hours(1));
    ASSERT_TRUE(bool(writer)) << llvm::toString(writer.takeError());
    path = writer->path();
    header = ReadFile(path).size();
    ASSERT_FALSE(bool(writer->AddScalar("loss", 0.5, 3, 1.0)));
    EXPECT_EQ(ReadFile(path).size(), header);
    ASSERT_FALSE(bool(writer->Flush()));
    EXPECT_EQ(ReadFile(path).substr(header), FrameRecord(EncodeScalarEvent("loss", 0.5f, 3, 1.0)));
    ASSERT_FALSE(bool(writer->AddScalar("lr", 0.25, 4, 2.0)));
  }
  EXPECT_EQ(ReadFile(path).substr(header), FrameRecord(EncodeScalarEvent("loss", 0.5f, 3, 1.0)) +
                                               FrameRecord(EncodeScalarEvent("lr", 0.25f, 4, 2.0)));
}

TEST(TensorBoardWriter, FlushesOnItsOwnAfterTheInterval) {
  std::filesystem::path dir = testing::ScratchDir("tb_timer");
  llvm::Expected<TensorBoardWriter> writer =
      TensorBoardWriter::Open(dir.string(), std::chrono::milliseconds(50));
  ASSERT_TRUE(bool(writer)) << llvm::toString(writer.takeError());
  size_t header = ReadFile(writer->path()).size();
  ASSERT_FALSE(bool(writer->AddScalar("loss", 0.5, 3, 1.0)));
  // A live run shows in TensorBoard without a Flush() or 64 KiB of scalars.
  std::string expected = FrameRecord(EncodeScalarEvent("loss", 0.5f, 3, 1.0));
  for (int i = 0; i < 500 && ReadFile(writer->path()).size() < header + expected.size(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(ReadFile(writer->path()).substr(header), expected);
}

TEST(TensorBoardWriter, StopSignalFlushesThenEndsTheProcessByIt) {
  for (int stop : {SIGTERM, SIGINT}) {
    std::filesystem::path dir = testing::ScratchDir(stop == SIGTERM ? "tb_sigterm" : "tb_sigint");
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      llvm::Expected<TensorBoardWriter> writer = TensorBoardWriter::Open(dir.string(), std::chrono::hours(1));
      if (!writer || writer->AddScalar("loss", 0.25, 7, 2.0)) ::_exit(10);
      ::kill(::getpid(), stop);
      ::sleep(20);  // ended by the signal long before
      ::_exit(11);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << status;
    EXPECT_EQ(WTERMSIG(status), stop);
    std::vector<std::filesystem::path> files(std::filesystem::directory_iterator(dir), {});
    ASSERT_EQ(files.size(), 1u);
    std::string bytes = ReadFile(files[0]);
    std::string expected = FrameRecord(EncodeScalarEvent("loss", 0.25f, 7, 2.0));
    ASSERT_GE(bytes.size(), expected.size());
    EXPECT_EQ(bytes.substr(bytes.size() - expected.size()), expected) << "the buffered scalar was lost";
  }
}

TEST(TensorBoardWriter, TwoWritersInOneDirectoryGetTwoFiles) {
  std::filesystem::path dir = testing::ScratchDir("tb_two");
  llvm::Expected<TensorBoardWriter> first = TensorBoardWriter::Open(dir.string());
  ASSERT_TRUE(bool(first)) << llvm::toString(first.takeError());
  llvm::Expected<TensorBoardWriter> second = TensorBoardWriter::Open(dir.string());
  ASSERT_TRUE(bool(second)) << llvm::toString(second.takeError());
  EXPECT_NE(first->path(), second->path());
}

TEST(TensorBoardWriter, OpenErrorNamesThePath) {
  std::filesystem::path file = testing::ScratchDir("tb_error") / "file";
  WriteFile(file, "x");
  llvm::Expected<TensorBoardWriter> writer = TensorBoardWriter::Open((file / "sub").string());
  ASSERT_FALSE(bool(writer));
  EXPECT_NE(llvm::toString(writer.takeError()).find(file.string()), std::string::npos);
}

}  // namespace
}  // namespace accel::rt::observe
