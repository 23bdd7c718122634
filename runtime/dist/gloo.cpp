// Collectives over c10d's ProcessGroupGloo with a TCPStore rendezvous. Every c10d exception
// is caught here and rethrown as CollectiveError with what the user needs to know.
#include <fmt/format.h>

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "runtime/dist/collectives.h"

namespace accel::rt::dist {
namespace {

class GlooCollectives final : public Collectives {
 public:
  GlooCollectives(const RendezvousOptions& options, c10::intrusive_ptr<c10d::Store> store,
                  c10::intrusive_ptr<c10d::ProcessGroupGloo> group)
      : options_(options), store_(std::move(store)), group_(std::move(group)) {}

  int rank() const override { return options_.rank; }
  int world_size() const override { return options_.world_size; }

  void AllReduceSum(std::vector<at::Tensor>& tensors) override {
    // One operation per tensor, all in flight together, so buckets overlap on the wire.
    std::vector<c10::intrusive_ptr<c10d::Work>> pending;
    Guard("all_reduce", [&] {
      for (at::Tensor& tensor : tensors) {
        std::vector<at::Tensor> one{tensor};
        pending.push_back(group_->allreduce(one));
      }
      for (auto& work : pending) work->wait(options_.timeout);
    });
  }

  void Broadcast(std::vector<at::Tensor>& tensors, int root) override {
    Guard("broadcast", [&] {
      c10d::BroadcastOptions broadcast;
      broadcast.rootRank = root;
      for (at::Tensor& tensor : tensors) {
        std::vector<at::Tensor> one{tensor};
        group_->broadcast(one, broadcast)->wait(options_.timeout);
      }
    });
  }

  void Barrier() override {
    Guard("barrier", [&] { group_->barrier()->wait(options_.timeout); });
  }

 private:
  template <typename F>
  void Guard(const char* what, F&& body) {
    try {
      body();
    } catch (const std::exception& error) {
      throw CollectiveError(fmt::format("{} failed on rank {} of {} (timeout {} ms): {}", what, options_.rank,
                                        options_.world_size, options_.timeout.count(),
                                        FirstLine(error.what())));
    }
  }

  // c10 errors append a C++ backtrace; the first line is the message.
  static std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

  RendezvousOptions options_;
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group_;
};

bool IsLoopback(const std::string& address) {
  return address == "localhost" || address.rfind("127.", 0) == 0 || address == "::1";
}

}  // namespace

std::unique_ptr<Collectives> ConnectGloo(const RendezvousOptions& options) {
  try {
    c10d::TCPStoreOptions store_options;
    store_options.port = static_cast<std::uint16_t>(options.master_port);
    store_options.isServer = options.rank == 0;
    store_options.numWorkers = static_cast<std::size_t>(options.world_size);
    store_options.waitWorkers = true;
    store_options.timeout = options.timeout;
    auto store = c10::make_intrusive<c10d::TCPStore>(options.master_addr, store_options);

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
    return std::make_unique<GlooCollectives>(options, store, group);
  } catch (const std::exception& error) {
    std::string text = error.what();
    throw CollectiveError(fmt::format("rendezvous at {}:{} failed on rank {} of {} within {} ms: {}",
                                      options.master_addr, options.master_port, options.rank,
                                      options.world_size, options.timeout.count(),
                                      text.substr(0, text.find('\n'))));
  }
}

}  // namespace accel::rt::dist
