#include "runtime/memory/estimate.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/cli/arguments.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"
#include "runtime/support/error.h"

namespace accel::rt::memory {

std::string HumanBytes(double bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = bytes / 1024;
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  return fmt::format("{:.2f} {}", value, kUnits[unit]);
}

namespace {

constexpr int kExitUsage = 2;

// 3072 → "3072", 12.5 → "12.5": sizes are multiples of 1/8.
std::string ExactBytes(double bytes) { return fmt::format("{}", bytes); }

// "100 B", or "1.50 KiB (1536 B)" once the unit hides the exact count.
std::string BothBytes(double bytes) {
  return bytes < 1024 ? HumanBytes(bytes) : fmt::format("{} ({} B)", HumanBytes(bytes), ExactBytes(bytes));
}

std::vector<std::string> SplitList(std::string_view text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    items.emplace_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return items;
}

// Adds the `,`-separated patterns of `text` to `out`; returns an error message, or "".
std::string AddPatterns(std::string_view flag, std::string_view text, std::vector<NamePattern>& out) {
  for (const std::string& item : SplitList(text)) {
    llvm::Expected<NamePattern> pattern = NamePattern::Parse(item);
    if (!pattern) return fmt::format("`{} {}`: {}", flag, text, llvm::toString(pattern.takeError()));
    out.push_back(std::move(*pattern));
  }
  return "";
}

// Adds the `,`-separated groups of `a=b[=c]` names of `text` to `tied`.
std::string AddTiedGroups(std::string_view text, std::vector<std::vector<std::string>>& tied) {
  for (const std::string& item : SplitList(text)) {
    std::vector<std::string> group;
    size_t start = 0;
    while (start <= item.size()) {
      size_t equals = item.find('=', start);
      if (equals == std::string::npos) equals = item.size();
      group.push_back(item.substr(start, equals - start));
      start = equals + 1;
    }
    bool empty = std::any_of(group.begin(), group.end(), [](const std::string& n) { return n.empty(); });
    if (group.size() < 2 || empty) {
      return fmt::format(
          "`--tied {}`: expected tensor names joined by `=`, e.g. `lm_head.weight=model.embed_tokens.weight`",
          item);
    }
    tied.push_back(std::move(group));
  }
  return "";
}

// Adds the `,`-separated `PATTERN=DTYPE` items of `text` to `special`.
std::string AddSpecialDtypes(std::string_view text, std::vector<std::pair<NamePattern, Dtype>>& special) {
  for (const std::string& item : SplitList(text)) {
    size_t equals = item.rfind('=');
    if (equals == std::string::npos) {
      return fmt::format("`--special-dtype {}`: expected PATTERN=DTYPE, e.g. `**.weight=int4`", item);
    }
    llvm::Expected<NamePattern> pattern = NamePattern::Parse(item.substr(0, equals));
    if (!pattern) return "`--special-dtype`: " + llvm::toString(pattern.takeError());
    llvm::Expected<Dtype> dtype = ParseDtype(item.substr(equals + 1));
    if (!dtype) return "`--special-dtype`: " + llvm::toString(dtype.takeError());
    special.emplace_back(std::move(*pattern), std::move(*dtype));
  }
  return "";
}

// What the command line asks for: the estimate's options and how to print it.
struct CommandLine {
  EstimateOptions options;
  std::string format = "text";
  bool help = false;
};

// Where the help text of the options starts.
constexpr size_t kHelpColumn = 26;

// The options of `accelrun estimate-memory`, applied to `c`, in the order the usage lists them.
std::vector<cli::Option> OptionTable(CommandLine& c) {
  EstimateOptions& o = c.options;
  return {
      cli::Option{.names = {"--max-memory"},
                  .value_name = "<budget>",
                  .help = "device budgets, e.g. `cpu=8GB,0=20GB` (GB/MB/KB decimal, GiB/MiB/KiB\n"
                          "binary, a plain number is bytes); without `cpu`, 80% of available RAM",
                  .apply = [&o](std::string_view, std::string_view text) -> std::string {
                    llvm::Expected<MaxMemory> budget = ParseMaxMemory(std::string(text));
                    if (!budget) return "`--max-memory`: " + llvm::toString(budget.takeError());
                    o.max_memory = std::move(*budget);
                    return "";
                  }},
      cli::Option{.names = {"--dtype"},
                  .value_name = "<dtype>",
                  .help = "size floating tensors as this dtype (bf16, fp16, fp32, fp8, int8, int4,\n"
                          "int2); integer and bool tensors keep their own",
                  .apply = [&o](std::string_view, std::string_view text) -> std::string {
                    llvm::Expected<Dtype> dtype = ParseDtype(std::string(text));
                    if (!dtype) return "`--dtype`: " + llvm::toString(dtype.takeError());
                    o.dtype = std::move(*dtype);
                    return "";
                  }},
      cli::Option{.names = {"--no-split"},
                  .value_name = "<patterns>",
                  .help = "modules never split across devices (stand-ins for no_split_module_classes)",
                  .apply = [&o](std::string_view flag,
                                std::string_view text) { return AddPatterns(flag, text, o.no_split); }},
      cli::Option{.names = {"--buffers"},
                  .value_name = "<patterns>",
                  .help = "tensors that are buffers, not parameters (e.g. `**.running_mean`)",
                  .apply = [&o](std::string_view flag,
                                std::string_view text) { return AddPatterns(flag, text, o.buffers); }},
      cli::Option{
          .names = {"--tied"},
          .value_name = "<a=b[=c]>",
          .help = "tensors sharing one storage; repeat or separate groups with `,`",
          .apply = [&o](std::string_view, std::string_view text) { return AddTiedGroups(text, o.tied); }},
      cli::Option{.names = {"--special-dtype"},
                  .value_name = "<p=dt>",
                  .help = "size tensors matching pattern p as dtype dt; repeat or separate with `,`",
                  .apply = [&o](std::string_view,
                                std::string_view text) { return AddSpecialDtypes(text, o.special_dtypes); }},
      cli::Option{.names = {"--balanced"},
                  .help = "balance the GPUs first (get_balanced_memory)",
                  .apply = cli::SetFlag(o.balanced)},
      cli::Option{.names = {"--low-zero"},
                  .help = "with --balanced: keep GPU 0 as empty as possible",
                  .apply = cli::SetFlag(o.low_zero)},
      cli::Option{.names = {"--offload-buffers"},
                  .help = "offload buffers with their modules",
                  .apply = cli::SetFlag(o.offload_buffers)},
      cli::Option{.names = {"--fallback-allocation"},
                  .help = "let a device that fits nothing take any module that fits",
                  .apply = cli::SetFlag(o.fallback_allocation)},
      cli::Option{.names = {"--no-clean"},
                  .help = "do not merge device-map entries under a common prefix",
                  .apply = cli::SetFlag(o.clean_result, false)},
      cli::Option{.names = {"--depth"},
                  .value_name = "<n>",
                  .help = "module rows down to depth n (default 1)",
                  .apply = [&o](std::string_view, std::string_view text) -> std::string {
                    std::optional<long> depth = cli::ParseInteger(text, 1, 64);
                    if (!depth) return fmt::format("`--depth` needs an integer from 1 to 64, not `{}`", text);
                    o.depth = static_cast<int>(*depth);
                    return "";
                  }},
      cli::Option{.names = {"--format"},
                  .value_name = "<text|json>",
                  .help = "output format (default text)",
                  .apply = [&c](std::string_view, std::string_view text) -> std::string {
                    if (text != "text" && text != "json") {
                      return fmt::format("`--format` is `text` or `json`, not `{}`", text);
                    }
                    c.format = text;
                    return "";
                  }},
      cli::Option{
          .names = {"-h", "--help"}, .help = "print this help", .apply = cli::SetFlag(c.help), .exits = true},
  };
}

std::string Usage() {
  CommandLine unused;
  return R"(usage: accelrun estimate-memory <checkpoint> [options]

Prints the memory a checkpoint needs, from its safetensors headers alone (no tensor data is
read): per-module sizes, the largest layer, and with --max-memory the device map Accelerate's
infer_auto_device_map would build. <checkpoint> is a .safetensors file, a
model.safetensors.index.json, or a directory holding either.

options:
)" + cli::FormatOptions(OptionTable(unused), kHelpColumn) +
         R"(
Patterns match dotted names segment by segment: `*` within a segment, `**` any number of
segments (`model.layers.*`, `**.running_var`); several patterns are separated with `,`.
)";
}

