#include "compiler/lower/lower.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

namespace accel::lower {
namespace {

namespace json = llvm::json;
using sema::Value;

// What every refusal of the native target offers instead.
const std::string kExport =
    "; to run it under Accelerate, `accelc export --to accelerate-yaml` writes its config";

json::Value Scalar(const Value& v) {
  switch (v.kind) {
    case Value::Kind::None:
      return nullptr;
    case Value::Kind::Bool:
      return v.bool_value;
    case Value::Kind::Int:
    case Value::Kind::Bytes:
      return v.int_value;
    case Value::Kind::Duration:
      return fmt::format("{}ms", v.int_value);
    case Value::Kind::Float:
      return v.float_value;
    case Value::Kind::String:
      return v.text;
    case Value::Kind::Enum:
      return v.enum_value;
    case Value::Kind::List: {
      json::Array array;
      for (const Value& item : v.items) array.push_back(Scalar(item));
      return array;
    }
    case Value::Kind::Record: {
      json::Object object{{"type", v.type_name}};
      for (size_t i = 0; i < v.keys.size(); ++i) object[v.keys[i]] = Scalar(v.items[i]);
      return object;
    }
    case Value::Kind::Map: {
      json::Object object;
      for (size_t i = 0; i < v.keys.size(); ++i) object[v.keys[i]] = Scalar(v.items[i]);
      return object;
    }
  }
  return nullptr;
}

// The resolved configuration: records become objects (with their `type`), every other value
// becomes {"value": ..., "from": provenance}.
json::Value ConfigTree(const Value& v) {
  if (v.kind == Value::Kind::Record) {
    json::Object object{{"type", v.type_name}};
    for (size_t i = 0; i < v.keys.size(); ++i) object[v.keys[i]] = ConfigTree(v.items[i]);
    return object;
  }
  return json::Object{{"value", Scalar(v)}, {"from", v.provenance.Describe()}};
}

// Typed access to a resolved record; the checker guarantees every field exists with its
// schema type, so a miss here is a compiler bug.
class Fields {
 public:
  explicit Fields(const Value& record) : record_(record) {}
  const Value& operator[](std::string_view name) const {
    const Value* v = record_.Field(name);
    if (v == nullptr) {
      fmt::print(stderr, "internal error: lowering found no field `{}` in `{}`\n", name, record_.type_name);
      std::abort();
    }
    return *v;
  }
  int64_t Int(std::string_view name) const { return (*this)[name].int_value; }
  double Float(std::string_view name) const { return (*this)[name].float_value; }
  bool Bool(std::string_view name) const { return (*this)[name].bool_value; }
  const std::string& Text(std::string_view name) const { return (*this)[name].text; }
  // An optional field's value, or `fallback` when it is unset.
  int64_t IntOr(std::string_view name, int64_t fallback) const {
    return IsSet(name) ? (*this)[name].int_value : fallback;
  }
  double FloatOr(std::string_view name, double fallback) const {
    return IsSet(name) ? (*this)[name].float_value : fallback;
  }
  bool IsSet(std::string_view name) const { return (*this)[name].kind != Value::Kind::None; }
  Fields Record(std::string_view name) const { return Fields((*this)[name]); }
  const Value& value() const { return record_; }

 private:
  const Value& record_;
};

class Lowerer {
 public:
  Lowerer(const sema::Spec& spec, diag::DiagnosticEngine& diagnostics)
      : spec_(spec), diagnostics_(diagnostics) {}

