#ifndef ACCEL_RUNTIME_SUPPORT_LISTENER_H_
#define ACCEL_RUNTIME_SUPPORT_LISTENER_H_

#include <chrono>
#include <string>

namespace accel::rt {

// Waits until something at `host`:`port` accepts a TCP connection, trying again in short
// steps (5 ms, doubling to 50 ms) until `timeout` has passed. Returns "" once a connection
// was accepted (it is closed again at once), else why the last attempt failed
// ("Connection refused", a name that does not resolve, ...).
//
// A rank that reaches the rendezvous before rank 0 serves its store waits here: c10d's store
// client, refused, sleeps a whole second before trying again, which a job paid at start
// whenever a rank other than 0 finished loading LibTorch first.
std::string WaitForListener(const std::string& host, int port, std::chrono::milliseconds timeout);

}  // namespace accel::rt

#endif  // ACCEL_RUNTIME_SUPPORT_LISTENER_H_