// Parses the command line into `c`; returns an error message, or "" (also for --help).
std::string ParseArguments(const std::vector<std::string>& args, CommandLine& c) {
  std::string error = cli::Parse(args, OptionTable(c), [&c](const std::string& arg) -> std::string {
    if (!c.options.checkpoint.empty()) {
      return fmt::format("unexpected argument `{}`; estimate-memory reads one checkpoint", arg);
    }
    c.options.checkpoint = arg;
    return "";
  });
  if (!error.empty() || c.help) return error;
  const EstimateOptions& options = c.options;
  if (options.checkpoint.empty()) return "missing the checkpoint to estimate";
  if (options.low_zero && !options.balanced) return "`--low-zero` needs `--balanced`";
  if (options.balanced && !options.max_memory) return "`--balanced` needs `--max-memory`";
  return "";
}

// Module rows in pre-order, down to `depth`.
void CollectRows(const ModuleTree& tree, const ModuleSizes& sizes, NodeId id, int depth, int max_depth,
                 std::vector<ModuleRow>& rows, std::vector<size_t>& tensor_counts) {
  const Node& node = tree.node(id);
  if (id != tree.root()) rows.push_back({node.name, depth, node.is_tensor, sizes.Get(id), tensor_counts[id]});
  if (depth >= max_depth) return;
  std::vector<NodeId> below = node.parameters;
  below.insert(below.end(), node.children.begin(), node.children.end());
  below.insert(below.end(), node.buffers.begin(), node.buffers.end());
  for (NodeId child : below) CollectRows(tree, sizes, child, depth + 1, max_depth, rows, tensor_counts);
}

