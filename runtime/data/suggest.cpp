#include "runtime/data/suggest.h"

#include <algorithm>

#include <fmt/format.h>

#include "llvm/ADT/StringRef.h"

namespace accel::rt::data {

std::string Suggest(const std::string& name, const std::vector<std::string>& candidates,
                    const std::string& what, bool list_candidates) {
  const std::string* best = nullptr;
  unsigned best_distance = 0;
  for (const std::string& candidate : candidates) {
    unsigned distance = llvm::StringRef(name).edit_distance(candidate, /*AllowReplacements=*/true);
    if (best == nullptr || distance < best_distance) {
      best = &candidate;
      best_distance = distance;
    }
  }
  // A third of the name may be wrong: enough for typos, not for unrelated names.
  if (best != nullptr && best_distance <= std::max<size_t>(1, name.size() / 3)) {
    return fmt::format("; did you mean `{}`?", *best);
  }
  if (!list_candidates) {
    // `what` is a plural ("columns"): one of them is its singular.
    return fmt::format("; it has {} {}", candidates.size(),
                       candidates.size() == 1 ? what.substr(0, what.size() - 1) : what);
  }
  std::string list;
  for (const std::string& candidate : candidates) list += (list.empty() ? "`" : ", `") + candidate + "`";
  return fmt::format("; the {} are {}", what, list.empty() ? "none" : list);
}

}  // namespace accel::rt::data
