#include "compiler/plan/plan_paths.h"

#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace accel::plan {
namespace {

namespace fs = std::filesystem;

// Calls `change` on every string field of unit `path` in `value`, through records, variants and
// lists, so that a path field added to plan.def is covered without touching this file.
template <typename T, typename F>
void ForEachInputPath(T& value, F& change) {
  if constexpr (kIsRecord<T>) {
    ForEachField(value, [&](const FieldInfo& field, auto& member) {
      using Member = std::decay_t<decltype(member)>;
      if constexpr (std::is_same_v<Member, std::string>) {
        if (field.unit == "path" && !member.empty() && fs::path(member).is_relative())
          member = change(member);
      } else {
        ForEachInputPath(member, change);
      }
    });
  } else if constexpr (VariantInfo<T>::kIsVariant) {
    std::visit([&](auto& alternative) { ForEachInputPath(alternative, change); }, value);
  } else if constexpr (IsList<T>::value) {
    for (auto& element : value) ForEachInputPath(element, change);
  }
}

template <typename F>
void ForEachInputPath(Plan& plan, F change) {
  for (Step& step : plan.steps) std::visit([&](auto& record) { ForEachInputPath(record, change); }, step);
}

}  // namespace

void RebaseInputPaths(Plan& plan, const fs::path& from, const fs::path& to) {
  fs::path from_dir = fs::absolute(from).lexically_normal();
  fs::path to_dir = fs::absolute(to).lexically_normal();
  ForEachInputPath(plan, [&](const std::string& path) {
    fs::path rebased = (from_dir / path).lexically_normal().lexically_relative(to_dir);
    // Different roots have no relative spelling: the absolute path then says where the file is.
    return rebased.empty() ? (from_dir / path).lexically_normal().string() : rebased.string();
  });
  plan.hash = ComputeHash(plan);
}

void ResolveInputPaths(Plan& plan, const fs::path& base) {
  fs::path base_dir = fs::absolute(base).lexically_normal();
  ForEachInputPath(plan,
                   [&](const std::string& path) { return (base_dir / path).lexically_normal().string(); });
}

void MoveOutputDir(Plan& plan, const fs::path& output_dir) {
  SaveModel* save = nullptr;
  for (Step& step : plan.steps)
    if (auto* found = std::get_if<SaveModel>(&step)) save = found;
  if (save == nullptr) return;
  fs::path old_dir = fs::path(save->dir).lexically_normal();
  // `dir` inside the old output directory, as the same place under the new one.
  auto move = [&](std::string& dir) {
    if (dir.empty()) return;
    fs::path inside = fs::path(dir).lexically_normal().lexically_relative(old_dir);
    if (inside.empty() || *inside.begin() == "..") return;
    dir = inside == "." ? output_dir.string() : (output_dir / inside).lexically_normal().string();
  };
  for (Step& step : plan.steps) {
    if (auto* checkpoint = std::get_if<Checkpoint>(&step)) {
      move(checkpoint->project_dir);
      move(checkpoint->logging_dir);
    } else if (auto* loop = std::get_if<TrainLoop>(&step)) {
      move(loop->logging_dir);
    }
  }
  save->dir = output_dir.string();
}

}  // namespace accel::plan
