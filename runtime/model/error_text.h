#ifndef ACCEL_RUNTIME_MODEL_ERROR_TEXT_H_
#define ACCEL_RUNTIME_MODEL_ERROR_TEXT_H_

#include <string>
#include <string_view>

// How the worker reports an exception's text: one line that says what failed, which the
// launcher relays once and repeats at the end of its verdict, then indented lines that say
// where (a TorchScript model's traceback), which it relays once under that line. Torch-free.
namespace accel::rt::train {

struct ErrorText {
  // One line.
  std::string summary;
  // The interpreter's own error line (`RuntimeError: mat1 and mat2 ...`), or the summary.
  std::string cause;
  // Empty, or lines each starting with "\n  ": the launcher takes indented lines below an error
  // line as part of it (launch::WorkerOutput).
  std::string details;
};

// The TorchScript interpreter's message ("The following operation failed in the TorchScript
// interpreter." + the scripted traceback + "RuntimeError: <cause>") becomes the cause as the
// summary and the traceback as the details, at most kMaxTracebackLines of it. Any other text: its
// first line, and the indented lines that follow it (details already in this form).
ErrorText SplitErrorText(std::string_view what);

// The most traceback lines kept: the innermost frames, which name the failing operation.
inline constexpr size_t kMaxTracebackLines = 40;

}  // namespace accel::rt::train

#endif  // ACCEL_RUNTIME_MODEL_ERROR_TEXT_H_
