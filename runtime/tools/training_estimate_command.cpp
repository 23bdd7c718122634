#include "runtime/tools/training_estimate_command.h"

#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "compiler/cli/arguments.h"
#include "compiler/diagnostics/render.h"
#include "compiler/pipeline/compile.h"
#include "compiler/interop/interop.h"
#include "llvm/Support/JSON.h"
#include "runtime/checkpoint/optimizer_format.h"
#include "runtime/memory/checkpoint_headers.h"
#include "runtime/memory/training_estimate.h"
#include "runtime/tools/plan_input.h"

namespace accel::tools {
namespace {

namespace fs = std::filesystem;
namespace checkpoint = rt::checkpoint;
namespace memory = rt::memory;

constexpr int kExitUsage = 2;
constexpr size_t kHelpColumn = 26;

// The workload a config file has no place for (the model is the checkpoint's), with the
// micro-batch a DeepSpeed JSON sets, which lowering holds the loader's batch to.
std::string StandInWorkload(const sema::Value* micro_batch) {
  const bool fixed = micro_batch != nullptr && micro_batch->kind == sema::Value::Kind::Int;
  return fmt::format("  model = MLP {{ inputs = 1 }}\n  data = SyntheticRegression {{ features = 1{} }}\n"
                     "  train {{ steps = 1 }}\n",
                     fixed ? fmt::format("; batch_size = {}", micro_batch->int_value) : std::string());
}

void PrintDiagnostics(const pipeline::Compilation& compilation) {
  fmt::print(stderr, "{}", diag::RenderText(compilation.diagnostics.diagnostics(), {false}));
}

// Whether a DeepSpeed JSON's root names an optimizer (which lowering then takes).
bool NamesOptimizer(const sema::Value* deepspeed) {
  const sema::Value* optimizer = deepspeed != nullptr ? deepspeed->Field("optimizer") : nullptr;
  return optimizer != nullptr && optimizer->kind != sema::Value::Kind::None;
}

// The plan `input` describes: a spec or plan, or the job an Accelerate config or a DeepSpeed
// JSON (with `processes`) would launch. `from_config` is set for the two configs, whose model
// is a stand-in, and `config_optimizer` when the config's DeepSpeed JSON names its optimizer.
// Prints why when there is none.
std::optional<plan::Plan> PlanOf(const std::string& input, int64_t processes, bool& from_config,
                                 bool& config_optimizer) {
  diag::DiagnosticEngine stdlib_diagnostics;
  auto stdlib = pipeline::Stdlib::Load(stdlib_diagnostics);
  sema::ProcessEnvironment environment;
  pipeline::CompileOptions options;
  // A compiled plan, or a DeepSpeed JSON: the plan says its format.
  if (fs::path(input).extension() == ".json") {
    std::optional<std::string> text = ReadWholeFile(input);
    if (text && text->find("\"accel-plan/") != std::string::npos) return LoadPlan(input);
  }
  pipeline::Compilation compilation = pipeline::CompileFile(input, *stdlib, environment, options);
  if (compilation.plan) return std::move(compilation.plan);
  std::string spec;
  if (compilation.spec && compilation.root_record == "ClusterConfig") {
    llvm::Expected<std::string> imported = interop::ImportToAccel(compilation.spec->root, stdlib->schema(), "estimate",
                                                                  {}, pipeline::ReferencedDeepSpeed(compilation));
    if (!imported) {
      fmt::print(stderr, "accelrun: error: {}: {}\n", input, llvm::toString(imported.takeError()));
      return std::nullopt;
    }
    spec = *imported;
    config_optimizer = NamesOptimizer(pipeline::ReferencedDeepSpeed(compilation));
  } else if (compilation.spec && compilation.root_record == "DeepSpeedConfig") {
    config_optimizer = NamesOptimizer(&compilation.spec->root);
    llvm::Expected<std::string> path = interop::AccelStringLiteral(fs::absolute(input).string());
    if (!path) {
      fmt::print(stderr, "accelrun: error: {}: {}\n", input, llvm::toString(path.takeError()));
      return std::nullopt;
    }
    spec = fmt::format(
        "job estimate {{\n  compute {{\n    distributed_type = DEEPSPEED\n    num_processes = {}\n"
        "    deepspeed_config {{ hf_ds_config = {} }}\n  }}\n{}}}\n",
        processes, *path, StandInWorkload(compilation.spec->root.Field("train_micro_batch_size_per_gpu")));
  } else {
    PrintDiagnostics(compilation);
    if (!compilation.diagnostics.has_errors())
      fmt::print(stderr, "accelrun: error: `{}` describes no job\n", input);
    return std::nullopt;
  }
  from_config = true;
  // Compiled where the config lies, so that the paths it names resolve as they do for it.
  pipeline::Compilation job = pipeline::CompileText((fs::path(input).parent_path() / "estimate.accel").string(), spec,
                                                *stdlib, environment, options);
  if (!job.plan) {
    PrintDiagnostics(compilation);
    PrintDiagnostics(job);
    return std::nullopt;
  }
  return std::move(job.plan);
}

}  // namespace

int RunTrainingEstimateCommand(const std::vector<std::string>& args) {
  std::string training, format = "text", checkpoint, optimizer;
  std::optional<long> processes;
  bool help = false;
  std::vector<cli::Option> table = {
      {.names = {"--training"}, .value_name = "<file>",
       .help = "a spec or plan, an Accelerate config, or a DeepSpeed JSON", .apply = cli::StoreText(training),
       .needs = "a file", .allow_empty = false},
      {.names = {"--num-processes"}, .value_name = "<n>", .help = "the processes of a DeepSpeed JSON's job",
       .apply = cli::StoreInteger(processes, 1, plan::kMaxMachines * plan::kMaxProcessesPerMachine),
       .needs = "a number"},
      {.names = {"--optimizer"}, .value_name = "<name>",
       .help = fmt::format("{}, or sgd-momentum: the job's optimizer\n(a config names none: adamw)",
                           checkpoint::OptimizerNames()),
       .apply = cli::StoreText(optimizer), .needs = "an optimizer"},
      {.names = {"--format"}, .value_name = "text|json", .help = "the report's format",
       .apply = cli::StoreText(format), .needs = "text or json"},
      {.names = {"-h", "--help"}, .help = "print this help", .apply = cli::SetFlag(help), .exits = true},
  };
  const std::string usage =
      R"(usage: accelrun estimate-memory --training <spec | plan.json | config.yaml | ds_config.json> [<checkpoint>]

What each rank of a training job holds: parameters, gradients and optimizer state by ZeRO
stage, world size, optimizer and offload; the units stage 3 gathers; the activations of one
micro-batch for the built-in models. The model is the spec's built-in one, or the checkpoint's
tensors (a TorchScript model, or any config: a config file names no model).

options:
)" + cli::FormatOptions(table, kHelpColumn);
  std::string error = cli::Parse(args, table, [&](const std::string& arg) -> std::string {
    if (!checkpoint.empty()) return fmt::format("one checkpoint, not both `{}` and `{}`", checkpoint, arg);
    checkpoint = arg;
    return "";
  });
  if (help) {
    fmt::print("{}", usage);
    return 0;
  }
  if (error.empty() && format != "text" && format != "json") error = "`--format` takes text or json";
  // The optimizer by the name checkpoints give it, with its defaults; `sgd-momentum` is SGD
  // with the momentum that keeps a buffer.
  std::optional<plan::Optimizer> named_optimizer =
      optimizer == "sgd-momentum" ? plan::Optimizer(plan::SGD{.momentum = 0.9}) : checkpoint::OptimizerNamed(optimizer);
  if (error.empty() && !optimizer.empty() && !named_optimizer)
    error = fmt::format("`--optimizer` takes {} or sgd-momentum, not `{}`", checkpoint::OptimizerNames(), optimizer);
  if (error.empty() && training.empty()) error = "missing `--training <file>`, the job to estimate";
  if (!error.empty()) {
    fmt::print(stderr, "accelrun: error: {}\n\n{}", error, usage);
    return kExitUsage;
  }
  bool from_config = false, config_optimizer = false;
  std::optional<plan::Plan> plan = PlanOf(training, processes.value_or(1), from_config, config_optimizer);
  if (!plan) return kExitUsage;
  std::optional<memory::ModelBlocks> blocks;
  if (!checkpoint.empty()) {
    llvm::Expected<memory::CheckpointHeaders> headers = memory::ReadCheckpointHeaders(checkpoint);
    if (!headers) {
      fmt::print(stderr, "accelrun: error: {}\n", llvm::toString(headers.takeError()));
      return kExitUsage;
    }
    blocks = memory::BlocksOfTensors(headers->tensors);
  } else if (from_config) {
    fmt::print(stderr, "accelrun: error: `{}` is a config file, which names no model: give the model's checkpoint "
                       "too (`accelrun estimate-memory <checkpoint> --training {}`)\n",
               training, training);
    return kExitUsage;
  }
  llvm::Expected<memory::TrainingSetup> setup = memory::SetupOfPlan(*plan, blocks);
  if (!setup) {
    fmt::print(stderr, "accelrun: error: {}\n", llvm::toString(setup.takeError()));
    return kExitUsage;
  }
  // An Accelerate config names no optimizer (its DeepSpeed JSON may, and lowering took it);
  // AdamW is the common one.
  if (named_optimizer) setup->SetOptimizer(*named_optimizer);
  else if (from_config && !config_optimizer) setup->SetOptimizer(plan::AdamW{});
  memory::RankMemory rank = memory::EstimateTrainingMemory(*setup);
  if (format == "json") {
    llvm::json::Object out{{"job", plan->job},
                           {"parameters", setup->model.total()},
                           {"units", static_cast<int64_t>(setup->model.elements.size())},
                           {"ranks_sharding", setup->world_size},
                           {"stage", setup->stage},
                           {"micro_batch", setup->micro_batch},
                           {"per_rank",
                            llvm::json::Object{{"parameters", rank.parameters},
                                               {"gradients", rank.gradients},
                                               {"optimizer", rank.optimizer},
                                               {"gathered", rank.gathered},
                                               {"activations", rank.activations_known
                                                                   ? llvm::json::Value(rank.activations)
                                                                   : llvm::json::Value(nullptr)},
                                               {"host_parameters", rank.host_parameters},
                                               {"host_optimizer", rank.host_optimizer},
                                               {"model_states", rank.model_states()},
                                               {"device_peak", rank.device_peak()}}}};
    fmt::print("{}\n", llvm::formatv("{0:2}", llvm::json::Value(std::move(out))).str());
  } else {
    fmt::print("{}", memory::RenderTrainingEstimate(*setup, rank, plan->job));
  }
  return 0;
}

}  // namespace accel::tools
