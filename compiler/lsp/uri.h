#ifndef ACCEL_COMPILER_LSP_URI_H_
#define ACCEL_COMPILER_LSP_URI_H_

// `file://` URIs, as LSP names documents, and the paths the compiler reads.

#include <optional>
#include <string>
#include <string_view>

namespace accel::lsp {

// The path of a `file://` URI, percent-decoded (`file:///a%20b.accel` -> `/a b.accel`). Empty
// for another scheme, a remote host, or a `%` escape that is not two hex digits.
std::optional<std::string> PathFromUri(std::string_view uri);

// The `file://` URI of an absolute path; every byte but unreserved ones and `/` is escaped.
std::string UriFromPath(std::string_view path);

}  // namespace accel::lsp

#endif  // ACCEL_COMPILER_LSP_URI_H_