  std::optional<plan::Plan> Run(const std::string& source_name) {
    Fields job(spec_.root);
    plan::Plan plan;
    plan.job = spec_.job_name;
    plan.source = source_name;
    plan.config = ConfigTree(spec_.root);

    Fields compute = job.Record("compute");
    Fields accelerator = job.Record("accelerator");
    const std::string& distributed = compute["distributed_type"].text;
    if (distributed != "NO" && distributed != "MULTI_CPU") {
      Unsupported(
          compute["distributed_type"], fmt::format("`compute.distributed_type = {}`", distributed),
          distributed == "MULTI_GPU"
              ? "; accelrun runs NO and MULTI_CPU jobs (its NCCL process group arrives with #6)" + kExport
              : "; accelrun runs NO and MULTI_CPU jobs" + kExport);
    }
    RejectWhatTheRuntimeIgnores(compute, accelerator);
    // The Accelerator's own argument wins over the launch config, as in Accelerate, where the
    // launcher passes the config's precision through ACCELERATE_MIXED_PRECISION.
    const Value& precision = accelerator["mixed_precision"].kind != Value::Kind::None
                                 ? accelerator["mixed_precision"]
                                 : compute["mixed_precision"];
    if (precision.kind != Value::Kind::None && precision.enum_value == "fp16") {
      Unsupported(precision, "`mixed_precision = fp16` on the CPU",
                  "; fp16 autocast and its gradient scaler need CUDA, and accelrun runs NO and MULTI_CPU "
                  "jobs: use `bf16` on the CPU" +
                      kExport);
    } else if (precision.kind != Value::Kind::None && precision.enum_value == "fp8") {
      Unsupported(precision, "`mixed_precision = fp8`",
                  "; fp8 needs TransformerEngine, MS-AMP or torchao, which exist only in Python" + kExport);
    }

    Fields ipg = accelerator.Record("init_process_group");
    const Value& backend = ipg["backend"];
    plan::InitProcessGroup init;
    init.backend = backend.kind == Value::Kind::None ? (distributed == "MULTI_GPU" ? "nccl" : "gloo")
                                                     : backend.enum_value;
    init.timeout_ms = ipg["timeout"].int_value;
    init.num_machines = compute.Int("num_machines");
    // `num_processes` counts every machine's processes; -1 (unset) is one process (CFG-003).
    int64_t total = std::max<int64_t>(compute.Int("num_processes"), 1);
    init.processes_per_machine = total / init.num_machines;
    const Value& ip = compute["main_process_ip"];
    init.main_process_ip = ip.kind == Value::Kind::None ? "127.0.0.1" : ip.text;
    const Value& port = compute["main_process_port"];
    init.main_process_port = port.kind == Value::Kind::None ? 29500 : port.int_value;
    plan.steps.push_back(init);

    const Value& seed = accelerator["seed"];
    if (seed.kind != Value::Kind::None) plan.steps.push_back(plan::Seed{seed.int_value});

    const Value& seed_value = seed;
    plan.steps.push_back(LowerModel(job.Record("model")));
    Fields train = job.Record("train");
    plan.steps.push_back(LowerData(job.Record("data"), accelerator, train, compute, seed_value));
    plan.steps.push_back(LowerTrain(train, accelerator, precision));
    LowerCheckpoint(train, accelerator, plan);

    Fields output = job.Record("output");
    plan.steps.push_back(plan::SaveModel{output.Text("dir"), output.Text("model_file")});

    if (failed_) return std::nullopt;
    plan.hash = plan::ComputeHash(plan);
    return plan;
  }

 private:
  // `--target native`: a setting the runtime would silently ignore is refused, so a plan never
  // claims more than accelrun does. Each names what to do instead.
  void RejectWhatTheRuntimeIgnores(const Fields& compute, const Fields& accelerator) {
    for (const char* section : {"deepspeed_config", "fsdp_config", "megatron_lm_config", "fp8_config",
                                "parallelism_config", "mpirun_config"}) {
      const Value& value = compute[section];
      if (value.kind != Value::Kind::None) {
        Unsupported(value, fmt::format("`compute.{}`", section), "; accelrun has no such engine" + kExport);
      }
    }
    const Value& dynamo = compute["dynamo_config"];
    if (dynamo.kind != Value::Kind::None && SetInSpec(dynamo)) {
      Unsupported(dynamo, "`compute.dynamo_config`", "; torch.compile exists only in Python" + kExport);
    }
    for (const char* field : {"dynamo_plugin", "torch_tp_plugin", "quantization"}) {
      const Value& value = accelerator[field];
      if (value.kind != Value::Kind::None) {
        Unsupported(value, fmt::format("`accelerator.{}`", field),
                    "; accelrun does not execute it yet" + kExport);
      }
    }
    const Value& backend = accelerator["dynamo_backend"];
    if (backend.kind != Value::Kind::None && backend.text != "NO") {
      Unsupported(backend, fmt::format("`accelerator.dynamo_backend = {}`", backend.text),
                  "; torch.compile exists only in Python" + kExport);
    }
  }

