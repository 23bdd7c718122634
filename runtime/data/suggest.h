#ifndef ACCEL_RUNTIME_DATA_SUGGEST_H_
#define ACCEL_RUNTIME_DATA_SUGGEST_H_

#include <string>
#include <vector>

namespace accel::rt::data {

// "; did you mean `x`?" for a close candidate, otherwise "; the <what> are `a`, `b`", or
// without `list_candidates` "; it has 2 <what>" (names read from a file that may be of another
// kind, a CSV header being any file's first line, are not shown).
std::string Suggest(const std::string& name, const std::vector<std::string>& candidates,
                    const std::string& what, bool list_candidates = true);

}  // namespace accel::rt::data

#endif  // ACCEL_RUNTIME_DATA_SUGGEST_H_
