// Collectives over c10d's ProcessGroupGloo (CPU tensors).
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "runtime/distributed/c10d_group.h"
#include "runtime/distributed/collectives.h"
#include "runtime/support/progress.h"
#include "runtime/support/route.h"

namespace accel::rt::distributed {
namespace {

bool IsLoopback(const std::string& address) {
  return address == "localhost" || address.rfind("127.", 0) == 0 || address == "::1";
}

// The device Gloo binds and advertises to the peers. GLOO_SOCKET_IFNAME names the interface,
// as in PyTorch. Otherwise, on one machine, loopback; across machines, the address that routes
// to the rendezvous host. (Gloo's default, the address the hostname resolves to, is loopback on
// many machines: peers would then connect to themselves and hang.)
std::shared_ptr<::gloo::transport::Device> GlooDevice(const std::string& master_addr) {
  const char* interface = std::getenv("GLOO_SOCKET_IFNAME");
  if (interface != nullptr && *interface != '\0')
    return c10d::ProcessGroupGloo::createDeviceForInterface(interface);
  if (IsLoopback(master_addr)) return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  if (std::optional<std::string> local = LocalAddressTowards(master_addr))
    return c10d::ProcessGroupGloo::createDeviceForHostname(*local);
  throw OwnRendezvousError(fmt::format(
      "no route from this machine to the rendezvous host {}; check --master-addr, or name the interface to "
      "use with GLOO_SOCKET_IFNAME",
      master_addr));
}

std::shared_ptr<::gloo::transport::Device> LocalDevice(const RendezvousOptions& options) {
  try {
    return GlooDevice(options.master_addr);
  } catch (const OwnRendezvousError&) {
    throw;
  } catch (const std::exception& error) {
    std::string what = error.what();
    throw OwnRendezvousError(fmt::format("rank {} cannot open its network device for Gloo: {}{}",
                                         options.rank, what.substr(0, what.find('\n')),
                                         internal::DescriptorHint()));
  }
}

// Gloo connects a group's members in its constructor, and one member can be done while a peer
// still finishes its part. A member that then left at once (a rank failing next, a body of work
// with nothing to exchange) closed the connection under that peer, which failed with
// "Connection closed by peer" instead of forming its group. So no member returns before every
// member's constructor has: a count on the group's own store, and a key set by the last.
void WaitUntilEveryMemberConnected(c10d::Store& store, int size, std::chrono::milliseconds timeout) {
  static const std::string kConnected = "accel/gloo-connected";
  static const std::string kAllConnected = "accel/gloo-connected/all";
  if (store.add(kConnected, 1) == size) store.set(kAllConnected, std::vector<uint8_t>{1});
  try {
    store.wait({kAllConnected}, timeout);
  } catch (const std::exception& error) {
    throw std::runtime_error(fmt::format("not every member of the group finished connecting within {} ms: {}",
                                         timeout.count(), error.what()));
  }
}

}  // namespace

std::unique_ptr<Collectives> ConnectGloo(const RendezvousOptions& options, ShardedPath sharded) {
  try {
    // The device first: it needs no peer, so a failure here is this rank's own, said before
    // the rendezvous makes it the peers' problem too.
    std::shared_ptr<::gloo::transport::Device> device = LocalDevice(options);
    c10::intrusive_ptr<c10d::Store> store = internal::Rendezvous(options);
    // The world and every subgroup (NewGroup) share the device and the timeout.
    internal::GroupFactory groups = [device, timeout = options.timeout](c10::intrusive_ptr<c10d::Store> store,
                                                                        int rank, int size) {
      auto gloo_options = c10d::ProcessGroupGloo::Options::create(timeout);
      gloo_options->devices.push_back(device);
      auto group = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, gloo_options);
      WaitUntilEveryMemberConnected(*store, size, timeout);
      return c10::intrusive_ptr<internal::GroupBase>(std::move(group));
    };
    auto group = groups(store, options.rank, options.world_size);
    progress::Resumed();  // the rendezvous and the group's connections are done
    return std::make_unique<internal::C10dCollectives>(options, store, group, c10::Device(c10::kCPU),
                                                       sharded, std::move(groups));
  } catch (const OwnRendezvousError&) {
    throw;  // this rank's own failure, already said in full
  } catch (const std::exception& error) {
    internal::ThrowRendezvousError(options, error);
  }
}

}  // namespace accel::rt::distributed
