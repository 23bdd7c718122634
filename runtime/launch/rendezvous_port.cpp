#include "runtime/launch/rendezvous_port.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>

namespace accel::rt::launch {
namespace {

// The port `fd` is bound to, or 0.
int BoundPort(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return 0;
  if (address.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&address)->sin6_port);
  if (address.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&address)->sin_port);
  return 0;
}

// A socket bound to `port` (0: one the kernel picks) on every address: IPv6 and IPv4 both where
// the machine has IPv6 (as the store binds), IPv4 alone otherwise. -1 when it cannot be bound.
int BindOnEveryAddress(int port) {
  int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    int off = 0;
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
    sockaddr_in6 address{};
    address.sin6_family = AF_INET6;
    address.sin6_addr = in6addr_any;
    address.sin6_port = htons(static_cast<uint16_t>(port));
    if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) return fd;
    ::close(fd);
    // A machine with IPv6 refuses the port for IPv4 as well; only one without tries IPv4 alone.
    if (errno == EADDRINUSE) return -1;
  }
  fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) return fd;
  ::close(fd);
  return -1;
}

// A socket listening on a port the kernel picks, on every address; -1 on failure.
int ListenOnAnyPort() {
  int fd = BindOnEveryAddress(0);
  if (fd >= 0 && ::listen(fd, SOMAXCONN) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Whether `port` can be bound now, on every address.
bool Bindable(int port) {
  int fd = BindOnEveryAddress(port);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

}  // namespace

std::pair<int, int> EphemeralPortRange(const std::string& text) {
  std::istringstream in(text);
  int low = 0, high = 0;
  if (!(in >> low >> high) || low < 1 || high > 65535 || low > high) return {32768, 60999};
  return {low, high};
}

int PickFreePort() {
  std::ifstream file("/proc/sys/net/ipv4/ip_local_port_range");
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const int below = EphemeralPortRange(text).first;
  if (below > kLowestPickedPort + 1) {
    std::mt19937 random(std::random_device{}());
    std::uniform_int_distribution<int> pick(kLowestPickedPort, below - 1);
    for (int attempt = 0; attempt < 64; ++attempt) {
      const int port = pick(random);
      if (Bindable(port)) return port;
    }
  }
  // A machine whose ephemeral range starts low, or whose low ports are all taken.
  int fd = ListenOnAnyPort();
  if (fd < 0) return 0;
  const int port = BoundPort(fd);
  ::close(fd);
  return port;
}

std::optional<int> InheritedStoreSocket(int port) {
  const char* text = std::getenv(kEnvStoreListenFd);
  if (text == nullptr || std::string_view(text) != std::to_string(kStoreListenFd)) return std::nullopt;
  int listening = 0;
  socklen_t length = sizeof(listening);
  if (::getsockopt(kStoreListenFd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &length) != 0 || listening == 0)
    return std::nullopt;
  if (BoundPort(kStoreListenFd) != port) return std::nullopt;
  return kStoreListenFd;
}

std::optional<HeldPort> HeldPort::Open() {
  int fd = ListenOnAnyPort();
  if (fd < 0) return std::nullopt;
  // Above the descriptors a child is given (0 to 2, the progress pipe, kStoreListenFd): a dup2
  // onto its own number would leave it close-on-exec.
  int high = ::fcntl(fd, F_DUPFD_CLOEXEC, 10);
  ::close(fd);
  if (high < 0) return std::nullopt;
  int port = BoundPort(high);
  if (port == 0) {
    ::close(high);
    return std::nullopt;
  }
  return HeldPort(high, port);
}

HeldPort::HeldPort(HeldPort&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), port_(std::exchange(other.port_, 0)) {}

HeldPort& HeldPort::operator=(HeldPort&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    port_ = std::exchange(other.port_, 0);
  }
  return *this;
}

HeldPort::~HeldPort() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace accel::rt::launch
