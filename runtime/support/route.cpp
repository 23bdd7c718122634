#include "runtime/support/route.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

namespace accel::rt {

std::optional<std::string> LocalAddressTowards(const std::string& host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  // Any port: connect() on a UDP socket only picks the route.
  if (::getaddrinfo(host.c_str(), "9", &hints, &found) != 0 || found == nullptr) return std::nullopt;
  std::optional<std::string> local;
  for (addrinfo* candidate = found; candidate != nullptr && !local; candidate = candidate->ai_next) {
    int fd = ::socket(candidate->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    if (::connect(fd, candidate->ai_addr, candidate->ai_addrlen) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
      char text[INET6_ADDRSTRLEN] = {};
      const void* raw = address.ss_family == AF_INET6
                            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&address)->sin6_addr)
                            : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&address)->sin_addr);
      if (::inet_ntop(address.ss_family, raw, text, sizeof text) != nullptr) local = text;
    }
    ::close(fd);
  }
  ::freeaddrinfo(found);
  return local;
}

}  // namespace accel::rt
