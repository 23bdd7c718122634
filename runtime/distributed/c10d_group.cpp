#include "runtime/distributed/c10d_group.h"

#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/launch/rendezvous_port.h"
#include "runtime/support/listener.h"
#include "runtime/support/progress.h"

namespace accel::rt::distributed::internal {
namespace {

// c10 errors append a C++ backtrace; the first line is the message.
std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

// Whether c10d's socket error `why` is errno `code`: it names the errno (`name: EMFILE`) or
// gives its text, capitalised or not.
bool MentionsError(const std::string& why, int code) {
  if (const char* name = strerrorname_np(code); name && why.find(name) != std::string::npos) return true;
  auto lower = [](std::string text) {
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
    return text;
  };
  return lower(why).find(lower(std::strerror(code))) != std::string::npos;
}

// For an error known to be EMFILE or ENFILE: the sockets that failed are closed by now, so the
// count of open descriptors no longer shows it, but the limit does.
std::string OutOfDescriptorsHint() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return "; this process ran out of file descriptors";
  return fmt::format("; this process ran out of file descriptors (its limit is {}): raise `ulimit -n`",
                     static_cast<uint64_t>(limit.rlim_cur));
}

// The store's client, made on a thread of its own and waited for until `deadline`. The client
// trusts whatever listens at the address: against a process that accepts and never answers
// (another program on the port) it waits forever, whatever its timeout says. Past the deadline
// it is left blocked on its thread, and this rank fails naming the address.
c10::intrusive_ptr<c10d::TCPStore> ConnectStoreBy(const RendezvousOptions& options,
                                                  const c10d::TCPStoreOptions& store_options,
                                                  std::chrono::steady_clock::time_point deadline) {
  using Store = c10::intrusive_ptr<c10d::TCPStore>;
  auto made = std::make_shared<std::promise<Store>>();
  std::future<Store> store = made->get_future();
  std::thread([made, address = options.master_addr, store_options] {
    try {
      made->set_value(c10::make_intrusive<c10d::TCPStore>(address, store_options));
    } catch (...) {
      made->set_exception(std::current_exception());
    }
  }).detach();
  if (store.wait_until(deadline) != std::future_status::ready) {
    throw std::runtime_error(fmt::format(
        "something accepts connections at {}:{} but does not answer as the job's rendezvous store: another "
        "program may hold the port",
        options.master_addr, options.master_port));
  }
  return store.get();
}

constexpr const char* kLaunchKey = "accel/launch";

// Rank 0, the store's server, publishes its launch id before anyone can check in; every other
// rank reads it first, so a rank of another job never takes a place in this one.
void AgreeOnLaunch(c10d::Store& store, const RendezvousOptions& options) {
  if (options.rank == 0) {
    SetStoreText(store, kLaunchKey, options.launch_id);
    return;
  }
  store.wait({kLaunchKey}, options.timeout);
  std::string theirs = GetStoreText(store, kLaunchKey);
  if (theirs == options.launch_id) return;
  auto name = [](const std::string& id) { return id.empty() ? std::string("one without a launch id") : id; };
  throw OwnRendezvousError(fmt::format(
      "the rendezvous at {}:{} belongs to launch {}, and this rank to launch {}: another job uses this "
      "address and port; give each job its own port (--master-port or MASTER_PORT), or leave the spec's "
      "main_process_port unset so that each scheduler job derives its own",
      options.master_addr, options.master_port, name(theirs), name(options.launch_id)));
}

std::string CheckInKey(int rank) { return fmt::format("accel/checked-in/{}", rank); }

// Rank 0's verdict on the check-in: empty when every rank came, else the missing ranks.
constexpr const char* kRollCallKey = "accel/roll-call";
// How many present ranks have read a verdict that names missing ranks.
constexpr const char* kRollCallReadKey = "accel/roll-call-read";

CollectiveError MissingRanks(const std::string& missing, const RendezvousOptions& options) {
  return CollectiveError(fmt::format("rank{} {} did not join within {} ms",
                                     missing.find(',') == std::string::npos ? "" : "s", missing,
                                     options.timeout.count()));
}

// Every rank checks in. Only rank 0, which serves the store, waits for the others and then calls
// the roll: everyone reports the same missing ranks, however late each started its clock on a
// busy machine. (Each rank timing out on its own raced rank 0's exit: a late rank saw "the store
// went away" instead of who was missing.)
void CheckIn(c10d::Store& store, const RendezvousOptions& options) {
  store.set(CheckInKey(options.rank), std::vector<uint8_t>{1});
  if (options.rank != 0) {
    std::string verdict;
    try {
      // Rank 0 calls the roll within its timeout; the margin covers its later start.
      store.wait({kRollCallKey}, options.timeout + std::chrono::milliseconds(5000));
      verdict = GetStoreText(store, kRollCallKey);
    } catch (const std::exception& error) {
      throw CollectiveError(
          fmt::format("the rendezvous store (rank 0) went away while waiting for the other ranks: {}",
                      FirstLine(error.what())));
    }
    if (verdict.empty()) return;
    store.add(kRollCallReadKey, 1);
    throw MissingRanks(verdict, options);
  }
  std::vector<std::string> keys;
  for (int r = 0; r < options.world_size; ++r) keys.push_back(CheckInKey(r));
  std::vector<int> missing;
  try {
    store.wait(keys, options.timeout);
  } catch (const std::exception&) {
    for (int r = 0; r < options.world_size; ++r) {
      if (!store.check({CheckInKey(r)})) missing.push_back(r);
    }
  }
  std::string verdict = fmt::format("{}", fmt::join(missing, ", "));
  SetStoreText(store, kRollCallKey, verdict);
  if (missing.empty()) return;
  // The store lives in this process: stay until the present ranks have read the verdict
  // (bounded), so that they name the missing ranks too.
  int64_t present = options.world_size - static_cast<int64_t>(missing.size()) - 1;
  auto deadline =
      std::chrono::steady_clock::now() + std::min(options.timeout, std::chrono::milliseconds(5000));
  while (store.add(kRollCallReadKey, 0) < present && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  throw MissingRanks(verdict, options);
}

}  // namespace

c10d::ReduceOp ToC10d(ReduceOp op) {
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

void SetStoreText(c10d::Store& store, const std::string& key, std::string_view text) {
  store.set(key, std::vector<uint8_t>(text.begin(), text.end()));
}

std::string GetStoreText(c10d::Store& store, const std::string& key) {
  std::vector<uint8_t> value = store.get(key);
  return std::string(value.begin(), value.end());
}

c10::intrusive_ptr<c10d::Store> Rendezvous(const RendezvousOptions& options) {
  // The store and Gloo write to sockets without MSG_NOSIGNAL. When a peer goes away, the next
  // write would raise SIGPIPE and kill this rank silently; ignored, it fails with EPIPE, which
  // the collective reports as an error naming the peer.
  signal(SIGPIPE, SIG_IGN);
  // The store's client is given the timeout and 2 s more: where rank 0 is the one at fault (out
  // of descriptors, it cannot answer), its own error, at the timeout, comes first and is named;
  // and the launcher's watchdog, at the timeout + 5 s, need not step in.
  const auto client_deadline = std::chrono::steady_clock::now() + options.timeout + std::chrono::seconds(2);
  progress::Waiting("the rendezvous");
  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<std::uint16_t>(options.master_port);
  store_options.isServer = options.rank == 0;
  store_options.numWorkers = static_cast<std::size_t>(options.world_size);
  store_options.waitWorkers = false;  // CheckIn waits, and can say who is missing
  store_options.timeout = options.timeout;
  if (store_options.isServer)
    store_options.masterListenFd = launch::InheritedStoreSocket(options.master_port);
  if (!store_options.isServer) {
    // The store's client, refused, tries again only a second later: wait for rank 0 to serve
    // it in short steps here, so that the client's first connect is accepted.
    std::string why = WaitForListener(options.master_addr, options.master_port, options.timeout);
    if (!why.empty()) {
      throw std::runtime_error(fmt::format("rank 0 did not serve the rendezvous store at {}:{} ({})",
                                           options.master_addr, options.master_port, why));
    }
  }
  c10::intrusive_ptr<c10d::TCPStore> store;
  try {
    // Rank 0 serves the store itself: nothing there waits on another process.
    store = store_options.isServer ? c10::make_intrusive<c10d::TCPStore>(options.master_addr, store_options)
                                   : ConnectStoreBy(options, store_options, client_deadline);
  } catch (const std::exception& error) {
    std::string why = FirstLine(error.what());
    if (options.rank == 0) {
      // Serving the store needs no peer: a failure here is this rank's own.
      std::string hint;
      if (MentionsError(why, EADDRINUSE)) {
        hint =
            "; another process holds the port: pass another --master-port (on one machine, leave it "
            "unset for a free one)";
      } else if (MentionsError(why, EMFILE) || MentionsError(why, ENFILE)) {
        hint = OutOfDescriptorsHint();
      }
      throw OwnRendezvousError(fmt::format("rank 0 cannot serve the rendezvous store on port {}: {}{}",
                                           options.master_port, why, hint));
    }
    throw;  // classified by ThrowRendezvousError
  }
  AgreeOnLaunch(*store, options);
  CheckIn(*store, options);
  return store;
}

void ThrowRendezvousError(const RendezvousOptions& options, const std::exception& error) {
  std::string why = FirstLine(error.what());
  std::string message =
      fmt::format("rendezvous at {}:{} failed on rank {} of {} within {} ms: {}", options.master_addr,
                  options.master_port, options.rank, options.world_size, options.timeout.count(), why);
  // Out of descriptors (EMFILE, ENFILE) is this process's own limit, not its peers' doing.
  if (MentionsError(why, EMFILE) || MentionsError(why, ENFILE))
    throw OwnRendezvousError(message + OutOfDescriptorsHint());
  throw CollectiveError(message);
}

std::string DescriptorHint() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return "";
  std::error_code ec;
  size_t open = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++open;
  if (open + 4 < limit.rlim_cur) return "";
  return fmt::format("; this process has {} of its {} file descriptors open: raise `ulimit -n`", open,
                     static_cast<uint64_t>(limit.rlim_cur));
}

C10dCollectives::C10dCollectives(const RendezvousOptions& options, c10::intrusive_ptr<c10d::Store> store,
                                 c10::intrusive_ptr<GroupBase> group, c10::Device device,
                                 ShardedPath sharded, GroupFactory subgroups, std::vector<int> world_ranks)
    : scope_{options, world_ranks.empty()
                          ? std::string()
                          : fmt::format(" in the group of world ranks {}", fmt::join(world_ranks, ", "))},
      store_(std::move(store)),
      group_(std::move(group)),
      device_(device),
      sharded_(sharded),
      subgroups_(std::move(subgroups)),
      world_ranks_(std::move(world_ranks)) {}

CollectiveError Failure(const char* what, const GroupScope& scope, const std::exception& error) {
  return CollectiveError(fmt::format("{} failed on rank {} of {}{} (timeout {} ms): {}", what,
                                     scope.options.rank, scope.options.world_size, scope.label,
                                     scope.options.timeout.count(), FirstLine(error.what())));
}

C10dWork::C10dWork(const char* what, std::vector<c10::intrusive_ptr<c10d::Work>> works, GroupScope scope,
                   std::function<void()> finish)
    : what_(what), works_(std::move(works)), scope_(std::move(scope)), finish_(std::move(finish)) {}

void C10dWork::Wait() {
  progress::Waiting(what_);
  try {
    for (auto& work : works_) work->wait(scope_.options.timeout);
    if (finish_) finish_();
  } catch (const std::exception& error) {
    throw Failure(what_, scope_, error);
  }
  progress::Resumed();
}

void C10dCollectives::Guard(const char* what, const std::function<void()>& body) {
  progress::Waiting(what);
  try {
    body();
  } catch (const std::exception& error) {
    throw Failure(what, scope_, error);
  }
  progress::Resumed();
}

at::Tensor Staging::In(const at::Tensor& tensor, bool result) {
  if (!tensor.defined() || tensor.device() == device_) return tensor;
  at::Tensor staged = tensor.to(device_);
  if (result) results_.emplace_back(tensor, staged);
  return staged;
}

void Staging::CopyBack() {
  for (auto& [host, staged] : results_) host.copy_(staged);
  results_.clear();
}

std::unique_ptr<PendingWork> C10dCollectives::AllReduceAsync(std::vector<at::Tensor>& tensors, ReduceOp op) {
  // One operation per tensor, all in flight together, so buckets overlap on the wire.
  std::vector<c10::intrusive_ptr<c10d::Work>> pending;
  Staging staging(device_);
  Guard("all_reduce", [&] {
    c10d::AllreduceOptions reduce;
    reduce.reduceOp = ToC10d(op);
    for (at::Tensor& tensor : tensors) {
      std::vector<at::Tensor> one{staging.In(tensor, true)};
      pending.push_back(group_->allreduce(one, reduce));
    }
  });
  return std::make_unique<C10dWork>("all_reduce", std::move(pending), scope_,
                                    [staging]() mutable { staging.CopyBack(); });
}

void C10dCollectives::AllReduce(std::vector<at::Tensor>& tensors, ReduceOp op) {
  AllReduceAsync(tensors, op)->Wait();
}

void C10dCollectives::Broadcast(std::vector<at::Tensor>& tensors, int root) {
  std::vector<c10::intrusive_ptr<c10d::Work>> pending;
  Staging staging(device_);
  Guard("broadcast", [&] {
    c10d::BroadcastOptions broadcast;
    broadcast.rootRank = root;
    for (at::Tensor& tensor : tensors) {
      std::vector<at::Tensor> one{staging.In(tensor, rank() != root)};
      pending.push_back(group_->broadcast(one, broadcast));
    }
    for (auto& work : pending) work->wait(scope_.options.timeout);
  });
  staging.CopyBack();
}

std::unique_ptr<PendingWork> C10dCollectives::AllGatherAsync(const at::Tensor& input, at::Tensor& output) {
  c10::intrusive_ptr<c10d::Work> work;
  Staging staging(device_);
  Guard("all_gather", [&] {
    at::Tensor in = staging.In(input.reshape({-1}), false);
    at::Tensor flat = staging.In(output.view({-1}), true);
    if (sharded_ == ShardedPath::kNative) {
      work = group_->_allgather_base(flat, in);
      return;
    }
    // One slot per rank, views into `output`, so the result still lands in one flat buffer.
    std::vector<at::Tensor> inputs{in};
    int64_t count = inputs[0].numel();
    std::vector<std::vector<at::Tensor>> outputs(1);
    for (int r = 0; r < world_size(); ++r) outputs[0].push_back(flat.narrow(0, r * count, count));
    work = group_->allgather(outputs, inputs);
  });
  return std::make_unique<C10dWork>("all_gather", std::vector{work}, scope_,
                                    [staging]() mutable { staging.CopyBack(); });
}

void C10dCollectives::AllGather(const at::Tensor& input, at::Tensor& output) {
  AllGatherAsync(input, output)->Wait();
}

void C10dCollectives::MeetAfterWork(const char* what, const std::function<void()>& work) {
  const std::string prefix =
      world_ranks_.empty() ? "accel/meet" : fmt::format("accel/meet/{}", fmt::join(world_ranks_, ","));
  const std::string arrivals = prefix + "/arrivals", beats = prefix + "/beats";
  auto rank_key = [&](int r) { return fmt::format("{}/rank/{}", prefix, r); };
  // Store calls fail as collectives do (each is bounded by the store's timeout); not through
  // Guard, which would tell the launcher this rank waits in a collective at every poll.
  auto through_store = [&](const std::function<void()>& call) {
    try {
      call();
    } catch (const std::exception& error) {
      throw Failure(what, scope_, error);
    }
  };
  // Every rank meets in every round, in order: round n is over when n × world ranks arrived.
  const int64_t round = ++meetings_;
  const int64_t everyone = round * world_size();
  {
    // A beat that cannot reach the store changes nothing here: the wait below reports it.
    progress::BeatListener beat([&] {
      try {
        store_->add(beats, 1);
      } catch (const std::exception&) {
      }
    });
    work();
  }
  through_store([&] {
    SetStoreText(*store_, rank_key(rank()), std::to_string(round));
    store_->add(arrivals, 1);
  });
  progress::ScopedWork waiting(fmt::format("waiting for its peers to finish {}", what));
  using Clock = std::chrono::steady_clock;
  int64_t arrived = 0, beaten = -1;
  Clock::time_point moved = Clock::now();
  std::chrono::milliseconds pause(1);
  while (true) {
    int64_t now_arrived = 0, now_beaten = 0;
    through_store([&] {
      now_arrived = store_->add(arrivals, 0);
      now_beaten = store_->add(beats, 0);
    });
    if (now_arrived >= everyone) return;
    if (now_arrived != arrived || now_beaten != beaten) {
      arrived = now_arrived;
      beaten = now_beaten;
      moved = Clock::now();
    } else if (Clock::now() - moved > scope_.options.timeout) {
      std::vector<int> silent;
      through_store([&] {
        for (int r = 0; r < world_size(); ++r) {
          const std::string key = rank_key(r);
          if (!store_->check({key}) || std::stoll(GetStoreText(*store_, key)) < round) silent.push_back(r);
        }
      });
      throw Failure(what, scope_,
                    std::runtime_error(fmt::format("rank{} {} showed no progress in {} for the timeout",
                                                   silent.size() == 1 ? "" : "s", fmt::join(silent, ", "),
                                                   what)));
    }
    progress::StillWaitingForWork();
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(100));
  }
}

void C10dCollectives::Barrier() {
  Guard("barrier", [&] {
    c10d::BarrierOptions options;
    // NCCL's barrier is an all-reduce on a device it would otherwise guess: name the group's.
    if (device_.is_cuda()) options.device_ids = {device_.index()};
    group_->barrier(options)->wait(scope_.options.timeout);
  });
}

}  // namespace accel::rt::distributed::internal
