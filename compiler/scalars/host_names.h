#ifndef ACCEL_COMPILER_SCALARS_HOST_NAMES_H_
#define ACCEL_COMPILER_SCALARS_HOST_NAMES_H_

#include <string>
#include <string_view>

// What a rendezvous address may be: the checker (a `host` field) and the plan reader
// (`init_process_group.main_process_ip`) hold it to the same rule.
namespace accel::scalars {

// Why `text` is not a host name or an IP address, or "" when it is one: a DNS name (letters,
// the UTF-8 letters of an internationalized name included, digits, `-`, `.`, `_`; at most 253
// bytes), an IPv4 address, or an IPv6 address with or without brackets (hex digits, `:`, `.`,
// and a `%zone`). The reason names a bad byte by its code, never prints it: a line break in an
// address once forged a log line (`127.0.0.1\nMASTER_ADDR=evil`).
std::string WhyNotAHost(std::string_view text);

}  // namespace accel::scalars

#endif  // ACCEL_COMPILER_SCALARS_HOST_NAMES_H_