void WriteNumber(llvm::json::OStream& json, double value) {
  if (value == std::trunc(value) && std::fabs(value) < 9e15) {
    json.value(static_cast<int64_t>(value));
  } else {
    json.value(value);
  }
}

void WriteDevice(llvm::json::OStream& json, const std::string& device) {
  if (IsGpu(device)) {
    json.value(static_cast<int64_t>(std::stol(device)));
  } else {
    json.value(device);
  }
}

}  // namespace

EstimateEnvironment SystemEnvironment() {
  return EstimateEnvironment{[]() -> std::optional<uint64_t> {
    std::ifstream meminfo("/proc/meminfo");
    std::string key;
    uint64_t kib = 0;
    std::string unit;
    while (meminfo >> key >> kib >> unit) {
      if (key == "MemAvailable:") return kib * 1024;
    }
    return std::nullopt;
  }};
}

llvm::Expected<Estimate> EstimateMemory(const EstimateOptions& options,
                                        const EstimateEnvironment& environment) {
  Estimate estimate;
  llvm::Expected<CheckpointHeaders> headers = ReadCheckpointHeaders(options.checkpoint);
  if (!headers) return headers.takeError();
  estimate.headers = std::move(*headers);
  estimate.warnings = estimate.headers.warnings;
  estimate.tensor_count = estimate.headers.tensors.size();

  TreeOptions tree_options{options.buffers, options.tied};
  llvm::Expected<ModuleTree> tree = ModuleTree::Build(estimate.headers.tensors, tree_options);
  if (!tree) return tree.takeError();

  SizeOptions sizes_options;
  sizes_options.dtype = options.dtype;
  for (NodeId id : tree->TensorsInModelOrder()) {
    const std::string& name = tree->node(id).name;
    for (const auto& [pattern, dtype] : options.special_dtypes) {
      if (!pattern.Matches(name)) continue;
      sizes_options.special_dtypes.emplace(name, dtype);
      break;
    }
  }

  // Stored sizes (calculate_maximum_sizes) and the sizes under the requested dtype.
  MaximumSizes stored = CalculateMaximumSizes(*tree, options.no_split);
  estimate.stored_bytes = stored.total_bytes;
  estimate.stored_largest_layer = stored.largest_layer;
  ModuleSizes sizes = ComputeModuleSizes(*tree, sizes_options);
  estimate.total_bytes = sizes.total();
  estimate.largest_layer = GetMaxLayerSize(*tree, RootEntries(*tree), sizes, options.no_split);

  std::vector<size_t> tensor_counts(tree->size(), 0);
  for (NodeId id : tree->TensorsInModelOrder()) {
    if (tree->node(id).is_alias) continue;
    for (std::optional<NodeId> at = id; at; at = tree->node(*at).parent) ++tensor_counts[*at];
  }
  CollectRows(*tree, sizes, tree->root(), 0, options.depth, estimate.modules, tensor_counts);

  if (!options.max_memory) return estimate;
  MaxMemory budget = *options.max_memory;
  bool has_cpu =
      std::any_of(budget.begin(), budget.end(), [](const DeviceLimit& l) { return l.device == "cpu"; });
  if (!has_cpu) {
    // get_max_memory: 80% of the available RAM when the budget names no cpu.
    std::optional<uint64_t> available =
        environment.available_ram ? environment.available_ram() : std::nullopt;
    if (!available) {
      return Fail("`--max-memory` has no `cpu` budget and the available RAM is unknown; add `cpu=SIZE`");
    }
    auto before_disk =
        std::find_if(budget.begin(), budget.end(), [](const DeviceLimit& l) { return l.device == "disk"; });
    budget.insert(before_disk, DeviceLimit{"cpu", static_cast<double>(*available) * 0.8});
    estimate.notes.push_back(
        fmt::format("cpu budget: 80% of the {} of RAM available now", HumanBytes(*available)));
  }
  if (options.balanced) {
    llvm::Expected<MaxMemory> balanced =
        GetBalancedMemory(*tree, std::move(budget), options.no_split, sizes_options, options.low_zero);
    if (!balanced) return balanced.takeError();
    budget = std::move(*balanced);
  }
  DeviceMapOptions map_options;
  map_options.no_split = options.no_split;
  map_options.sizes = sizes_options;
  map_options.clean_result = options.clean_result;
  map_options.offload_buffers = options.offload_buffers;
  map_options.fallback_allocation = options.fallback_allocation;
  DeviceMap map = InferAutoDeviceMap(*tree, budget, map_options);
  for (const auto& [name, device] : map.entries) {
    std::optional<NodeId> id = tree->Find(name);
    estimate.entry_bytes.push_back(id ? sizes.Get(*id) : 0);
  }
  estimate.uncovered = UncoveredTensors(*tree, map.entries);
  if (!estimate.uncovered.empty()) {
    estimate.warnings.push_back(fmt::format(
        "the device map gives no device to {} tensor{} (first: `{}`): Accelerate drops a split module's "
        "own buffers from its queue",
        estimate.uncovered.size(), estimate.uncovered.size() == 1 ? "" : "s", estimate.uncovered.front()));
  }
  estimate.warnings.insert(estimate.warnings.end(), map.warnings.begin(), map.warnings.end());
  estimate.max_memory = std::move(budget);
  estimate.device_map = std::move(map);
  return estimate;
}

