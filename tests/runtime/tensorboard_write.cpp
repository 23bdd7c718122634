// Writes a TensorBoard event file with Accel's writer for tests/runtime/tensorboard_reader.py.
//
// Usage: tensorboard_write DIR < SCALARS
// Each input line is `tag<TAB>step<TAB>value<TAB>wall_time` (numbers as strtod reads them,
// hexadecimal floats included, so the test passes exact bits) or `flush`. Prints the event
// file's path.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "runtime/observe/tensorboard.h"

namespace {

int Fail(llvm::Error error) {
  std::fprintf(stderr, "tensorboard_write: %s\n", llvm::toString(std::move(error)).c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: tensorboard_write DIR < SCALARS\n");
    return 2;
  }
  llvm::Expected<accel::rt::observe::TensorBoardWriter> writer =
      accel::rt::observe::TensorBoardWriter::Open(argv[1]);
  if (!writer) return Fail(writer.takeError());
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line == "flush") {
      if (llvm::Error error = writer->Flush()) return Fail(std::move(error));
      continue;
    }
    size_t a = line.find('\t'), b = line.find('\t', a + 1), c = line.find('\t', b + 1);
    if (c == std::string::npos) {
      std::fprintf(stderr, "tensorboard_write: bad line `%s`\n", line.c_str());
      return 2;
    }
    std::string tag = line.substr(0, a);
    int64_t step = std::strtoll(line.c_str() + a + 1, nullptr, 10);
    double value = std::strtod(line.c_str() + b + 1, nullptr);
    double wall_time = std::strtod(line.c_str() + c + 1, nullptr);
    if (llvm::Error error = writer->AddScalar(tag, value, step, wall_time)) return Fail(std::move(error));
  }
  if (llvm::Error error = writer->Flush()) return Fail(std::move(error));
  std::printf("%s\n", writer->path().c_str());
  return 0;
}
