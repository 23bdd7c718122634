// Multi-rank tests of the Gloo collectives: ranks are threads of this process, talking over
// loopback with short timeouts.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <arpa/inet.h>
#include <dlfcn.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <future>
#include <thread>
#include <vector>

#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <fmt/format.h>

#include "runtime/distributed/c10d_group.h"
#include "runtime/distributed/collectives.h"
#include "runtime/launch/launcher.h"
#include "runtime/launch/rendezvous_port.h"
#include "runtime/support/progress.h"
#include "tests/support/gloo_ranks.h"

namespace accel::rt::distributed {
namespace {

// Runs `body(rank, collectives)` on `world` threads joined into one group (RunGlooRanks).
template <typename Body>
void RunRanks(int world, Body body, int timeout_ms = 10000) {
  RunGlooRanks(
      world, [body](int rank, std::unique_ptr<Collectives>& group) { body(rank, *group); }, timeout_ms);
}

TEST(Gloo, AllReduceSumsEveryTensorAcrossRanks) {
  RunRanks(2, [](int rank, Collectives& group) {
    std::vector<at::Tensor> tensors = {at::full({3}, rank + 1.0f), at::arange(4, at::kFloat) * (rank + 1)};
    group.AllReduceSum(tensors);
    EXPECT_TRUE(at::equal(tensors[0], at::full({3}, 3.0f)));
    EXPECT_TRUE(at::equal(tensors[1], at::arange(4, at::kFloat) * 3));
  });
}

TEST(Gloo, BroadcastCopiesTheRootsTensor) {
  RunRanks(3, [](int rank, Collectives& group) {
    std::vector<at::Tensor> tensors = {at::full({2, 2}, static_cast<float>(rank))};
    group.Broadcast(tensors, 1);
    EXPECT_TRUE(at::equal(tensors[0], at::full({2, 2}, 1.0f)));
    group.Barrier();
  });
}

// Gloo connects a group in its constructor, and one rank can be done while a peer still
// finishes. A rank that then left at once (a short job, a rank failing next) closed the
// connection under the peer, which failed with "Connection closed by peer". The race is narrow
// (about 1 in 100 formations on an idle machine, 1 in 10 here), so the test forms many groups
// under load, each left at once.
TEST(Gloo, ARankThatLeavesAsSoonAsItsGroupIsFormedNeverFailsAPeerStillFormingIt) {
  // Threads that keep the cores busy, as a loaded machine does: ranks then finish their parts
  // of the formation far apart, which is when one left under another.
  std::atomic<bool> done{false};
  std::vector<std::thread> load;
  for (int i = 0; i < 4; ++i)
    load.emplace_back([&] {
      while (!done.load(std::memory_order_relaxed)) {
      }
    });
  struct Join {
    std::atomic<bool>& done;
    std::vector<std::thread>& load;
    ~Join() {
      done = true;
      for (auto& thread : load) thread.join();
    }
  } join{done, load};
  for (int round = 0; round < 40; ++round) {
    SCOPED_TRACE(fmt::format("round {}", round));
    ASSERT_NO_THROW(RunGlooRanks(3, [](int, std::unique_ptr<Collectives>&) {}));
    ASSERT_NO_THROW(RunGlooRanks(3, [](int rank, std::unique_ptr<Collectives>& world) {
      if (rank < 2) world->NewGroup({0, 1});
    }));
  }
}

TEST(Gloo, AbsentPeerFailsTheRendezvousWithinTheTimeout) {
  int port = launch::PickFreePort();
  auto started = std::chrono::steady_clock::now();
  try {
    ConnectGloo(LoopbackOptions(0, 2, port, 1500));
    FAIL() << "the rendezvous completed without rank 1";
  } catch (const CollectiveError& error) {
    EXPECT_NE(std::string(error.what()).find("rendezvous at 127.0.0.1"), std::string::npos) << error.what();
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_LT(seconds, 15.0);
}

// A rank waits for rank 0's store in short steps, but only within the timeout, and then says
// that rank 0 never served it (the same rendezvous error, not a hang or a second timeout).
TEST(Gloo, RankZeroThatNeverServesFailsTheOthersWithinTheTimeout) {
  int port = launch::PickFreePort();
  auto started = std::chrono::steady_clock::now();
  try {
    ConnectGloo(LoopbackOptions(1, 2, port, 1500));
    FAIL() << "the rendezvous completed without rank 0";
  } catch (const CollectiveError& error) {
    EXPECT_NE(
        std::string(error.what())
            .find(fmt::format(
                "rank 0 did not serve the rendezvous store at 127.0.0.1:{} (Connection refused)", port)),
        std::string::npos)
        << error.what();
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_GE(seconds, 1.4);
  EXPECT_LT(seconds, 2.9) << "waited past the timeout";
}

TEST(Gloo, PeerThatLeavesMakesTheCollectiveFailInsteadOfHanging) {
  int port = launch::PickFreePort();
  std::promise<void> rank0_connected;
  std::promise<void> rank1_gone;
  auto rank1 = std::async(std::launch::async, [&] {
    std::unique_ptr<Collectives> group = ConnectGloo(LoopbackOptions(1, 2, port, 2000));
    // The group is formed once both ranks have returned from the connect: leaving earlier
    // fails rank 0's connect instead (Gloo may still be reading this rank's handshake).
    rank0_connected.get_future().wait();
    group.reset();  // leaves without joining the next collective
    rank1_gone.set_value();
  });
  std::unique_ptr<Collectives> group;
  try {
    group = ConnectGloo(LoopbackOptions(0, 2, port, 2000));
  } catch (...) {
    rank0_connected.set_value();  // else rank 1 would wait forever and the test hang
    throw;
  }
  rank0_connected.set_value();
  rank1_gone.get_future().wait();
  rank1.get();
  auto started = std::chrono::steady_clock::now();
  std::vector<at::Tensor> tensors = {at::ones({8})};
  EXPECT_THROW(group->AllReduceSum(tensors), CollectiveError);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_LT(seconds, 10.0);
}

// Two jobs on one address and port: a rank of job A (`foreign_id`) reaches job B's store
// (`job_id`). It must be refused at once, naming both launches, and must not take B's rank 1
// place: B trains on.
void ExpectTheForeignRankRefused(const std::string& job_id, const std::string& foreign_id,
                                 const std::string& expected) {
  int port = launch::PickFreePort();
  auto options = [port](int rank, const std::string& launch) {
    RendezvousOptions o = LoopbackOptions(rank, 2, port, 4000);
    o.launch_id = launch;
    return o;
  };
  std::promise<void> foreign_done;
  auto job_b_rank0 = std::async(std::launch::async, [&] {
    std::unique_ptr<Collectives> group = ConnectGloo(options(0, job_id));
    std::vector<at::Tensor> tensors = {at::ones({4})};
    group->AllReduceSum(tensors);
    return tensors[0];
  });
  auto foreign = std::async(std::launch::async, [&] {
    auto started = std::chrono::steady_clock::now();
    std::string message;
    try {
      ConnectGloo(options(1, foreign_id));
    } catch (const OwnRendezvousError& error) {
      message = error.what();
    }
    foreign_done.set_value();
    return std::pair{message, std::chrono::steady_clock::now() - started};
  });
  foreign_done.get_future().wait();  // the foreign rank knocks first
  auto job_b_rank1 = std::async(std::launch::async, [&] {
    std::unique_ptr<Collectives> group = ConnectGloo(options(1, job_id));
    std::vector<at::Tensor> tensors = {at::ones({4})};
    group->AllReduceSum(tensors);
    return tensors[0];
  });
  auto [message, took] = foreign.get();
  EXPECT_NE(message.find(expected), std::string::npos) << message;
  EXPECT_LT(std::chrono::duration<double>(took).count(), 3.0);  // refused, not timed out
  EXPECT_TRUE(at::equal(job_b_rank0.get(), at::full({4}, 2.0f)));
  EXPECT_TRUE(at::equal(job_b_rank1.get(), at::full({4}, 2.0f)));
}

TEST(Gloo, ARankOfAnotherLaunchIsRefusedAndTheJobGoesOn) {
  ExpectTheForeignRankRefused("slurm-12.0", "slurm-11.0",
                              "belongs to launch slurm-12.0, and this rank to launch slurm-11.0");
}

// No launch id is not a wildcard, on either side: a rank without one joins no job that has one,
// and a rank with one joins no job without.
TEST(Gloo, AMissingLaunchIdMatchesNoOtherId) {
  ExpectTheForeignRankRefused("slurm-12.0", "",
                              "belongs to launch slurm-12.0, and this rank to launch one without a launch id");
  ExpectTheForeignRankRefused("", "slurm-11.0",
                              "belongs to launch one without a launch id, and this rank to launch slurm-11.0");
}

// A checkpoint save longer than the timeout, on a writer that says it still works (a slow
// disk): its peers wait for it, past the timeout, and the group is usable afterwards. A
// Barrier after the save gives up after one timeout.
TEST(MeetAfterWork, WaitsPastTheTimeoutForAPeerThatSaysItStillWorks) {
  using namespace std::chrono_literals;
  progress::SetStillWorkingInterval(0ms);  // every call beats: the ranks are threads of one process
  RunRanks(
      2,
      [](int rank, Collectives& group) {
        // Rank 0's part: `beats` heartbeats, `every` apart; rank 1 has none. Returns how long
        // the meeting took this rank.
        auto meet = [&](int beats, std::chrono::milliseconds every) {
          const auto started = std::chrono::steady_clock::now();
          group.MeetAfterWork("the checkpoint save", [&] {
            for (int i = 0; rank == 0 && i < beats; ++i) {
              std::this_thread::sleep_for(every);
              progress::StillWorking();
            }
          });
          return std::chrono::steady_clock::now() - started;
        };
        // A beat every 300 ms: several polls in between see nothing move, and the wait goes
        // on because the last beat is younger than the timeout.
        EXPECT_GE(meet(9, 300ms), 2600ms) << "rank " << rank;
        std::vector<at::Tensor> tensors{at::ones({1})};
        group.AllReduceSum(tensors);
        EXPECT_EQ(tensors[0].item<float>(), 2.0f);
        // A second meeting counts its own arrivals: rank 1 waits for rank 0 again.
        EXPECT_GE(meet(12, 100ms), 1100ms) << "rank " << rank;
        // As after any collective, no rank leaves the group while a peer may still be in it:
        // rank 0 serves the store that rank 1 may still be polling.
        group.Barrier();
      },
      /*timeout_ms=*/1000);
  progress::SetStillWorkingInterval(1000ms);
}

// A writer that says nothing for the timeout (a write stuck in the kernel) is named by the peer
// that waits for it, after one timeout of silence, not at once and not never. The waiting rank
// says it is alive at every poll, and that must not count as its peer's work.
TEST(MeetAfterWork, NamesThePeerSilentInItsWorkForTheTimeout) {
  using namespace std::chrono_literals;
  progress::SetStillWorkingInterval(0ms);
  RunRanks(
      2,
      [](int rank, Collectives& group) {
        if (rank == 0) {
          group.MeetAfterWork("the checkpoint save", [] { std::this_thread::sleep_for(2500ms); });
          return;
        }
        const auto started = std::chrono::steady_clock::now();
        try {
          group.MeetAfterWork("the checkpoint save", [] {});
          ADD_FAILURE() << "rank 1 met a peer that never arrived";
        } catch (const CollectiveError& error) {
          EXPECT_NE(std::string(error.what()).find("rank 0 showed no progress in the checkpoint save"),
                    std::string::npos)
              << error.what();
        }
        const auto took = std::chrono::steady_clock::now() - started;
        EXPECT_GE(took, 1000ms);
        EXPECT_LT(took, 2400ms);
      },
      /*timeout_ms=*/1000);
  progress::SetStillWorkingInterval(1000ms);
}

// Writing to a socket whose peer went away must fail with EPIPE, not kill the rank with
// SIGPIPE: a worker that dies of a signal names no peer and no cause.
TEST(Gloo, AWriteToAPeerThatLeftFailsInsteadOfKillingTheRank) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        std::unique_ptr<Collectives> group = ConnectGloo(LoopbackOptions(0, 1, launch::PickFreePort(), 2000));
        int ends[2];
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, ends) != 0) std::_Exit(2);
        close(ends[1]);
        char byte = 0;
        bool failed_with_epipe = write(ends[0], &byte, 1) == -1 && errno == EPIPE;
        std::_Exit(failed_with_epipe ? 0 : 3);
      },
      ::testing::ExitedWithCode(0), "");
}