std::string RenderText(const Estimate& estimate, const EstimateOptions& options) {
  std::string out;
  const CheckpointHeaders& headers = estimate.headers;
  out += fmt::format("checkpoint: {}\n", options.checkpoint);
  if (!headers.index.empty()) {
    out += fmt::format("  index {}: {} shard{}, ", headers.index, headers.files.size(),
                       headers.files.size() == 1 ? "" : "s");
  } else {
    out += fmt::format("  file {}: ", headers.files.empty() ? "" : headers.files[0]);
  }
  out +=
      fmt::format("{} tensor{}, {} of data\n", estimate.tensor_count, estimate.tensor_count == 1 ? "" : "s",
                  HumanBytes(static_cast<double>(headers.data_bytes)));
  if (options.dtype) {
    out += fmt::format(
        "dtype: {} ({} per element at most for floating tensors; integer and bool tensors keep "
        "their own)\n",
        options.dtype->name, HumanBytes(options.dtype->bytes));
  }

  // The summary table, as `accelerate estimate-memory` prints one row per dtype.
  out += fmt::format("\n{:<10}  {:>32}  {:>32}\n", "dtype", "largest layer", "total size");
  auto summary = [&](const std::string& label, const LayerSize& layer, double total) {
    out += fmt::format("{:<10}  {:>32}  {:>32}\n", label, BothBytes(layer.bytes), BothBytes(total));
  };
  summary("as stored", estimate.stored_largest_layer, estimate.stored_bytes);
  // The sizes everything below uses: under --dtype and --special-dtype, if given.
  bool resized = options.dtype || !options.special_dtypes.empty();
  std::string label = options.dtype ? options.dtype->name : "requested";
  if (resized) summary(label, estimate.largest_layer, estimate.total_bytes);
  // Every layer of the largest size, up to four; a model of equal blocks would list them all.
  const std::vector<std::string>& names = estimate.largest_layer.names;
  std::string layers =
      fmt::format("{}", fmt::join(names.begin(), names.begin() + std::min<size_t>(names.size(), 4), ", "));
  if (names.size() > 4) layers += fmt::format(" and {} more of the same size", names.size() - 4);
  out += fmt::format("largest layer{}: {}\n", resized ? " (" + label + ")" : "",
                     layers.empty() ? "(none)" : layers);

  size_t width = 6;
  for (const ModuleRow& row : estimate.modules)
    width = std::max(width, row.name.size() + 2 * (row.depth - 1));
  out += fmt::format("\n{:<{}}  {:>12}  {:>16}  {:>7}\n", "module", width, "size", "bytes", "tensors");
  for (const ModuleRow& row : estimate.modules) {
    std::string name = std::string(2 * (row.depth - 1), ' ') + row.name;
    out += fmt::format("{:<{}}  {:>12}  {:>16}  {:>7}\n", name, width, HumanBytes(row.bytes),
                       ExactBytes(row.bytes), row.tensors);
  }

  if (estimate.device_map) {
    const DeviceMap& map = *estimate.device_map;
    std::vector<std::string> budget;
    for (const DeviceLimit& limit : *estimate.max_memory) {
      budget.push_back(fmt::format("{}={}", limit.device, HumanBytes(limit.bytes)));
    }
    out += fmt::format("\ndevice map (max memory {}{}):\n", fmt::join(budget, ", "),
                       options.balanced ? ", balanced" : "");
    for (const std::string& note : estimate.notes) out += fmt::format("  {}\n", note);
    size_t map_width = 6;
    for (const auto& [name, device] : map.entries)
      map_width = std::max(map_width, name.empty() ? 4 : name.size());
    out += fmt::format("{:<{}}  {:>6}  {:>12}\n", "module", map_width, "device", "size");
    for (size_t i = 0; i < map.entries.size(); ++i) {
      const auto& [name, device] = map.entries[i];
      out += fmt::format("{:<{}}  {:>6}  {:>12}\n", name.empty() ? "\"\"" : name, map_width, device,
                         HumanBytes(estimate.entry_bytes[i]));
    }
    out += fmt::format("\n{:<6}  {:>12}  {:>12}\n", "device", "used", "budget");
    for (const DeviceLimit& used : map.used) {
      std::string limit = "unbounded";
      for (const DeviceLimit& l : *estimate.max_memory) {
        if (l.device == used.device && used.device != "disk") limit = HumanBytes(l.bytes);
      }
      out += fmt::format("{:<6}  {:>12}  {:>12}\n", used.device, HumanBytes(used.bytes), limit);
    }
    for (const DeviceLimit& needed : map.minimum_needed) {
      out += fmt::format("device {} received nothing; it would need {} ({} B) for the first module offered\n",
                         needed.device, HumanBytes(needed.bytes), ExactBytes(needed.bytes));
    }
  } else {
    out += "\npass --max-memory (e.g. `cpu=8GB,0=20GB`) for a device map\n";
  }
  return out;
}