  plan::BuildModel LowerModel(const Fields& model) {
    plan::BuildModel build;
    if (model.value().type_name == "TorchScript") {
      build.kind = "torchscript";
      build.path = SpecRelative(model["path"]);
      return build;
    }
    if (model.value().type_name == "Transformer") {
      build.kind = "transformer";
      build.inputs = model.Int("inputs");
      build.outputs = model.Int("outputs");
      build.d_model = model.Int("d_model");
      build.heads = model.Int("heads");
      build.layers = model.Int("layers");
      build.feedforward = model.Int("feedforward");
      return build;
    }
    build.kind = "mlp";
    build.inputs = model.Int("inputs");
    build.outputs = model.Int("outputs");
    for (const Value& width : model["hidden"].items) build.hidden.push_back(width.int_value);
    return build;
  }

  // The dataset, and DataLoaderConfiguration resolved as Accelerate resolves it when
  // `prepare()` wraps a map-style DataLoader.
  plan::BuildDataloader LowerData(const Fields& data, const Fields& accelerator, const Fields& train,
                                  const Fields& compute, const Value& seed) {
    plan::BuildDataloader build;
    const std::string& type = data.value().type_name;
    build.batch_size = data.Int("batch_size");
    build.shuffle = data.Bool("shuffle");
    bool class_labels = train["loss"].enum_value == "cross_entropy";
    build.targets = class_labels ? "class_labels" : "regression";
    if (type == "SyntheticRegression") {
      build.kind = "synthetic_regression";
      build.samples = data.Int("samples");
      build.features = data.Int("features");
      build.noise = data.Float("noise");
      build.seed = data.Int("seed");
      const Value& model = spec_.root.Field("model") != nullptr ? *spec_.root.Field("model") : Value{};
      const Value* outputs = model.Field("outputs");
      build.outputs = outputs != nullptr ? outputs->int_value : 1;
      if (class_labels) {
        Unsupported(train["loss"], "`train.loss = cross_entropy` on `SyntheticRegression`",
                    "; its targets are real numbers: use `mse`, or a dataset file with integer class labels");
      }
    } else {
      build.drop_last = data.Bool("drop_last");
      if (type == "CsvDataset") {
        build.kind = "csv";
        build.path = SpecRelative(data["path"]);
        for (const Value& column : data["feature_columns"].items)
          build.feature_columns.push_back(column.text);
        for (const Value& column : data["target_columns"].items) build.target_columns.push_back(column.text);
        if (class_labels && build.target_columns.size() != 1) {
          Unsupported(data["target_columns"], "several `target_columns` with `train.loss = cross_entropy`",
                      "; cross entropy reads one column of class indices");
        }
      } else if (type == "NpyDataset") {
        build.kind = "npy";
        build.path = SpecRelative(data["features_file"]);
        build.targets_path = SpecRelative(data["targets_file"]);
      } else {
        build.kind = "safetensors";
        build.path = SpecRelative(data["path"]);
        build.features_key = data.Text("features_key");
        build.targets_key = data.Text("targets_key");
      }
    }
    Fields config = accelerator.Record("dataloader_config");
    build.split_batches = config.Bool("split_batches");
    // Unset: true exactly for iterable datasets; every Accel dataset is map-style.
    const Value& dispatch = config["dispatch_batches"];
    build.dispatch_batches = dispatch.kind != Value::Kind::None && dispatch.bool_value;
    build.even_batches = config.Bool("even_batches");
    build.use_seedable_sampler = config.Bool("use_seedable_sampler");
    // SeedableRandomSampler without data_seed uses torch.initial_seed(): the job seed after
    // set_seed, else torch's fixed default seed of the CPU generator. data_seed means nothing
    // without the seedable sampler (DL-006): the synchronized RandomSampler follows the job seed.
    constexpr int64_t kTorchDefaultSeed = 67280421310721;
    const Value& data_seed = config["data_seed"];
    build.data_seed = data_seed.kind != Value::Kind::None && build.use_seedable_sampler ? data_seed.int_value
                      : seed.kind != Value::Kind::None                                  ? seed.int_value
                                                                                        : kTorchDefaultSeed;
    build.non_blocking = config.Bool("non_blocking");
    build.use_stateful_dataloader = config.Bool("use_stateful_dataloader");
    int64_t processes = std::max<int64_t>(compute.Int("num_processes"), 1);
    if (!build.even_batches && !build.drop_last && processes > 1 && !build.dispatch_batches) {
      // Ranks would then run different numbers of steps per epoch; Accelerate needs
      // join_uneven_inputs for that, which a plan cannot express.
      Unsupported(
          config["even_batches"], "`accelerator.dataloader_config.even_batches = false` on several processes",
          "; ranks would draw different numbers of batches and their collectives would no longer pair "
          "up: keep `even_batches = true` (or set `drop_last`)" +
              kExport);
    }
    if (build.split_batches && build.batch_size % processes != 0) {
      // DL-001 checks sizes > 1 at compile time; the batch-sampler shard refuses any size.
      Unsupported(
          data["batch_size"],
          fmt::format("`batch_size = {}` with `split_batches` on {} processes", build.batch_size, processes),
          "; Accelerate's batch sampler shard needs a multiple of `num_processes`");
    }
    return build;
  }

