#ifndef ACCEL_COMPILER_SOURCE_NAMED_FILE_H_
#define ACCEL_COMPILER_SOURCE_NAMED_FILE_H_

#include <filesystem>
#include <string>
#include <string_view>

// The one policy for a file that a spec or config names, rather than the user on the command
// line: a referenced DeepSpeed JSON, an import, an env file, a dataset, a TorchScript model. Such
// a file is untrusted (a pull request can name `/proc/self/environ`), so every reader of one
// asks here first, before a byte is read, and quotes nothing of a file that is not of the kind
// it expects (docs/security.md).
namespace accel::source {

// Why the file at `path` must not be read, or "" when it may: it must resolve, symlinks
// followed, to a regular file outside /proc, /sys and /dev. A FIFO blocks its reader, a device
// (`/dev/zero`) never ends, and the kernel's files (`/proc/self/environ`, which holds the
// environment's tokens) are regular files of size 0: each is refused by what it is.
std::string WhyNotReadable(const std::string& path);

// The folder a checked config may name files in: the nearest ancestor of `referrer`'s folder
// that holds `.git` (the repository a pull request changes), else `referrer`'s own folder.
// Symlinks resolved.
std::filesystem::path RepositoryOf(const std::string& referrer);

// Whether `path`, symlinks resolved, lies inside `folder` (as RepositoryOf gives it).
bool IsInside(const std::string& path, const std::filesystem::path& folder);

// Whether `text` may be a JSON object: after blanks and a UTF-8 byte-order mark its first byte
// is `{`. Only then may a diagnostic quote its lines: a private key, a password file or any
// other text named where JSON belongs is refused as "not JSON" without a word of it.
bool LooksLikeJsonObject(std::string_view text);

}  // namespace accel::source

#endif  // ACCEL_COMPILER_SOURCE_NAMED_FILE_H_
