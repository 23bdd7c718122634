#include "runtime/memory/module_tree.h"

#include <algorithm>
#include <functional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/support/error.h"

namespace accel::rt::memory {
namespace {

std::vector<std::string_view> Split(std::string_view name) {
  std::vector<std::string_view> segments;
  size_t start = 0;
  while (true) {
    size_t dot = name.find('.', start);
    segments.push_back(
        name.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (dot == std::string_view::npos) return segments;
    start = dot + 1;
  }
}

bool HasEmptySegment(std::string_view name) {
  for (std::string_view segment : Split(name)) {
    if (segment.empty()) return true;
  }
  return false;
}

// `*` and `?` inside one segment; iterative with one backtrack point, so it is linear-ish.
bool GlobMatch(std::string_view pattern, std::string_view text) {
  size_t p = 0, t = 0, star = std::string_view::npos, resume = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool SegmentsMatch(const std::vector<std::string>& pattern, size_t p,
                   const std::vector<std::string_view>& name, size_t n) {
  if (p == pattern.size()) return n == name.size();
  if (pattern[p] == "**") {
    // `**` takes zero or more whole segments.
    for (size_t k = n; k <= name.size(); ++k) {
      if (SegmentsMatch(pattern, p + 1, name, k)) return true;
    }
    return false;
  }
  return n < name.size() && GlobMatch(pattern[p], name[n]) && SegmentsMatch(pattern, p + 1, name, n + 1);
}

// Sibling order: all-digit segments as numbers (ModuleList indices), otherwise bytewise.
bool NaturalLess(std::string_view a, std::string_view b) {
  auto digits = [](std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (digits(a) && digits(b)) {
    // Compare as numbers without parsing: strip leading zeros, then shorter is smaller.
    std::string_view x = a.substr(std::min(a.find_first_not_of('0'), a.size()));
    std::string_view y = b.substr(std::min(b.find_first_not_of('0'), b.size()));
    if (x.size() != y.size()) return x.size() < y.size();
    if (x != y) return x < y;
  }
  return a < b;
}

std::string_view LastSegment(std::string_view name) {
  size_t dot = name.rfind('.');
  return dot == std::string_view::npos ? name : name.substr(dot + 1);
}

// Above this many elements in all, byte sizes (doubles, fractional for sub-byte dtypes) could
// lose precision.
constexpr uint64_t kMaxTotalElements = uint64_t{1} << 50;

// Deeper names than any model has; the tree's walks recurse once per level.
constexpr long kMaxDepth = 256;

}  // namespace

llvm::Expected<NamePattern> NamePattern::Parse(std::string_view text) {
  if (text.empty()) return Fail("empty name pattern");
  if (HasEmptySegment(text)) return Fail(fmt::format("name pattern `{}` has an empty segment", text));
  NamePattern pattern;
  pattern.text_ = std::string(text);
  for (std::string_view segment : Split(text)) {
    // `**.**` means `**`; merging them keeps matching from trying every split twice.
    if (segment == "**" && !pattern.segments_.empty() && pattern.segments_.back() == "**") continue;
    pattern.segments_.emplace_back(segment);
  }
  return pattern;
}

bool NamePattern::Matches(std::string_view name) const {
  std::vector<std::string_view> segments = Split(name);
  return SegmentsMatch(segments_, 0, segments, 0);
}

bool MatchesAny(const std::vector<NamePattern>& patterns, std::string_view name) {
  return std::any_of(patterns.begin(), patterns.end(), [&](const NamePattern& p) { return p.Matches(name); });
}

NodeId ModuleTree::AddPath(std::string_view name, bool* conflict) {
  // Walks (and creates) the modules above `name`, then creates the tensor itself.
  NodeId current = root();
  size_t start = 0;
  while (true) {
    size_t dot = name.find('.', start);
    bool last = dot == std::string_view::npos;
    std::string_view prefix = name.substr(0, last ? name.size() : dot);
    auto found = by_name_.find(prefix);
    if (found != by_name_.end()) {
      // An existing tensor cannot have children, and a tensor cannot reuse any existing name.
      if (last || nodes_[found->second].is_tensor) {
        *conflict = true;
        return found->second;
      }
      current = found->second;
    } else {
      NodeId id = static_cast<NodeId>(nodes_.size());
      Node node;
      node.name = std::string(prefix);
      node.is_tensor = last;
      node.parent = current;
      nodes_.push_back(std::move(node));
      by_name_[prefix] = id;
      if (!last) nodes_[current].children.push_back(id);
      current = id;
    }
    if (last) return current;
    start = dot + 1;
  }
}

NodeId ModuleTree::AddModulePath(std::string_view name) {
  // Called before any tensor exists, so every prefix found is a module.
  NodeId current = root();
  size_t start = 0;
  while (true) {
    size_t dot = name.find('.', start);
    std::string_view prefix = name.substr(0, dot == std::string_view::npos ? name.size() : dot);
    auto found = by_name_.find(prefix);
    if (found != by_name_.end()) {
      current = found->second;
    } else {
      NodeId id = static_cast<NodeId>(nodes_.size());
      Node node;
      node.name = std::string(prefix);
      node.parent = current;
      nodes_.push_back(std::move(node));
      by_name_[prefix] = id;
      nodes_[current].children.push_back(id);
      current = id;
    }
    if (dot == std::string_view::npos) return current;
    start = dot + 1;
  }
}

void ModuleTree::SortChildren(NodeId id) {
  auto by_name = [this](NodeId a, NodeId b) {
    return NaturalLess(LastSegment(nodes_[a].name), LastSegment(nodes_[b].name));
  };
  Node& node = nodes_[id];
  std::sort(node.parameters.begin(), node.parameters.end(), by_name);
  std::sort(node.children.begin(), node.children.end(), by_name);
  std::sort(node.buffers.begin(), node.buffers.end(), by_name);
}

llvm::Expected<ModuleTree> ModuleTree::Build(const std::vector<TensorEntry>& tensors,
                                             const TreeOptions& options) {
  ModuleTree tree;
  tree.nodes_.push_back(Node{});
  tree.by_name_[""] = tree.root();

  // Tied groups first checked on their own: every name once, in one group of at least two.
  std::set<std::string> tied_names;
  for (const std::vector<std::string>& group : options.tied) {
    if (group.size() < 2) {
      return Fail(fmt::format("tied group `{}` needs at least two names", group.empty() ? "" : group[0]));
    }
    for (const std::string& name : group) {
      if (!tied_names.insert(name).second) {
        return Fail(fmt::format("`{}` appears in more than one tied group or twice in one", name));
      }
    }
  }

  uint64_t total_elements = 0;
  auto add_tensor = [&](const std::string& name, const TensorEntry* entry) -> llvm::Expected<NodeId> {
    if (name.empty() || HasEmptySegment(name)) {
      return Fail(fmt::format("tensor name `{}` has an empty segment", name));
    }
    // The walks over the tree recurse once per level.
    if (std::count(name.begin(), name.end(), '.') >= kMaxDepth) {
      return Fail(
          fmt::format("tensor name `{}...` has more than {} segments", name.substr(0, 40), kMaxDepth));
    }
    bool conflict = false;
    NodeId id = tree.AddPath(name, &conflict);
    if (conflict) {
      const Node& existing = tree.nodes_[id];
      if (existing.name == name && existing.is_tensor) {
        return Fail(fmt::format("duplicate tensor `{}`", name));
      }
      return Fail(
          fmt::format("`{}` is both a tensor and a module: a tensor cannot have children", existing.name));
    }
    Node& node = tree.nodes_[id];
    node.is_buffer = (entry != nullptr && entry->is_buffer) || MatchesAny(options.buffers, name);
    if (entry != nullptr) {
      node.dtype = entry->dtype;
      node.shape = entry->shape;
      node.file = entry->file;
      uint64_t elements = 1;
      for (int64_t d : entry->shape) {
        if (d < 0) return Fail(fmt::format("tensor `{}` has a negative dimension", name));
        if (d != 0 && elements > kMaxTotalElements / static_cast<uint64_t>(d)) {
          return Fail(fmt::format("tensor `{}` has more than 2^50 elements", name));
        }
        elements *= static_cast<uint64_t>(d);
      }
      node.elements = elements;
      total_elements += elements;
      if (total_elements > kMaxTotalElements) {
        return Fail("the checkpoint describes more than 2^50 elements; sizes would lose precision");
      }
    }
    Node& parent = tree.nodes_[*node.parent];
    (node.is_buffer ? parent.buffers : parent.parameters).push_back(id);
    return id;
  };

  // Tensor-less modules first: each is a module path whose last segment is a module too.
  for (const std::string& name : options.modules) {
    if (name.empty() || HasEmptySegment(name)) {
      return Fail(fmt::format("module name `{}` has an empty segment", name));
    }
    if (std::count(name.begin(), name.end(), '.') >= kMaxDepth) {
      return Fail(
          fmt::format("module name `{}...` has more than {} segments", name.substr(0, 40), kMaxDepth));
    }
    tree.AddModulePath(name);
  }
  for (const TensorEntry& entry : tensors) {
    llvm::Expected<NodeId> id = add_tensor(entry.name, &entry);
    if (!id) return id.takeError();
  }
  // Tied names missing from the checkpoint become aliases of a stored member.
  for (const std::vector<std::string>& group : options.tied) {
    const Node* stored = nullptr;
    for (const std::string& name : group) {
      std::optional<NodeId> id = tree.Find(name);
      if (!id) continue;
      const Node& node = tree.nodes_[*id];
      if (!node.is_tensor) return Fail(fmt::format("tied name `{}` is a module, not a tensor", name));
      if (stored != nullptr && (node.dtype != stored->dtype || node.shape != stored->shape)) {
        return Fail(fmt::format("tied tensors `{}` and `{}` differ in dtype or shape", stored->name, name));
      }
      if (stored == nullptr) stored = &node;
    }
    if (stored == nullptr) {
      return Fail(
          fmt::format("no tensor of the tied group `{}` is in the checkpoint", fmt::join(group, "=")));
    }
    TensorEntry shape_of{"", stored->dtype, stored->shape, ""};
    for (const std::string& name : group) {
      if (tree.Find(name)) continue;
      llvm::Expected<NodeId> id = add_tensor(name, &shape_of);
      if (!id) return id.takeError();
    }
  }
  for (NodeId id = 0; id < tree.nodes_.size() && !options.order_as_given; ++id) {
    if (!tree.nodes_[id].is_tensor) tree.SortChildren(id);
  }
  // The first member in model order is the one `named_parameters()` reports, whichever name the
  // checkpoint stored; the rest alias it. This keeps Accelerate's size-with-ties arithmetic
  // right: it counts a tie correctly only when the counted member is met first.
  std::vector<NodeId> order = tree.TensorsInModelOrder();
  std::vector<size_t> position(tree.nodes_.size(), 0);
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
  for (const std::vector<std::string>& group : options.tied) {
    std::vector<NodeId> members;
    for (const std::string& name : group) members.push_back(*tree.Find(name));
    NodeId counted = *std::min_element(members.begin(), members.end(),
                                       [&](NodeId a, NodeId b) { return position[a] < position[b]; });
    for (NodeId id : members) tree.nodes_[id].is_alias = id != counted;
    std::vector<std::string> sorted = group;
    std::sort(sorted.begin(), sorted.end());
    tree.tied_groups_.push_back(std::move(sorted));
  }
  return tree;
}

std::optional<NodeId> ModuleTree::Find(std::string_view name) const {
  auto found = by_name_.find(name);
  if (found == by_name_.end()) return std::nullopt;
  return found->second;
}

std::vector<NodeId> ModuleTree::TensorsInModelOrder() const {
  std::vector<NodeId> order;
  // `named_parameters()` then `named_buffers()`: each walks modules in pre-order and yields a
  // module's own tensors before descending.
  for (bool buffers : {false, true}) {
    std::function<void(NodeId)> visit = [&](NodeId id) {
      const Node& node = nodes_[id];
      const std::vector<NodeId>& own = buffers ? node.buffers : node.parameters;
      order.insert(order.end(), own.begin(), own.end());
      for (NodeId child : node.children) visit(child);
    };
    visit(root());
  }
  return order;
}

std::vector<NodeId> GetModuleChildrenBottomUp(const ModuleTree& tree) {
  std::vector<NodeId> order;
  std::function<void(NodeId)> visit = [&](NodeId id) {
    for (NodeId child : tree.node(id).children) visit(child);
    order.push_back(id);
  };
  visit(tree.root());
  return order;
}

}  // namespace accel::rt::memory