  plan::TrainLoop LowerTrain(const Fields& train, const Fields& accelerator, const Value& precision) {
    plan::TrainLoop loop;
    loop.steps = train.Int("steps");
    loop.log_every = train.Int("log_every");
    loop.loss = train["loss"].enum_value;
    loop.mixed_precision = precision.kind == Value::Kind::None ? "no" : precision.enum_value;
    Fields optimizer = train.Record("optimizer");
    loop.optimizer.lr = optimizer.Float("lr");
    loop.optimizer.weight_decay = optimizer.Float("weight_decay");
    if (optimizer.value().type_name == "SGD") {
      loop.optimizer.name = "sgd";
      loop.optimizer.momentum = optimizer.Float("momentum");
    } else {
      loop.optimizer.name = optimizer.value().type_name == "Adam" ? "adam" : "adamw";
      loop.optimizer.beta1 = optimizer.Float("beta1");
      loop.optimizer.beta2 = optimizer.Float("beta2");
      loop.optimizer.eps = optimizer.Float("eps");
    }
    loop.lr_schedule = train["lr_schedule"].enum_value;
    loop.warmup_steps = train.Int("warmup_steps");
    loop.num_cycles = train.Float("num_cycles");
    loop.step_scheduler_with_optimizer = accelerator.Bool("step_scheduler_with_optimizer");
    loop.max_grad_norm = train.FloatOr("max_grad_norm", 0.0);
    loop.eval_samples = train.Int("eval_samples");
    loop.find_executable_batch_size = train.Bool("find_executable_batch_size");
    loop.eval_every = train.IntOr("eval_every", 0);

    const Value& plugin = accelerator["gradient_accumulation_plugin"];
    if (plugin.kind == Value::Kind::Record) {
      Fields ga(plugin);
      loop.accumulation_steps = ga.Int("num_steps");
      loop.sync_with_dataloader = ga.Bool("sync_with_dataloader");
      loop.sync_each_batch = ga.Bool("sync_each_batch");
    } else {
      loop.accumulation_steps = accelerator.Int("gradient_accumulation_steps");
    }
    // GA-003: Accelerate reads the plugin's to_kwargs(), which drops the default True, and
    // falls back to False: adjust_scheduler is in effect always off.
    loop.adjust_scheduler = false;

    Fields autocast = accelerator.Record("autocast");
    loop.autocast_enabled = autocast.Bool("enabled");
    const Value& cache = autocast["cache_enabled"];
    loop.autocast_cache_enabled = cache.kind == Value::Kind::None || cache.bool_value;

    Fields ddp = accelerator.Record("ddp");
    loop.bucket_cap_mb = ddp.Int("bucket_cap_mb");
    const std::string& hook = ddp["comm_hook"].enum_value;
    loop.comm_hook = hook == "no" ? "none" : hook;
    if (hook == "power_sgd" || hook == "batched_power_sgd") {
      Unsupported(ddp["comm_hook"], fmt::format("`accelerator.ddp.comm_hook = {}`", hook),
                  "; accelrun compresses gradients with `fp16` or `bf16`" + kExport);
    }
    // A wrapper around no hook is dropped, as in Accelerate; around fp16/bf16 it would cast
    // twice, which only PowerSGD (not run here) makes meaningful.
    if (hook != "no" && ddp["comm_wrapper"].enum_value != "no") {
      Unsupported(ddp["comm_wrapper"], "`accelerator.ddp.comm_wrapper` around an fp16/bf16 hook",
                  "; it wraps PowerSGD hooks, which accelrun does not run: drop the wrapper" + kExport);
    }
    if (ddp.Int("dim") != 0) {
      Unsupported(ddp["dim"], "`accelerator.ddp.dim`",
                  "; accelrun's batches are split along dimension 0 only" + kExport);
    }
    for (const char* field : {"gradient_as_bucket_view", "static_graph"}) {
      if (ddp.Bool(field)) {
        Unsupported(ddp[field], fmt::format("`accelerator.ddp.{} = true`", field),
                    "; accelrun's reducer copies gradients into its own buckets and has no graph "
                    "optimizations to enable" +
                        kExport);
      }
    }
    loop.find_unused_parameters = ddp.Bool("find_unused_parameters");
    loop.broadcast_buffers = ddp.Bool("broadcast_buffers");

    for (const Value& tracker : accelerator["log_with"].items) {
      // `all` starts every tracker that is installed: the one accelrun has.
      if (tracker.enum_value == "tensorboard" || tracker.enum_value == "all") {
        if (loop.trackers.empty()) loop.trackers.push_back("tensorboard");
      } else {
        Unsupported(
            tracker, fmt::format("`accelerator.log_with = {}`", tracker.enum_value),
            "; accelrun writes `metrics.jsonl` and TensorBoard event files (`tensorboard`)" + kExport);
      }
    }
    loop.logging_dir = ResolveProjectDirs(accelerator).logging_dir;
    return loop;
  }

