#include "runtime/support/listener.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

namespace accel::rt {
namespace {

using Clock = std::chrono::steady_clock;

// One non-blocking connect to `address`, waiting at most `limit` for the answer: "" when it
// was accepted, else why not.
std::string ConnectOnce(const addrinfo& address, std::chrono::milliseconds limit) {
  int fd =
      ::socket(address.ai_family, address.ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, address.ai_protocol);
  if (fd < 0) return std::strerror(errno);
  int error = ::connect(fd, address.ai_addr, address.ai_addrlen) == 0 ? 0 : errno;
  if (error == EINPROGRESS) {
    // A host that drops the connect (not refuses it) must not hold the wait past its deadline.
    pollfd wait{fd, POLLOUT, 0};
    int ready = ::poll(&wait, 1, static_cast<int>(std::max<int64_t>(limit.count(), 1)));
    socklen_t length = sizeof error;
    if (ready <= 0) {
      error = ready == 0 ? ETIMEDOUT : errno;
    } else if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) {
      error = errno;
    }
  }
  ::close(fd);
  return error == 0 ? "" : std::strerror(error);
}

// One attempt at every address `host` resolves to: "" when one accepted.
std::string TryEachAddress(const std::string& host, int port, std::chrono::milliseconds limit) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int status = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); status != 0)
    return ::gai_strerror(status);
  std::string why = "no address";
  for (addrinfo* candidate = found; candidate != nullptr; candidate = candidate->ai_next) {
    why = ConnectOnce(*candidate, limit);
    if (why.empty()) break;
  }
  ::freeaddrinfo(found);
  return why;
}

}  // namespace

std::string WaitForListener(const std::string& host, int port, std::chrono::milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  std::chrono::milliseconds pause(5);
  while (true) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    std::string why = TryEachAddress(host, port, std::max(left, std::chrono::milliseconds(1)));
    if (why.empty()) return why;
    Clock::time_point now = Clock::now();
    if (now >= deadline) return why;
    std::this_thread::sleep_until(std::min(now + pause, deadline));
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

}  // namespace accel::rt
