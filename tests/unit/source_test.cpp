#include "compiler/source/source_file.h"

#include <gtest/gtest.h>

namespace accel::source {
namespace {

TEST(SourceFile, LocatesOffsetsAsOneBasedLineAndColumn) {
  SourceFile file("a.accel", "ab\ncde\n\nf");
  EXPECT_EQ(file.Locate(0).line, 1u);
  EXPECT_EQ(file.Locate(0).column, 1u);
  EXPECT_EQ(file.Locate(4).line, 2u);
  EXPECT_EQ(file.Locate(4).column, 2u);
  EXPECT_EQ(file.Locate(8).line, 4u);
  EXPECT_EQ(file.Locate(8).column, 1u);
}

TEST(SourceFile, ClampsOffsetsPastTheEnd) {
  SourceFile file("a.accel", "ab\ncd");
  LineColumn end = file.Locate(1000);
  EXPECT_EQ(end.line, 2u);
  EXPECT_EQ(end.column, 3u);
}

TEST(SourceFile, LineTextDropsTerminatorsIncludingCarriageReturn) {
  SourceFile file("a.accel", "first\r\nsecond\nlast");
  EXPECT_EQ(file.LineText(1), "first");
  EXPECT_EQ(file.LineText(2), "second");
  EXPECT_EQ(file.LineText(3), "last");
  EXPECT_EQ(file.LineText(4), "");
  EXPECT_EQ(file.line_count(), 3u);
}

TEST(SourceFile, SliceClampsToTheText) {
  SourceFile file("a.accel", "hello");
  EXPECT_EQ(file.Slice({1, 3}), "el");
  EXPECT_EQ(file.Slice({3, 99}), "lo");
  EXPECT_EQ(file.Slice({9, 12}), "");
}

TEST(SourceFile, ReadingAMissingFileNamesThePath) {
  llvm::Expected<SourceFile> file = SourceFile::Read("/nonexistent/dir/x.accel");
  ASSERT_FALSE(static_cast<bool>(file));
  std::string message = llvm::toString(file.takeError());
  EXPECT_NE(message.find("/nonexistent/dir/x.accel"), std::string::npos) << message;
}

TEST(Span, JoinCoversBoth) {
  Span joined = Span::Join({4, 6}, {1, 3});
  EXPECT_EQ(joined.begin, 1u);
  EXPECT_EQ(joined.end, 6u);
}

}  // namespace
}  // namespace accel::source