  struct ProjectDirs {
    std::string project_dir;  // empty: the run's output directory
    std::string logging_dir;
  };

  // ProjectConfiguration's directories as Accelerate resolves them: the Accelerator's
  // `project_dir` applies when the configuration has none, and no `logging_dir` means the
  // project directory (PRJ-001).
  static ProjectDirs ResolveProjectDirs(const Fields& accelerator) {
    Fields project = accelerator.Record("project_config");
    ProjectDirs dirs;
    dirs.project_dir = project.IsSet("project_dir")       ? project.Text("project_dir")
                       : accelerator.IsSet("project_dir") ? accelerator.Text("project_dir")
                                                          : "";
    dirs.logging_dir = project.IsSet("logging_dir") ? project.Text("logging_dir") : dirs.project_dir;
    return dirs;
  }

  // A path in the spec, relative to the directory of the file that wrote it (so a spec and its
  // data move together); absolute paths stay as they are.
  static std::string SpecRelative(const Value& value) {
    std::filesystem::path path(value.text);
    if (path.is_absolute() || value.provenance.file == nullptr ||
        value.provenance.kind != sema::Provenance::Kind::Spec) {
      return value.text;
    }
    std::filesystem::path base = std::filesystem::path(value.provenance.file->name()).parent_path();
    return (base / path).lexically_normal().string();
  }

