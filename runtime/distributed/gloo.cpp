// Collectives over c10d's ProcessGroupGloo (CPU tensors).
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <cstdlib>

#include "runtime/distributed/c10d_group.h"
#include "runtime/distributed/collectives.h"
#include "runtime/support/progress.h"

namespace accel::rt::distributed {
namespace {

bool IsLoopback(const std::string& address) {
  return address == "localhost" || address.rfind("127.", 0) == 0 || address == "::1";
}

}  // namespace

std::unique_ptr<Collectives> ConnectGloo(const RendezvousOptions& options) {
  try {
    c10::intrusive_ptr<c10d::Store> store = internal::Rendezvous(options);
    auto gloo_options = c10d::ProcessGroupGloo::Options::create(options.timeout);
    // GLOO_SOCKET_IFNAME names the interface, as in PyTorch; otherwise bind to loopback on one
    // machine, and across machines to the interface the hostname resolves to.
    const char* interface = std::getenv("GLOO_SOCKET_IFNAME");
    gloo_options->devices.push_back(interface != nullptr && *interface != '\0'
                                        ? c10d::ProcessGroupGloo::createDeviceForInterface(interface)
                                    : IsLoopback(options.master_addr)
                                        ? c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")
                                        : c10d::ProcessGroupGloo::createDefaultDevice());
    auto group =
        c10::make_intrusive<c10d::ProcessGroupGloo>(store, options.rank, options.world_size, gloo_options);
    progress::Resumed();  // the rendezvous and the group's connections are done
    return std::make_unique<internal::C10dCollectives>(options, store, group, c10::Device(c10::kCPU));
  } catch (const OwnRendezvousError&) {
    throw;  // this rank's own failure, already said in full
  } catch (const std::exception& error) {
    throw internal::RendezvousError(options, error);
  }
}

}  // namespace accel::rt::distributed
