#include "runtime/support/blas.h"
#include "runtime/support/listener.h"
#include "runtime/support/route.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

namespace accel::rt::support {
namespace {

TEST(Blas, ClassifiesDebianLibraryPaths) {
  EXPECT_EQ(ClassifyBlasPath("/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3"),
            BlasInfo::Kind::OpenBlas);
  EXPECT_EQ(ClassifyBlasPath("/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0"),
            BlasInfo::Kind::NetlibReference);
  EXPECT_EQ(ClassifyBlasPath("/opt/intel/lib/libmkl_rt.so"), BlasInfo::Kind::Mkl);
  EXPECT_EQ(ClassifyBlasPath("/usr/lib/x86_64-linux-gnu/blis-openmp/libblas.so.3"), BlasInfo::Kind::Blis);
}

TEST(Blas, DescriptionSaysWhichAndWhetherItIsSlow) {
  BlasInfo netlib{BlasInfo::Kind::NetlibReference, "/usr/lib/x86_64-linux-gnu/blas/libblas.so.3"};
  EXPECT_FALSE(netlib.optimized());
  EXPECT_NE(netlib.Describe().find("slow"), std::string::npos);
  BlasInfo none;
  EXPECT_EQ(none.Describe(), "no BLAS loaded");
}

TEST(Blas, ThisTestBinaryLoadsNoBlas) {
  // Nothing here links BLAS; detection must not invent one.
  EXPECT_EQ(DetectLoadedBlas().kind, BlasInfo::Kind::NotLoaded);
}

// PyPI's LibTorch links its BLAS in: its build settings name it, no libblas.so.3 is loaded.
TEST(Blas, TheBlasLinkedIntoLibTorchIsReadFromItsBuildSettings) {
  BlasInfo mkl = BlasOfLibTorch("  - Build settings: BLAS_INFO=mkl, BUILD_TYPE=Release, USE_MKL=ON\n");
  EXPECT_EQ(mkl.kind, BlasInfo::Kind::Mkl);
  EXPECT_TRUE(mkl.optimized());
  EXPECT_EQ(mkl.Describe(), "MKL (linked into LibTorch)");
  EXPECT_EQ(BlasOfLibTorch("Build settings: BUILD_TYPE=Release, BLAS_INFO=open").kind,
            BlasInfo::Kind::OpenBlas);
  // Called through libblas.so.3 (Debian's build) or not said: what this process loaded, here none.
  EXPECT_EQ(BlasOfLibTorch("Build settings: BLAS_INFO=generic, USE_MKL=OFF").kind, BlasInfo::Kind::NotLoaded);
  EXPECT_EQ(BlasOfLibTorch("PyTorch built with: GCC 12").kind, BlasInfo::Kind::NotLoaded);
}

}  // namespace
}  // namespace accel::rt::support

namespace accel::rt {
namespace {

// The address a worker advertises to its peers is the one that routes to the rendezvous host.
TEST(Route, TheLocalAddressTowardsAHostIsTheOneItsRouteUses) {
  EXPECT_EQ(LocalAddressTowards("127.0.0.1"), std::optional<std::string>("127.0.0.1"));
  // Loopback routes from loopback, whatever else the machine has: 127.0.0.5 is reached from
  // 127.0.0.1, never from an outside address.
  std::optional<std::string> other_loopback = LocalAddressTowards("127.0.0.5");
  ASSERT_TRUE(other_loopback.has_value());
  EXPECT_EQ(other_loopback->rfind("127.", 0), 0u) << *other_loopback;
  EXPECT_FALSE(LocalAddressTowards("no-such-host.invalid").has_value());
}

// A loopback port bound but not listening: connections to it are refused until Listen().
class ReservedPort {
 public:
  ReservedPort() : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    EXPECT_EQ(::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length), 0);
    port_ = ntohs(address.sin_port);
  }
  ~ReservedPort() { ::close(fd_); }
  int port() const { return port_; }
  int fd() const { return fd_; }
  void Listen() { ASSERT_EQ(::listen(fd_, 4), 0); }

 private:
  int fd_;
  int port_ = 0;
};

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

TEST(Listener, ReturnsOnceSomethingListensAndLeavesNoConnectionOpen) {
  ReservedPort port;
  auto started = Clock::now();
  std::future<std::string> waited = std::async(
      std::launch::async, [&] { return WaitForListener("127.0.0.1", port.port(), milliseconds(30000)); });
  // Refused attempts first: the wait goes on past them.
  EXPECT_EQ(waited.wait_for(milliseconds(200)), std::future_status::timeout);
  port.Listen();
  EXPECT_EQ(waited.get(), "");
  EXPECT_LT(Clock::now() - started, milliseconds(20000)) << "returned at the deadline, not on the listener";
  // The connection that found the listener is closed again: the store's server sees it end.
  int accepted = ::accept(port.fd(), nullptr, nullptr);
  ASSERT_GE(accepted, 0);
  timeval limit{.tv_sec = 5, .tv_usec = 0};  // a connection left open fails the test, not hangs it
  ::setsockopt(accepted, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  char byte = 0;
  EXPECT_EQ(::recv(accepted, &byte, 1, 0), 0);
  ::close(accepted);
}

TEST(Listener, SaysWhyWhenNothingListensByTheDeadline) {
  ReservedPort port;
  auto started = Clock::now();
  EXPECT_EQ(WaitForListener("127.0.0.1", port.port(), milliseconds(300)), "Connection refused");
  EXPECT_GE(Clock::now() - started, milliseconds(300)) << "gave up before the deadline";
  EXPECT_NE(WaitForListener("no-such-host.invalid", port.port(), milliseconds(50)), "");
}

}  // namespace
}  // namespace accel::rt
