// getnameinfo for every process that links the rendezvous: numeric unless a name is required.
//
// PyTorch's rendezvous store formats each connection's peer address for its log lines with
// getnameinfo, on both ends, and without NI_NUMERICHOST, so every connection asks DNS for the
// address's name before the store serves it. Where the resolver does not answer (no PTR records
// for the nodes, an unreachable server, a container without DNS), each connection waits out the
// resolver's timeout, 5 s by default: a rank joins seconds late, or not within a short timeout.
// This definition, in the executable, comes before the C library's for every shared library
// (CMakeLists.txt makes the linker take it); it asks for the numeric form unless the caller needs
// a name (NI_NAMEREQD), and leaves the rest to the C library's.
#include <dlfcn.h>
#include <netdb.h>
#include <sys/socket.h>

namespace {

using GetNameInfo = int (*)(const sockaddr*, socklen_t, char*, socklen_t, char*, socklen_t, int);

GetNameInfo LibraryGetNameInfo() {
  static const auto library = reinterpret_cast<GetNameInfo>(::dlsym(RTLD_NEXT, "getnameinfo"));
  return library;
}

}  // namespace

extern "C" int getnameinfo(const sockaddr* __restrict address, socklen_t address_size, char* __restrict host,
                           socklen_t host_size, char* __restrict service, socklen_t service_size,
                           int flags) __THROW {
  GetNameInfo library = LibraryGetNameInfo();
  if (library == nullptr) return EAI_SYSTEM;
  if ((flags & NI_NAMEREQD) == 0) flags |= NI_NUMERICHOST;
  return library(address, address_size, host, host_size, service, service_size, flags);
}
