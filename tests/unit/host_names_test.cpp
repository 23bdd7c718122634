// What a rendezvous address may be (compiler/scalars/host_names.h).
#include "compiler/scalars/host_names.h"

#include <gtest/gtest.h>

#include <string>

namespace accel::scalars {
namespace {

TEST(HostNames, AcceptsNamesAndAddressesOfEveryForm) {
  for (const char* host : {"localhost", "node-01.cluster.local", "10.0.0.1", "::1", "[::1]", "fe80::1%eth0",
                           "[2001:db8::8a2e:370:7334]", "::ffff:192.0.2.1", "gpu_7",
                           "caf\xC3\xA9.example"}) {
    EXPECT_EQ(WhyNotAHost(host), "") << host;
  }
}

TEST(HostNames, NamesTheBadByteWithoutPrintingIt) {
  EXPECT_EQ(WhyNotAHost("127.0.0.1\nMASTER_ADDR=evil"), "it holds a line break (byte 0x0a at offset 9)");
  EXPECT_EQ(WhyNotAHost(std::string("a\0b", 3)), "it holds a NUL byte (byte 0x00 at offset 1)");
  EXPECT_EQ(WhyNotAHost("host name"), "it holds a blank (byte 0x20 at offset 4)");
  EXPECT_EQ(WhyNotAHost("10.0.0.1;rm"), "it holds a byte no host name holds (byte 0x3b at offset 8)");
  EXPECT_EQ(WhyNotAHost("[::1\n]"), "it holds a line break (byte 0x0a at offset 4)");
  EXPECT_EQ(WhyNotAHost(""), "it is empty");
  EXPECT_EQ(WhyNotAHost(std::string(254, 'a')), "it is longer than the 253 bytes of a host name");
}

}  // namespace
}  // namespace accel::scalars
