// How the worker words an exception: one line for what failed, indented lines for where.
#include "runtime/model/error_text.h"

#include <gtest/gtest.h>

namespace accel::rt::train {
namespace {

// What LibTorch 2.11's interpreter throws for a scripted Linear(4, 32) fed 8 features.
constexpr const char* kShapeError =
    "The following operation failed in the TorchScript interpreter.\n"
    "Traceback of TorchScript (most recent call last):\n"
    "  File \"model.py\", line 7, in forward\n"
    "    def forward(self, x):\n"
    "        h = self.a(x)\n"
    "            ~~~~~~ <--- HERE\n"
    "        return h.sum()\n"
    "RuntimeError: mat1 and mat2 shapes cannot be multiplied (25x8 and 4x32)\n";

TEST(ErrorText, TheInterpretersCauseIsTheSummaryAndItsTracebackTheIndentedDetails) {
  ErrorText text = SplitErrorText(kShapeError);
  EXPECT_EQ(text.summary,
            "the TorchScript model failed: RuntimeError: mat1 and mat2 shapes cannot be multiplied "
            "(25x8 and 4x32)");
  EXPECT_EQ(text.cause, "RuntimeError: mat1 and mat2 shapes cannot be multiplied (25x8 and 4x32)");
  EXPECT_EQ(text.details,
            "\n  Traceback of TorchScript (most recent call last):"
            "\n    File \"model.py\", line 7, in forward"
            "\n      def forward(self, x):"
            "\n          h = self.a(x)"
            "\n              ~~~~~~ <--- HERE"
            "\n          return h.sum()");
}

TEST(ErrorText, ACauseOverSeveralLinesIsJoinedAndALongTracebackKeepsItsInnermostFrames) {
  std::string what = "The following operation failed in the TorchScript interpreter.\n"
                     "Traceback of TorchScript, serialized code (most recent call last):\n";
  for (int i = 0; i < 100; ++i) what += "  frame " + std::to_string(i) + "\n";
  what += "RuntimeError: first part\nsecond part\n";
  ErrorText text = SplitErrorText(what);
  EXPECT_EQ(text.summary, "the TorchScript model failed: RuntimeError: first part second part");
  EXPECT_EQ(text.details.rfind("\n  ... 61 outer traceback lines left out\n    frame 60\n", 0), 0u)
      << text.details;
  EXPECT_EQ(text.details.substr(text.details.size() - 13), "\n    frame 99");
}

TEST(ErrorText, OtherTextKeepsItsFirstLineAndTheIndentedLinesBelowIt) {
  ErrorText text =
      SplitErrorText("cannot load m.pt: no such file\n  hint: save it first\nException raised from x\n");
  EXPECT_EQ(text.summary, "cannot load m.pt: no such file");
  EXPECT_EQ(text.details, "\n  hint: save it first");
  EXPECT_EQ(SplitErrorText("one line").summary, "one line");
  EXPECT_EQ(SplitErrorText("one line").details, "");
}

}  // namespace
}  // namespace accel::rt::train
