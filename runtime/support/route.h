#ifndef ACCEL_RUNTIME_SUPPORT_ROUTE_H_
#define ACCEL_RUNTIME_SUPPORT_ROUTE_H_

#include <optional>
#include <string>

namespace accel::rt {

// The address of this machine that the kernel's routing table uses to reach `host` (a name
// or an address), as text, or empty when `host` does not resolve or has no route. No packet is
// sent: a UDP socket is connected, and its local address read.
//
// A worker advertises this address to its peers. Its hostname is no good for that where it
// resolves to loopback (Debian's stock `127.0.1.1 host` line): peers on other machines would
// connect to themselves.
std::optional<std::string> LocalAddressTowards(const std::string& host);

}  // namespace accel::rt

#endif  // ACCEL_RUNTIME_SUPPORT_ROUTE_H_
