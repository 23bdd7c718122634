#include "compiler/lower/lower.h"

#include <algorithm>

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
    if (precision.kind != Value::Kind::None && precision.enum_value != "no") {
      Unsupported(precision, fmt::format("`accelerator.mixed_precision = {}`", precision.enum_value),
                  "; the runtime trains in fp32 until mixed precision lands (#8)" + kExport);
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

    Fields model = job.Record("model");
    plan::BuildModel build_model{"mlp", model.Int("inputs"), {}, model.Int("outputs")};
    for (const Value& width : model["hidden"].items) build_model.hidden.push_back(width.int_value);
    plan.steps.push_back(build_model);

    Fields data = job.Record("data");
    plan.steps.push_back(plan::BuildDataloader{
        "synthetic_regression", data.Int("samples"), data.Int("features"), model.Int("outputs"),
        data.Float("noise"), data.Int("seed"), data.Int("batch_size"), data.Bool("shuffle")});

    Fields train = job.Record("train");
    plan::TrainLoop loop;
    loop.steps = train.Int("steps");
    loop.log_every = train.Int("log_every");
    loop.mixed_precision = precision.kind == Value::Kind::None ? "no" : precision.enum_value;
    loop.bucket_cap_mb = accelerator.Record("ddp").Int("bucket_cap_mb");
    Fields optimizer = train.Record("optimizer");
    loop.optimizer.lr = optimizer.Float("lr");
    loop.optimizer.weight_decay = optimizer.Float("weight_decay");
    if (optimizer.value().type_name == "SGD") {
      loop.optimizer.name = "sgd";
      loop.optimizer.momentum = optimizer.Float("momentum");
    } else {
      loop.optimizer.name = "adamw";
      loop.optimizer.beta1 = optimizer.Float("beta1");
      loop.optimizer.beta2 = optimizer.Float("beta2");
      loop.optimizer.eps = optimizer.Float("eps");
    }
    plan.steps.push_back(loop);
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
    for (const char* field :
         {"gradient_accumulation_plugin", "dynamo_plugin", "torch_tp_plugin", "quantization"}) {
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
    if (accelerator.Int("gradient_accumulation_steps") != 1) {
      Unsupported(accelerator["gradient_accumulation_steps"],
                  fmt::format("`accelerator.gradient_accumulation_steps = {}`",
                              accelerator.Int("gradient_accumulation_steps")),
                  "; gradient accumulation arrives with the training executor (#8)" + kExport);
    }
    if (!accelerator["log_with"].items.empty()) {
      Unsupported(accelerator["log_with"], "`accelerator.log_with`",
                  "; accelrun writes metrics.json; trackers arrive with #8" + kExport);
    }
    if (SetInSpec(accelerator["dataloader_config"])) {
      Unsupported(FirstSetInSpec(accelerator["dataloader_config"]), "`accelerator.dataloader_config`",
                  "; the built-in data loader does not read it yet (#8)" + kExport);
    }
    const Value& hook = accelerator.Record("ddp")["comm_hook"];
    if (hook.enum_value != "no") {
      Unsupported(hook, fmt::format("`accelerator.ddp.comm_hook = {}`", hook.enum_value),
                  "; gradient compression arrives with #8" + kExport);
    }
  }

  // `train.checkpoint_every` turns checkpointing on; `accelerator.project_config` (Accelerate's
  // ProjectConfiguration) says where and how many. A project_config that nothing would read is
  // refused like any other setting the runtime would ignore.
  void LowerCheckpoint(const Fields& train, const Fields& accelerator, plan::Plan& plan) {
    const Value& every = train["checkpoint_every"];
    const Value& project_value = accelerator["project_config"];
    if (every.kind == Value::Kind::None) {
      if (SetInSpec(project_value)) {
        Unsupported(FirstSetInSpec(project_value), "`accelerator.project_config`",
                    "; nothing saves checkpoints unless `train.checkpoint_every` is set" + kExport);
      }
      return;
    }
    Fields project(project_value);
    plan::Checkpoint checkpoint;
    checkpoint.every_steps = every.int_value;
    // As in Accelerate, the Accelerator's `project_dir` applies when the configuration has none.
    const Value& dir = project["project_dir"];
    const Value& fallback_dir = accelerator["project_dir"];
    checkpoint.project_dir = dir.kind != Value::Kind::None            ? dir.text
                             : fallback_dir.kind != Value::Kind::None ? fallback_dir.text
                                                                      : "";
    checkpoint.automatic_naming = project.Bool("automatic_checkpoint_naming");
    const Value& limit = project["total_limit"];
    checkpoint.total_limit = limit.kind == Value::Kind::None ? 0 : limit.int_value;
    checkpoint.iteration = project.Int("iteration");
    checkpoint.save_on_each_node = project.Bool("save_on_each_node");
    // PRJ-001: no logging_dir means the project directory.
    const Value& logging = project["logging_dir"];
    checkpoint.logging_dir = logging.kind != Value::Kind::None ? logging.text : checkpoint.project_dir;
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