// The rendezvous's texts read back as written, the empty verdict "nobody is missing" too.
// (LibTorch 1.13's store stalled up to 200 ms on an empty value, so they carried a tag byte;
// 2.11's answers one as fast as any other, docs/distributed.md.)
// PyTorch's store names each connection's peer with getnameinfo, which asks DNS; where DNS does
// not answer, every connection to the store waited 5 s. What the shared libraries find under
// that name must answer numerically, without a lookup. (The loopback address has a name on
// nearly every machine, in /etc/hosts, which the C library's own getnameinfo would give.)
TEST(Rendezvous, PeerAddressesAreNamedWithoutAskingTheResolver) {
  using GetNameInfo = int (*)(const sockaddr*, socklen_t, char*, socklen_t, char*, socklen_t, int);
  auto found = reinterpret_cast<GetNameInfo>(::dlsym(RTLD_DEFAULT, "getnameinfo"));
  ASSERT_NE(found, nullptr);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(29500);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  char host[NI_MAXHOST] = {};
  char service[NI_MAXSERV] = {};
  ASSERT_EQ(found(reinterpret_cast<sockaddr*>(&address), sizeof(address), host, sizeof(host), service,
                  sizeof(service), NI_NUMERICSERV),
            0);
  EXPECT_STREQ(host, "127.0.0.1");
  EXPECT_STREQ(service, "29500");
}