std::string RenderJson(const Estimate& estimate, const EstimateOptions& options) {
  std::string text;
  llvm::raw_string_ostream stream(text);
  llvm::json::OStream json(stream, 2);
  const CheckpointHeaders& headers = estimate.headers;
  json.object([&] {
    json.attributeObject("checkpoint", [&] {
      json.attribute("path", options.checkpoint);
      if (headers.index.empty()) {
        json.attribute("index", nullptr);
      } else {
        json.attribute("index", headers.index);
      }
      json.attributeArray("files", [&] {
        for (const std::string& file : headers.files) json.value(file);
      });
      json.attribute("tensors", static_cast<int64_t>(estimate.tensor_count));
      json.attribute("data_bytes", static_cast<int64_t>(headers.data_bytes));
    });
    if (options.dtype) {
      json.attribute("dtype", options.dtype->name);
    } else {
      json.attribute("dtype", nullptr);
    }
    json.attributeBegin("stored_size");
    WriteNumber(json, estimate.stored_bytes);
    json.attributeEnd();
    json.attributeBegin("total_size");
    WriteNumber(json, estimate.total_bytes);
    json.attributeEnd();
    json.attributeObject("largest_layer", [&] {
      json.attributeBegin("size");
      WriteNumber(json, estimate.largest_layer.bytes);
      json.attributeEnd();
      json.attributeArray("names", [&] {
        for (const std::string& name : estimate.largest_layer.names) json.value(name);
      });
    });
    json.attributeArray("modules", [&] {
      for (const ModuleRow& row : estimate.modules) {
        json.object([&] {
          json.attribute("name", row.name);
          json.attribute("depth", row.depth);
          json.attribute("kind", row.is_tensor ? "tensor" : "module");
          json.attributeBegin("size");
          WriteNumber(json, row.bytes);
          json.attributeEnd();
          json.attribute("tensors", static_cast<int64_t>(row.tensors));
        });
      }
    });
    if (!estimate.device_map) {
      json.attribute("max_memory", nullptr);
      json.attribute("device_map", nullptr);
    } else {
      json.attributeObject("max_memory", [&] {
        for (const DeviceLimit& limit : *estimate.max_memory) {
          json.attributeBegin(limit.device);
          WriteNumber(json, limit.bytes);
          json.attributeEnd();
        }
      });
      // An object in map order: what `from_pretrained(device_map=...)` takes.
      json.attributeObject("device_map", [&] {
        for (const auto& [name, device] : estimate.device_map->entries) {
          json.attributeBegin(name);
          WriteDevice(json, device);
          json.attributeEnd();
        }
      });
      json.attributeArray("device_usage", [&] {
        for (const DeviceLimit& used : estimate.device_map->used) {
          json.object([&] {
            json.attributeBegin("device");
            WriteDevice(json, used.device);
            json.attributeEnd();
            json.attributeBegin("used");
            WriteNumber(json, used.bytes);
            json.attributeEnd();
          });
        }
      });
      json.attributeArray("minimum_needed", [&] {
        for (const DeviceLimit& needed : estimate.device_map->minimum_needed) {
          json.object([&] {
            json.attributeBegin("device");
            WriteDevice(json, needed.device);
            json.attributeEnd();
            json.attributeBegin("bytes");
            WriteNumber(json, needed.bytes);
            json.attributeEnd();
          });
        }
      });
      json.attributeArray("uncovered", [&] {
        for (const std::string& name : estimate.uncovered) json.value(name);
      });
    }
    json.attributeArray("notes", [&] {
      for (const std::string& note : estimate.notes) json.value(note);
    });
    json.attributeArray("warnings", [&] {
      for (const std::string& warning : estimate.warnings) json.value(warning);
    });
  });
  stream << "\n";
  stream.flush();
  return text;
}

CommandResult RunEstimateMemoryCommand(const std::vector<std::string>& args,
                                       const EstimateEnvironment& environment) {
  CommandResult result;
  CommandLine command_line;
  if (std::string error = ParseArguments(args, command_line); !error.empty()) {
    result.exit_code = kExitUsage;
    result.err = fmt::format(
        "accelrun: error: {}\naccelrun: note: `accelrun estimate-memory --help` lists the options\n", error);
    return result;
  }
  if (command_line.help) {
    result.out = Usage();
    return result;
  }
  const EstimateOptions& options = command_line.options;
  const std::string& format = command_line.format;
  llvm::Expected<Estimate> estimate = EstimateMemory(options, environment);
  if (!estimate) {
    result.exit_code = kExitUsage;
    result.err = fmt::format("accelrun: error: {}\n", llvm::toString(estimate.takeError()));
    return result;
  }
  if (format == "json") {
    result.out = RenderJson(*estimate, options);
  } else {
    result.out = RenderText(*estimate, options);
    for (const std::string& warning : estimate->warnings)
      result.err += fmt::format("accelrun: warning: {}\n", warning);
  }
  return result;
}

}  // namespace accel::rt::memory