  // `train.checkpoint_every` turns checkpointing on; `accelerator.project_config` (Accelerate's
  // ProjectConfiguration) says where and how many. A project_config that nothing would read is
  // refused like any other setting the runtime would ignore.
  void LowerCheckpoint(const Fields& train, const Fields& accelerator, plan::Plan& plan) {
    bool every_epoch = train.Bool("checkpoint_every_epoch");
    const Value& project_value = accelerator["project_config"];
    if (!train.IsSet("checkpoint_every") && !every_epoch) {
      // The trackers read the directories; everything else only checkpointing reads.
      bool trackers = !accelerator["log_with"].items.empty();
      for (size_t i = 0; i < project_value.keys.size(); ++i) {
        const std::string& key = project_value.keys[i];
        if (trackers && (key == "logging_dir" || key == "project_dir")) continue;
        if (!SetInSpec(project_value.items[i])) continue;
        Unsupported(FirstSetInSpec(project_value.items[i]),
                    fmt::format("`accelerator.project_config.{}`", key),
                    "; nothing saves checkpoints unless `train.checkpoint_every` or "
                    "`train.checkpoint_every_epoch` is set" +
                        kExport);
        break;
      }
      return;
    }
    Fields project(project_value);
    plan::Checkpoint checkpoint;
    checkpoint.every_steps = train.IntOr("checkpoint_every", 0);
    checkpoint.every_epoch = every_epoch;
    ProjectDirs dirs = ResolveProjectDirs(accelerator);
    checkpoint.project_dir = dirs.project_dir;
    checkpoint.automatic_naming = project.Bool("automatic_checkpoint_naming");
    checkpoint.total_limit = project.IntOr("total_limit", 0);
    checkpoint.iteration = project.Int("iteration");
    checkpoint.save_on_each_node = project.Bool("save_on_each_node");
    checkpoint.logging_dir = dirs.logging_dir;
    plan.steps.push_back(checkpoint);
  }

  // True when the spec (not a default or the environment) set something in `value`.
  static bool SetInSpec(const Value& value) {
    return FirstSetInSpec(value).provenance.kind == sema::Provenance::Kind::Spec;
  }

  static const Value& FirstSetInSpec(const Value& value) {
    if (value.kind != Value::Kind::Record) return value;
    for (const Value& item : value.items) {
      const Value& found = FirstSetInSpec(item);
      if (found.provenance.kind == sema::Provenance::Kind::Spec) return found;
    }
    return value;
  }

  void Unsupported(const Value& value, const std::string& what, const std::string& hint) {
    failed_ = true;
    // A value from a base job or a `--set` override is reported where it was written.
    bool located = value.provenance.kind == sema::Provenance::Kind::Spec && value.provenance.file != nullptr;
    diag::Diagnostic& d =
        diagnostics_.Emit(diag::Kind::NotLowerable, located ? value.provenance.file : spec_.file,
                          located ? value.provenance.span : spec_.span, what, hint);
    if (value.provenance.kind == sema::Provenance::Kind::Environment) {
      d.message += fmt::format(" (value from environment variable `{}`)", value.provenance.env_var);
    }
  }

  const sema::Spec& spec_;
  diag::DiagnosticEngine& diagnostics_;
  bool failed_ = false;
};

}  // namespace

std::optional<plan::Plan> Lower(const sema::Spec& spec, const std::string& source_name,
                                diag::DiagnosticEngine& diagnostics) {
  return Lowerer(spec, diagnostics).Run(source_name);
}

}  // namespace accel::lower
