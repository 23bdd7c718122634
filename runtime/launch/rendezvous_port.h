#ifndef ACCEL_RUNTIME_LAUNCH_RENDEZVOUS_PORT_H_
#define ACCEL_RUNTIME_LAUNCH_RENDEZVOUS_PORT_H_

#include <optional>
#include <string>
#include <utility>

namespace accel::rt::launch {

// The descriptor on which rank 0 inherits the listening socket of a HeldPort, and the variable
// that names it; set for rank 0 only, and only when this launcher picked the port itself.
inline constexpr int kStoreListenFd = 4;
inline constexpr const char* kEnvStoreListenFd = "ACCEL_STORE_LISTEN_FD";

// An unused TCP port for a single-machine rendezvous that this launcher cannot hold until it
// is served (a Python script's workers bind it themselves): one below the kernel's ephemeral
// range, which hands its ports to every bind of port 0 and every outgoing connection, so no
// other job's connection can take it before the script's rank 0 binds it. Tried at random in
// [kLowestPickedPort, the range's start), free on every address; a port of the ephemeral range
// if none of the tries is free; 0 on failure.
inline constexpr int kLowestPickedPort = 10000;
int PickFreePort();

// The kernel's ephemeral port range (net.ipv4.ip_local_port_range), as read from `text`;
// Linux's default, 32768 to 60999, where it does not parse.
std::pair<int, int> EphemeralPortRange(const std::string& text);

// A port this launcher picks for the rendezvous and keeps: a listening TCP socket on every
// address, held from the pick until the job ends and handed to rank 0, whose store serves on
// it. A port picked and let go could be taken by any other process in the second before rank 0
// binds it (other jobs' connections take ephemeral ports all the time), and the job would fail
// at its start. Close-on-exec, and never on a descriptor below 10, so no other child inherits
// it and it is never the descriptor it is handed on as.
class HeldPort {
 public:
  // Empty when no socket could be had.
  static std::optional<HeldPort> Open();
  HeldPort(HeldPort&& other) noexcept;
  HeldPort& operator=(HeldPort&& other) noexcept;
  HeldPort(const HeldPort&) = delete;
  HeldPort& operator=(const HeldPort&) = delete;
  ~HeldPort();

  int port() const { return port_; }
  int fd() const { return fd_; }

 private:
  HeldPort(int fd, int port) : fd_(fd), port_(port) {}
  int fd_ = -1;
  int port_ = 0;
};

// In rank 0: the listening socket its launcher handed it for a port it picked and held, when
// kEnvStoreListenFd names one bound to `port`; empty for a worker started by hand, or on a port
// the launcher did not pick, whose store binds the port itself.
std::optional<int> InheritedStoreSocket(int port);

}  // namespace accel::rt::launch

#endif  // ACCEL_RUNTIME_LAUNCH_RENDEZVOUS_PORT_H_
