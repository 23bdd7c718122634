// Positions in UTF-16 units, URIs and the document store's edits.
#include <gtest/gtest.h>

#include <string>

#include "compiler/lsp/document_store.h"
#include "compiler/lsp/position.h"
#include "compiler/lsp/uri.h"

namespace accel::lsp {
namespace {

// é is 2 bytes and 1 UTF-16 unit, 中 3 bytes and 1 unit, 😀 4 bytes and 2 units.
const std::string kText = "a = 1\r\n\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80x = 2\nlast";

TEST(LineIndex, CountsUtf16UnitsNotBytes) {
  LineIndex index(kText);
  EXPECT_EQ(index.Offset({1, 0}), 7u);
  EXPECT_EQ(index.Offset({1, 1}), 9u);   // after é
  EXPECT_EQ(index.Offset({1, 2}), 12u);  // after 中
  EXPECT_EQ(index.Offset({1, 4}), 16u);  // after 😀, two units
  EXPECT_EQ(kText[16], 'x');
  EXPECT_EQ(index.PositionOf(16), (Position{1, 4}));
  EXPECT_EQ(index.PositionOf(12), (Position{1, 2}));
  EXPECT_EQ(index.PositionOf(9), (Position{1, 1}));
}

TEST(LineIndex, ClampsPositionsOutsideTheText) {
  LineIndex index(kText);
  // Between the two units of 😀: the character's start.
  EXPECT_EQ(index.Offset({1, 3}), 12u);
  // Past the end of a CRLF line: before the `\r`.
  EXPECT_EQ(index.Offset({0, 99}), 5u);
  EXPECT_EQ(index.Offset({99, 0}), kText.size());
  EXPECT_EQ(index.PositionOf(1000), (Position{2, 4}));
  // Inside a UTF-8 sequence: the sequence's start.
  EXPECT_EQ(index.PositionOf(14), (Position{1, 2}));
}

TEST(LineIndex, CountsInvalidBytesOneUnitEach) {
  std::string text =
      "\xff\xfe"
      "b";
  LineIndex index(text);
  EXPECT_EQ(index.Offset({0, 2}), 2u);
  EXPECT_EQ(index.PositionOf(3), (Position{0, 3}));
  // A sequence cut short by the end of the line.
  std::string cut = "\xf0\x9f\n";
  LineIndex cut_index(cut);
  EXPECT_EQ(cut_index.PositionOf(2), (Position{0, 2}));
}

TEST(DocumentStore, AppliesIncrementalEditsInUtf16Units) {
  DocumentStore store;
  store.Open("file:///t.accel", "/t.accel", 1, "x = \"\xf0\x9f\x98\x80\" // y\n");
  // Replace the ` // y` after the emoji: character 8 is after `x = "😀"` (the emoji is two units).
  Document* changed = store.Change("file:///t.accel", 2, {TextChange{Range{{0, 8}, {0, 13}}, ""}});
  ASSERT_NE(changed, nullptr);
  EXPECT_EQ(changed->text, "x = \"\xf0\x9f\x98\x80\"\n");
  EXPECT_EQ(changed->version, 2);
  changed =
      store.Change("file:///t.accel", 3,
                   {TextChange{Range{{1, 0}, {1, 0}}, "y = 1\n"}, TextChange{Range{{1, 4}, {1, 5}}, "2"}});
  EXPECT_EQ(changed->text, "x = \"\xf0\x9f\x98\x80\"\ny = 2\n");
  changed = store.Change("file:///t.accel", 4, {TextChange{std::nullopt, "whole"}});
  EXPECT_EQ(changed->text, "whole");
  EXPECT_EQ(store.Change("file:///other.accel", 1, {}), nullptr);
  EXPECT_TRUE(store.Close("file:///t.accel"));
  EXPECT_EQ(store.Find("file:///t.accel"), nullptr);
  EXPECT_FALSE(store.Close("file:///t.accel"));
}

TEST(Uri, RoundTripsPathsWithSpacesAndUnicode) {
  std::string path = "/tmp/my specs/caf\xc3\xa9#1.accel";
  std::string uri = UriFromPath(path);
  EXPECT_EQ(uri, "file:///tmp/my%20specs/caf%C3%A9%231.accel");
  EXPECT_EQ(PathFromUri(uri), path);
  EXPECT_EQ(PathFromUri("file://localhost/a.accel"), "/a.accel");
  EXPECT_EQ(PathFromUri("file:///a%2fb"), "/a/b");
}

TEST(Uri, RefusesOtherSchemesHostsAndBadEscapes) {
  EXPECT_FALSE(PathFromUri("untitled:Untitled-1"));
  EXPECT_FALSE(PathFromUri("https://example.com/a.accel"));
  EXPECT_FALSE(PathFromUri("file://server/share/a.accel"));
  EXPECT_FALSE(PathFromUri("file:///a%2"));
  EXPECT_FALSE(PathFromUri("file:///a%zz"));
}

}  // namespace
}  // namespace accel::lsp