TEST(Rendezvous, TextValuesReadBackAsWrittenEvenWhenEmpty) {
  c10d::HashStore store;
  for (std::string text : {"", "1, 3", "local-5f3c"}) {
    internal::SetStoreText(store, "key", text);
    EXPECT_EQ(store.get("key").size(), text.size()) << "`" << text << "` was not stored as itself";
    EXPECT_EQ(internal::GetStoreText(store, "key"), text);
  }
}

// PyTorch's flight recorder crashes when groups on two threads start at once; it is off unless
// the user sized it, and a user's size is kept.
TEST(FlightRecorder, IsOffUnlessTheUserSizedIt) {
  const char* kSize = "TORCH_FR_BUFFER_SIZE";
  ::unsetenv(kSize);
  KeepFlightRecorderOff();
  ASSERT_NE(std::getenv(kSize), nullptr);
  EXPECT_STREQ(std::getenv(kSize), "0");
  ::setenv(kSize, "500", 1);
  KeepFlightRecorderOff();
  EXPECT_STREQ(std::getenv(kSize), "500");
  ::setenv(kSize, "0", 1);
}

TEST(SingleProcess, OperationsAreTheIdentity) {
  std::unique_ptr<Collectives> group = MakeSingleProcess();
  std::vector<at::Tensor> tensors = {at::full({2}, 5.0f)};
  group->AllReduceSum(tensors);
  group->Broadcast(tensors, 0);
  group->Barrier();
  EXPECT_TRUE(at::equal(tensors[0], at::full({2}, 5.0f)));
  EXPECT_EQ(group->world_size(), 1);
}

}  // namespace
}  // namespace accel::rt::distributed
