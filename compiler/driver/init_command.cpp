// `accelc init`: the questionnaire on the terminal (or a pipe), then the checked file.
#include "compiler/driver/init_command.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "compiler/init/init.h"
#include "compiler/init/questionnaire.h"
#include "compiler/interop/interop.h"

namespace accel::accelc {
namespace {

constexpr int kExitWritten = 0;
constexpr int kExitUsage = 2;
constexpr int kExitInternal = 70;  // EX_SOFTWARE: the generated file failed its own check

// Writes `text` to `path`; without `force`, only if no file is there (O_EXCL, so a file that
// appeared while the questions were asked is not replaced either). Returns an error, or "".
std::string WriteNew(const std::string& path, const std::string& text, bool force) {
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (force ? O_TRUNC : O_EXCL);
  int fd = ::open(path.c_str(), flags, 0644);
  if (fd < 0) {
    if (errno == EEXIST) return fmt::format("`{}` exists; pass --force to replace it", path);
    return fmt::format("cannot write `{}`: {}", path, std::strerror(errno));
  }
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string error = fmt::format("cannot write `{}`: {}", path, std::strerror(errno));
      ::close(fd);
      return error;
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) return fmt::format("cannot write `{}`: {}", path, std::strerror(errno));
  return "";
}

}  // namespace

int RunInit(const InitOptions& options, const pipeline::Stdlib& stdlib) {
  std::string path = options.output;
  if (path.empty()) path = options.accelerate_yaml ? "default_config.yaml" : "job.accel";
  // Refuse before the questions, not after a person has answered them all.
  std::error_code ec;
  if (!options.force && std::filesystem::exists(path, ec)) {
    fmt::print(stderr, "accelc: error: `{}` exists; pass --force to replace it\n", path);
    return kExitUsage;
  }

  init::Answers answers;
  answers.Set("default_job_name", interop::JobNameFor(path));
  bool terminal = ::isatty(STDIN_FILENO) && ::isatty(STDOUT_FILENO);
  init::Dialogue dialogue{.in = std::cin,
                          .out = std::cout,
                          .color = terminal && std::getenv("NO_COLOR") == nullptr,
                          .echo = !::isatty(STDIN_FILENO),
                          .defaults_only = options.defaults,
                          .spec = !options.accelerate_yaml};
  if (llvm::Error error = init::Ask(init::Questions(stdlib.schema()), dialogue, answers)) {
    std::cout.flush();
    fmt::print(stderr, "accelc: error: {}; nothing was written\n", llvm::toString(std::move(error)));
    return kExitUsage;
  }
  std::cout.flush();

  init::OutputFormat format =
      options.accelerate_yaml ? init::OutputFormat::kAccelerateYaml : init::OutputFormat::kAccel;
  llvm::Expected<std::string> text = init::Generate(answers, format, stdlib);
  if (!text) {
    fmt::print(stderr,
               "accelc: internal error: {}\nnothing was written; please report this with the answers given\n",
               llvm::toString(text.takeError()));
    return kExitInternal;
  }
  if (std::string error = WriteNew(path, *text, options.force); !error.empty()) {
    fmt::print(stderr, "accelc: error: {}\n", error);
    return kExitUsage;
  }
  fmt::print(stderr, "accelc: wrote {}; it passes `accelc check`\n", path);
  return kExitWritten;
}

}  // namespace accel::accelc
