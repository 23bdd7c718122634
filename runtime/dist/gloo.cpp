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

  void AllReduce(std::vector<at::Tensor>& tensors, ReduceOp op) override {
    // One operation per tensor, all in flight together, so buckets overlap on the wire.
    std::vector<c10::intrusive_ptr<c10d::Work>> pending;
    Guard("all_reduce", [&] {
      c10d::AllreduceOptions reduce;
      reduce.reduceOp = ToC10d(op);
      for (at::Tensor& tensor : tensors) {
        std::vector<at::Tensor> one{tensor};
        pending.push_back(group_->allreduce(one, reduce));
      }
      for (auto& work : pending) work->wait(options_.timeout);
    });
  }

  void Broadcast(std::vector<at::Tensor>& tensors, int root) override {
    std::vector<c10::intrusive_ptr<c10d::Work>> pending;
    Guard("broadcast", [&] {
      c10d::BroadcastOptions broadcast;
      broadcast.rootRank = root;
      for (at::Tensor& tensor : tensors) {
        std::vector<at::Tensor> one{tensor};
        pending.push_back(group_->broadcast(one, broadcast));
      }
      for (auto& work : pending) work->wait(options_.timeout);
    });
  }

  void AllGather(const at::Tensor& input, at::Tensor& output) override {
    Guard("all_gather", [&] {
      // Gloo in LibTorch 1.13 has no `_allgather_base`: it gathers into one slot per rank, which
      // are views into `output`, so the result still lands in one flat buffer.
      std::vector<at::Tensor> inputs{input.reshape({-1})};
      at::Tensor flat = output.view({-1});
      int64_t count = inputs[0].numel();
      std::vector<std::vector<at::Tensor>> outputs(1);
      for (int r = 0; r < options_.world_size; ++r) outputs[0].push_back(flat.narrow(0, r * count, count));
      group_->allgather(outputs, inputs)->wait(options_.timeout);
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

  static c10d::ReduceOp ToC10d(ReduceOp op) {
    switch (op) {
      case ReduceOp::kSum:
        return c10d::ReduceOp::SUM;
      case ReduceOp::kMax:
        return c10d::ReduceOp::MAX;
      case ReduceOp::kMin:
        return c10d::ReduceOp::MIN;
      case ReduceOp::kProduct:
        return c10d::ReduceOp::PRODUCT;
    }
    return c10d::ReduceOp::SUM;
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

std::string CheckInKey(int rank) { return fmt::format("accel/checked-in/{}", rank); }

// Every rank records its arrival in the store and waits for all the others, so that a rank
// that never comes is named in every rank's error instead of a bare store timeout.
void CheckIn(c10d::Store& store, const RendezvousOptions& options) {
  store.set(CheckInKey(options.rank), std::vector<uint8_t>{1});
  std::vector<std::string> keys;
  for (int r = 0; r < options.world_size; ++r) keys.push_back(CheckInKey(r));
  // Rank 0 serves the store: it waits a little longer than the others, so that the store is
  // still there when they look up who is missing.
  auto wait = options.rank == 0 ? options.timeout + std::chrono::milliseconds(1000) : options.timeout;
  try {
    store.wait(keys, wait);
  } catch (const std::exception& error) {
    std::vector<int> missing;
    try {
      for (int r = 0; r < options.world_size; ++r) {
        if (!store.check({CheckInKey(r)})) missing.push_back(r);
      }
    } catch (const std::exception&) {
      std::string text = error.what();
      throw CollectiveError(
          fmt::format("the rendezvous store (rank 0) went away while waiting for the other "
                      "ranks: {}",
                      text.substr(0, text.find('\n'))));
    }
    throw CollectiveError(fmt::format("rank{} {} did not join within {} ms", missing.size() == 1 ? "" : "s",
                                      fmt::join(missing, ", "), options.timeout.count()));
  }
}

}  // namespace

std::unique_ptr<Collectives> ConnectGloo(const RendezvousOptions& options) {
  try {
    c10d::TCPStoreOptions store_options;
    store_options.port = static_cast<std::uint16_t>(options.master_port);
    store_options.isServer = options.rank == 0;
    store_options.numWorkers = static_cast<std::size_t>(options.world_size);
    store_options.waitWorkers = false;  // CheckIn waits, and can say who is missing
    store_options.timeout = options.timeout;
    auto store = c10::make_intrusive<c10d::TCPStore>(options.master_addr, store_options);
    CheckIn(*store, options);

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
