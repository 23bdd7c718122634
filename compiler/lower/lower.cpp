#include "compiler/lower/lower.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <tuple>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/lower/engines.h"
#include "compiler/lower/native_support.h"
#include "compiler/plan/builtin_modules.h"
#include "compiler/plan/runtime_limits.h"

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
  Lowerer(const sema::Spec& spec, const sema::Value* deepspeed_json, diag::DiagnosticEngine& diagnostics)
      : spec_(spec), deepspeed_json_(deepspeed_json), diagnostics_(diagnostics) {}

  std::optional<plan::Plan> Run(const std::string& source_name) {
    Fields job(spec_.root);
    plan::Plan plan;
    plan.job = spec_.job_name;
    plan.source = source_name;
    plan.config = ConfigTree(spec_.root);

    Fields compute = job.Record("compute");
    Fields accelerator = job.Record("accelerator");
    const std::string& distributed = compute["distributed_type"].text;
    distributed_ = distributed;
    RefuseWhatTheRuntimeCannotRun(spec_.root, "");
    Target target = ChooseTarget(compute, accelerator);
    // The Accelerator's own argument wins over the launch config, as in Accelerate, where the
    // launcher passes the config's precision through ACCELERATE_MIXED_PRECISION.
    const Value& precision = accelerator["mixed_precision"].kind != Value::Kind::None
                                 ? accelerator["mixed_precision"]
                                 : compute["mixed_precision"];
    plan::MixedPrecision mixed_precision = plan::MixedPrecision::no;
    if (precision.kind != Value::Kind::None && precision.enum_value == "fp16") {
      // A GPU job keeps fp16, also when rehearsed on the CPU (the launcher runs it as bf16 and
      // says so): the plan stays the GPU job's.
      if (target.gpu_job) {
        mixed_precision = plan::MixedPrecision::fp16;
      } else {
        Unsupported(
            diag::Kind::NativeFp16OnCpu, precision, "`mixed_precision = fp16` on the CPU",
            "; fp16 autocast and its gradient scaler need CUDA, and a NO or MULTI_CPU job runs on the "
            "CPU: use `bf16` on the CPU" +
                kExport);
      }
    } else if (precision.kind != Value::Kind::None && precision.enum_value == "fp8") {
      Unsupported(diag::Kind::NativeFp8, precision, "`mixed_precision = fp8`",
                  "; fp8 needs TransformerEngine, MS-AMP or torchao, which exist only in Python" + kExport);
    } else if (precision.kind != Value::Kind::None && precision.enum_value == "bf16") {
      mixed_precision = plan::MixedPrecision::bf16;
    }

    Fields ipg = accelerator.Record("init_process_group");
    const Value& backend = ipg["backend"];
    plan::InitProcessGroup init;
    init.device = target.device;
    init.rehearsal = target.rehearsal;
    // Unset: Accelerate picks the device's own backend (NCCL for GPUs, XCCL for XPUs, ...) and
    // Gloo for the CPU; a rehearsal is on the CPU.
    init.backend = target.backend;
    if (backend.kind != Value::Kind::None && !target.rehearsal) {
      // Gloo everywhere, or the device's own backend: what a process group on that device forms.
      std::optional<plan::Backend> native = FindPlanEnum<plan::Backend>(backend);
      if (native && (*native == plan::Backend::gloo || *native == target.backend)) {
        init.backend = *native;
      } else {
        Unsupported(
            diag::Kind::NativeBackend, backend,
            fmt::format("`accelerator.init_process_group.backend = {}`", backend.enum_value),
            (target.backend == plan::Backend::gloo
                 ? std::string("; accelrun forms its process groups over Gloo: use `GLOO`")
                 : fmt::format("; accelrun forms its process groups over Gloo, or over {} for a job on "
                               "device {}: use `GLOO`",
                               plan::EnumName(target.backend), plan::EnumName(target.device))) +
                kExport);
      }
    }
    init.timeout = ipg["timeout"].int_value;
    init.num_machines = compute.Int("num_machines");
    // `num_processes` counts every machine's processes; -1 (unset) is one process (CFG-003).
    int64_t total = std::max<int64_t>(compute.Int("num_processes"), 1);
    init.processes_per_machine = total / init.num_machines;
    const Value& ip = compute["main_process_ip"];
    init.main_process_ip = ip.kind == Value::Kind::None ? "127.0.0.1" : ip.text;
    const Value& port = compute["main_process_port"];
    init.main_process_port = port.kind == Value::Kind::None ? 29500 : port.int_value;
    // `accelerate launch` starts mpirun when its simple launcher runs the job (a CPU job, or
    // `use_cpu`); the GPU launchers ignore the section, and so does the plan.
    const Value& mpirun = compute["mpirun_config"];
    const Value* hostfile = mpirun.kind == Value::Kind::Record ? mpirun.Field("mpirun_hostfile") : nullptr;
    if (hostfile != nullptr && hostfile->kind != Value::Kind::None && !hostfile->text.empty() &&
        target.device == plan::Device::cpu)
      init.mpirun_hostfile = SpecRelative(*hostfile);
    plan.steps.push_back(init);

    const Value& seed = accelerator["seed"];
    if (seed.kind != Value::Kind::None) plan.steps.push_back(plan::Seed{seed.int_value});

    const Value& seed_value = seed;
    plan.steps.push_back(plan::BuildModel{FromSpecUnion<plan::Model>(job["model"], "model")});
    Fields train = job.Record("train");
    plan::BuildDataloader data = LowerData(job.Record("data"), accelerator, train, compute, seed_value);
    plan::TrainLoop loop = LowerTrain(train, accelerator, mixed_precision);
    FitModelToData(job, data.dataset, loop);
    LowerEngine(compute, data, init, loop);
    CheckWrapClasses(compute, plan.Find<plan::BuildModel>()->model, loop);
    plan.steps.push_back(std::move(data));
    plan.steps.push_back(std::move(loop));
    LowerCheckpoint(train, accelerator, plan);

    Fields output = job.Record("output");
    plan.steps.push_back(
        plan::SaveModel{output.Text("dir"), output.Text("model_file"), output.Int("max_shard_size")});

    for (const plan::RuntimeLimit& limit : plan::RuntimeLimitsBroken(plan))
      Unsupported(limit.kind, SpecValueOf(limit.setting), limit.what, limit.fix + kExport);
    if (failed_) return std::nullopt;
    plan.hash = plan::ComputeHash(plan);
    return plan;
  }

 private:
  // Where the job's workers compute. NO and MULTI_CPU jobs run on the CPU; MULTI_GPU, FSDP and
  // DEEPSPEED are GPU jobs on CUDA devices over NCCL; the other accelerators' data-parallel types
  // (MULTI_XPU, MULTI_NPU, ...) are jobs on their devices over the backend Accelerate picks for
  // them, which accelrun runs only as rehearsals (`accelrun --device cpu`). Any of them is a
  // rehearsal on the CPU over Gloo, with the same world size, when `compute.use_cpu` (or the
  // Accelerator's `cpu`) asks for the CPU. XLA and Megatron-LM do not run at all.
  struct Target {
    plan::Device device = plan::Device::cpu;
    plan::Backend backend = plan::Backend::gloo;  // the device's own, as Accelerate's _prepare_backend
    bool rehearsal = false;
    bool gpu_job = false;  // configured for an accelerator (fp16 allowed), whether or not it runs there
  };

  // The device and backend of an accelerator's data-parallel type, as Accelerate's
  // PartialState picks them once it has found the device; unset for other types.
  static std::optional<std::pair<plan::Device, plan::Backend>> AcceleratorOf(const std::string& name) {
    using plan::Backend;
    using plan::Device;
    if (name == "MULTI_GPU" || name == "FSDP" || name == "DEEPSPEED") return {{Device::cuda, Backend::nccl}};
    if (name == "MULTI_XPU") return {{Device::xpu, Backend::xccl}};
    if (name == "MULTI_NPU") return {{Device::npu, Backend::hccl}};
    if (name == "MULTI_MLU") return {{Device::mlu, Backend::cncl}};
    if (name == "MULTI_SDAA") return {{Device::sdaa, Backend::tccl}};
    if (name == "MULTI_MUSA") return {{Device::musa, Backend::mccl}};
    if (name == "MULTI_HPU") return {{Device::hpu, Backend::hccl}};
    if (name == "MULTI_NEURON") return {{Device::neuron, Backend::neuron}};
    return std::nullopt;
  }

  Target ChooseTarget(const Fields& compute, const Fields& accelerator) {
    const Value& type = compute["distributed_type"];
    const std::string& name = type.text;
    bool use_cpu = compute.Bool("use_cpu") || accelerator.Bool("cpu");
    Target target;
    if (name == "NO" || name == "MULTI_CPU") return target;
    if (name == "MEGATRON_LM") {
      Unsupported(
          diag::Kind::NativeMegatron, type, "`compute.distributed_type = MEGATRON_LM`",
          "; accelrun has no tensor or pipeline parallelism: FSDP or DEEPSPEED shard a model too large "
          "for one device" +
              kExport);
      return target;
    }
    // Any accelerator may train in fp16; only the device is what accelrun lacks.
    target.gpu_job = true;
    std::optional<std::pair<plan::Device, plan::Backend>> device = AcceleratorOf(name);
    if (!device && !use_cpu) {
      // XLA: torch_xla compiles the step into graphs for TPU cores, with no process group of
      // its workers for a rehearsal to stand in for.
      Unsupported(
          diag::Kind::NativeAccelerator, type, fmt::format("`compute.distributed_type = {}`", name),
          "; accelrun has no XLA device, and its workers form no process group: rehearse it on the CPU "
          "with `compute.use_cpu = true`, or use MULTI_GPU" +
              kExport);
      return target;
    }
    target.rehearsal = use_cpu;
    if (!use_cpu) std::tie(target.device, target.backend) = *device;
    return target;
  }

  // Accelerate raises when the model has no module of a class the wrap policy names (its FSDP
  // plugin's `set_auto_wrap_policy`); a built-in model's classes are known here, before any
  // process starts. A TorchScript model's are checked when it loads (flat_units.cpp).
  void CheckWrapClasses(const Fields& compute, const plan::Model& model, const plan::TrainLoop& loop) {
    if (loop.sharding.wrap_policy != plan::WrapPolicy::transformer_based) return;
    std::optional<std::vector<std::string>> classes = plan::BuiltInModuleClasses(model);
    if (!classes) return;
    const Value& plugin = compute["fsdp_config"];
    const Value* named =
        plugin.kind == Value::Kind::Record ? plugin.Field("transformer_cls_names_to_wrap") : nullptr;
    std::string_view tag = std::visit([](const auto& m) { return std::string_view(m.kTag); }, model);
    for (const std::string& name : loop.sharding.transformer_layer_cls_to_wrap) {
      if (std::find(classes->begin(), classes->end(), name) != classes->end()) continue;
      failed_ = true;
      bool located = named != nullptr && named->provenance.kind == sema::Provenance::Kind::Spec &&
                     named->provenance.file != nullptr;
      diagnostics_.Emit(diag::Kind::WrapClassNotInModel, located ? named->provenance.file : spec_.file,
                        located ? named->provenance.span : spec_.span, name, tag,
                        fmt::format("`{}`", fmt::join(*classes, "`, `")));
    }
  }

  // The engine's sharding: DDP (stage 0) for the data-parallel types, FSDP's and DeepSpeed's
  // settings for theirs (engines.h). A CPU job stays DDP.
  void LowerEngine(const Fields& compute, const plan::BuildDataloader& data,
                   const plan::InitProcessGroup& init, plan::TrainLoop& loop) {
    const std::string& name = compute["distributed_type"].text;
    std::vector<Refusal> refusals;
    if (name == "FSDP") {
      const Value& plugin = compute["fsdp_config"];
      loop.sharding = LowerFsdp(plugin.kind == Value::Kind::Record ? &plugin : nullptr);
    } else if (name == "DEEPSPEED") {
      const Value& plugin = compute["deepspeed_config"];
      DeepSpeedJob job;
      job.precision = loop.mixed_precision;
      job.batch_size = data.batch_size;
      job.world_size = init.num_machines * init.processes_per_machine;
      const Value* model = spec_.root.Field("model");
      if (model != nullptr && model->type_name == plan::Transformer::kTag)
        job.hidden_size = model->Field("d_model")->int_value;
      const Value* named = plugin.kind == Value::Kind::Record ? plugin.Field("hf_ds_config") : nullptr;
      if (named != nullptr && named->kind == Value::Kind::String && !named->text.empty() &&
          named->text != "none" && deepspeed_json_ == nullptr) {
        // The JSON owns the stage, precision and optimizer: without it the plan would guess.
        Unsupported(diag::Kind::NativeDeepSpeed, *named,
                    fmt::format("a DeepSpeed job whose JSON (`compute.deepspeed_config.hf_ds_config = \"{}\"`) "
                                "could not be read",
                                named->text),
                    "; the plan takes the ZeRO stage, precision and optimizer from that file: fix the path "
                    "or the file");
        return;
      }
      loop.sharding = LowerDeepSpeed(plugin.kind == Value::Kind::Record ? &plugin : nullptr, deepspeed_json_,
                                     job, loop, refusals);
    }
    const Value& mesh = compute["parallelism_config"];
    if (mesh.kind == Value::Kind::Record) {
      const Value* model = spec_.root.Field("model");
      if (model != nullptr) LowerParallelism(mesh, name, *model, loop.sharding, refusals);
    }
    for (const Refusal& refusal : refusals)
      Unsupported(refusal.kind, *refusal.value, refusal.what, refusal.hint + kExport);
  }

  // `--target native`: what native_support.def refuses, wherever it sits in the job, so a plan
  // never claims more than accelrun does. Walks only into fields the runtime executes.
  void RefuseWhatTheRuntimeCannotRun(const Value& record, const std::string& path) {
    for (size_t i = 0; i < record.keys.size(); ++i) {
      const Value& item = record.items[i];
      std::string at = path.empty() ? record.keys[i] : path + "." + record.keys[i];
      // An engine's section is read only when the job uses that engine, as `accelerate launch`
      // reads it: published NO configs carry empty `fsdp_config: {}` sections.
      if (record.type_name == "ClusterConfig" &&
          ((record.keys[i] == "fsdp_config" && distributed_ != "FSDP") ||
           (record.keys[i] == "deepspeed_config" && distributed_ != "DEEPSPEED")))
        continue;
      const NativeField* row = FindNativeField(record.type_name, record.keys[i]);
      // A field without a row fails the coverage test; a field without effect hides nothing.
      if (row == nullptr || row->how == NativeField::How::NoEffect) continue;
      if (row->how == NativeField::How::Refused) {
        if (Holds(*row, item)) {
          bool scalar = item.kind != Value::Kind::Record;
          Unsupported(row->kind, item,
                      scalar ? fmt::format("`{} = {}`", at, Shown(item)) : fmt::format("`{}`", at),
                      fmt::format("; {}{}", row->note, kExport));
        }
        continue;
      }
      if (item.kind == Value::Kind::Record) RefuseWhatTheRuntimeCannotRun(item, at);
      for (size_t j = 0; item.kind == Value::Kind::List && j < item.items.size(); ++j) {
        if (item.items[j].kind == Value::Kind::Record)
          RefuseWhatTheRuntimeCannotRun(item.items[j], fmt::format("{}[{}]", at, j));
      }
    }
  }

  static bool Holds(const NativeField& row, const Value& value) {
    switch (row.when) {
      case NativeField::When::Never:
        return false;
      case NativeField::When::WhenSet:
        return value.kind != Value::Kind::None;
      case NativeField::When::WhenSetInSpec:
        return value.kind != Value::Kind::None && SetInSpec(value);
      case NativeField::When::WhenTrue:
        return value.kind == Value::Kind::Bool && value.bool_value;
      case NativeField::When::Unless:
        return value.kind != Value::Kind::None && Shown(value) != row.allowed;
    }
    return false;
  }

  // A value as compact JSON: `"NO"`, `["generator"]`, `1`.
  static std::string Shown(const Value& value) { return llvm::formatv("{0}", Scalar(value)).str(); }

  // The plan's record of the spec's record of the same name, field by field: the plan's table
  // uses the spec's names, so a new model, dataset or optimizer needs no code here. A plan field
  // the spec record lacks keeps its default for the caller to set.
  template <typename R>
  static R FromSpec(const Value& record) {
    R out;
    plan::ForEachField(out, [&](const plan::FieldInfo& field, auto& member) {
      const Value* value = record.Field(field.name);
      if (value != nullptr && value->kind != Value::Kind::None) Assign(*value, field, member);
    });
    return out;
  }

  template <typename T>
  static void Assign(const Value& value, const plan::FieldInfo& field, T& out) {
    if constexpr (std::is_same_v<T, bool>) {
      out = value.bool_value;
    } else if constexpr (std::is_same_v<T, int64_t>) {
      out = value.int_value;
    } else if constexpr (std::is_same_v<T, double>) {
      out = value.kind == Value::Kind::Int ? static_cast<double>(value.int_value) : value.float_value;
    } else if constexpr (std::is_same_v<T, std::string>) {
      out = field.unit == "path" ? SpecRelative(value) : value.text;
    } else if constexpr (std::is_enum_v<T>) {
      out = PlanEnum<T>(value);
    } else if constexpr (std::is_same_v<T, std::vector<plan::InputBinding>>) {
      // The spec's `{ column: "input" }`, in the spec's order.
      out.clear();
      for (size_t i = 0; i < value.keys.size(); ++i) out.push_back({value.keys[i], value.items[i].text});
    } else if constexpr (std::is_same_v<T, std::vector<plan::PadValue>>) {
      // The spec's `{ column: value }`, in the spec's order.
      out.clear();
      for (size_t i = 0; i < value.keys.size(); ++i) out.push_back({value.keys[i], value.items[i].int_value});
    } else {
      static_assert(std::is_same_v<T, std::vector<typename T::value_type>>,
                    "a plan field lowering cannot copy");
      out.clear();
      for (const Value& item : value.items) {
        typename T::value_type element{};
        Assign(item, field, element);
        out.push_back(std::move(element));
      }
    }
  }

  // The alternative of plan variant V whose tag is the spec record's type name.
  template <typename V>
  static V FromSpecUnion(const Value& record, std::string_view what) {
    return FromSpecUnion<V>(record, what, std::make_index_sequence<std::variant_size_v<V>>{});
  }
  template <typename V, size_t... I>
  static V FromSpecUnion(const Value& record, std::string_view what, std::index_sequence<I...>) {
    std::optional<V> out;
    ((record.type_name == std::variant_alternative_t<I, V>::kTag
          ? (void)(out = FromSpec<std::variant_alternative_t<I, V>>(record))
          : (void)0),
     ...);
    if (!out) Internal(what, record.type_name);
    return *out;
  }

  // Our bug, not the user's: the schema's union has a member this file does not lower.
  [[noreturn]] static void Internal(std::string_view what, const std::string& type) {
    fmt::print(stderr, "internal error: lowering has no case for {} `{}`\n", what, type);
    std::abort();
  }

  // The dataset, and DataLoaderConfiguration resolved as Accelerate resolves it when
  // `prepare()` wraps a map-style DataLoader.
  plan::BuildDataloader LowerData(const Fields& data, const Fields& accelerator, const Fields& train,
                                  const Fields& compute, const Value& seed) {
    plan::BuildDataloader build;
    build.batch_size = data.Int("batch_size");
    build.shuffle = data.Bool("shuffle");
    bool class_labels = train["loss"].enum_value == "cross_entropy";
    build.targets = class_labels ? plan::TargetKind::class_labels : plan::TargetKind::regression;
    build.dataset = LowerDataset(data, train, class_labels);
    // Only the dataset files have a last incomplete batch to drop.
    if (data.value().type_name != plan::SyntheticRegression::kTag) build.drop_last = data.Bool("drop_last");
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
          diag::Kind::NativeUnevenBatches, config["even_batches"],
          "`accelerator.dataloader_config.even_batches = false` on several processes",
          "; ranks would draw different numbers of batches and their collectives would no longer pair "
          "up: keep `even_batches = true` (or set `drop_last`)" +
              kExport);
    }
    return build;
  }

  plan::Dataset LowerDataset(const Fields& data, const Fields& train, bool class_labels) {
    plan::Dataset dataset = FromSpecUnion<plan::Dataset>(data.value(), "dataset");
    if (auto* synthetic = std::get_if<plan::SyntheticRegression>(&dataset)) {
      // The targets are as wide as the model's output.
      const Value* model = spec_.root.Field("model");
      const Value* outputs = model != nullptr ? model->Field("outputs") : nullptr;
      synthetic->outputs = outputs != nullptr ? outputs->int_value : 1;
      if (class_labels) {
        Unsupported(diag::Kind::NativeLossOnSynthetic, train["loss"],
                    "`train.loss = cross_entropy` on `SyntheticRegression`",
                    "; its targets are real numbers: use `mse`, or a dataset file with integer class labels");
      }
    } else if (std::holds_alternative<plan::NpyColumns>(dataset) ||
               std::holds_alternative<plan::SafetensorsColumns>(dataset)) {
      CheckPaddingColumns(data);
    } else if (auto* csv = std::get_if<plan::CsvDataset>(&dataset)) {
      if (class_labels && csv->target_columns.size() != 1) {
        Unsupported(diag::Kind::NativeTargetColumns, data["target_columns"],
                    "several `target_columns` with `train.loss = cross_entropy`",
                    "; cross entropy reads one column of class indices");
      }
    }
    return dataset;
  }

  // The columns the padding fields name are columns the dataset reads, when the spec lists them
  // (without a list every file's column is read, and the runtime checks the names).
  void CheckPaddingColumns(const Fields& data) {
    const Value& columns = data["columns"];
    if (columns.items.empty()) return;
    std::vector<std::string> read;
    std::string listed;
    for (const Value& column : columns.items) {
      read.push_back(column.text);
      listed += (listed.empty() ? "`" : ", `") + column.text + "`";
    }
    auto check = [&](const Value& where, const std::string& field, const std::string& name) {
      if (std::find(read.begin(), read.end(), name) != read.end()) return;
      failed_ = true;
      bool located =
          where.provenance.kind == sema::Provenance::Kind::Spec && where.provenance.file != nullptr;
      diagnostics_.Emit(diag::Kind::PaddingColumnNotRead, located ? where.provenance.file : spec_.file,
                        located ? where.provenance.span : spec_.span, field, name,
                        fmt::format("; it reads {}: add `{}` there, or correct the name", listed, name));
    };
    const Value& pad_values = data["pad_values"];
    for (size_t i = 0; i < pad_values.keys.size(); ++i) {
      check(pad_values.items[i], "`pad_values`", pad_values.keys[i]);
    }
    if (data.IsSet("attention_mask_from")) {
      check(data["attention_mask_from"], "`attention_mask_from`", data.Text("attention_mask_from"));
    }
    for (const Value& name : data["same_length"].items) check(name, "`same_length`", name.text);
  }

  // Whether the dataset yields named columns (for a model that computes its own loss) rather
  // than one features tensor and one targets tensor.
  static bool NamedColumns(const plan::Dataset& dataset) {
    return std::visit(plan::Overloaded{[](const plan::SyntheticRegression&) { return false; },
                                       [](const plan::CsvDataset&) { return false; },
                                       [](const plan::NpyDataset&) { return false; },
                                       [](const plan::SafetensorsDataset&) { return false; },
                                       [](const plan::SafetensorsColumns&) { return true; },
                                       [](const plan::NpyColumns&) { return true; },
                                       [](const plan::TokenStream&) { return true; }},
                      dataset);
  }

  // Named columns feed a TorchScript model that returns its own loss (`model`, also when the
  // spec leaves `train.loss` unset); features and targets feed any model, and the runtime's
  // loss compares its outputs with the targets.
  void FitModelToData(const Fields& job, const plan::Dataset& dataset, plan::TrainLoop& loop) {
    const Value& model = job["model"];
    const Value& loss = job.Record("train")["loss"];
    const std::string& data_type = job["data"].type_name;
    if (NamedColumns(dataset)) {
      if (model.type_name != plan::TorchScript::kTag) {
        Unsupported(diag::Kind::NativeNamedColumnsModel, model,
                    fmt::format("`model = {}` on the named columns of `{}`", model.type_name, data_type),
                    "; built-in models read one float matrix of features: bring a TorchScript model whose "
                    "`forward` takes the columns by name and returns its loss");
      }
      if (SetInSpec(loss) && loss.enum_value != "model") {
        Unsupported(diag::Kind::NativeModelLoss, loss,
                    fmt::format("`train.loss = {}` on the named columns of `{}`", loss.enum_value, data_type),
                    "; a model reading named columns returns its own loss: drop `train.loss` or set `model`");
      }
      loop.loss = plan::Loss::model;
      return;
    }
    if (loop.loss == plan::Loss::model) {
      Unsupported(diag::Kind::NativeModelLoss, loss, fmt::format("`train.loss = model` on `{}`", data_type),
                  "; a model returns its own loss only from named columns (`SafetensorsColumns`, "
                  "`NpyColumns`, `TokenStream`): choose `mse` or `cross_entropy`");
    }
    const Value* inputs = model.Field("inputs");
    if (inputs != nullptr && !inputs->keys.empty()) {
      Unsupported(diag::Kind::NativeModelInputs, *inputs, fmt::format("`model.inputs` on `{}`", data_type),
                  "; it maps named columns to `forward` inputs, and this dataset feeds `forward` one "
                  "tensor of features: drop it, or read the data as named columns");
    }
  }

  // The spec's enum member, as the plan's enum of the same JSON strings.
  template <typename E>
  static E PlanEnum(const Value& value) {
    std::optional<E> member = FindPlanEnum<E>(value);
    if (!member) Internal(plan::EnumInfo<E>::kName, value.enum_value);
    return *member;
  }

  // The plan's member of the same JSON string, or unset when the plan has none.
  template <typename E>
  static std::optional<E> FindPlanEnum(const Value& value) {
    for (const auto& [member, name] : plan::EnumInfo<E>::kMembers) {
      if (name == value.enum_value) return member;
    }
    return std::nullopt;
  }

  plan::TrainLoop LowerTrain(const Fields& train, const Fields& accelerator, plan::MixedPrecision precision) {
    plan::TrainLoop loop;
    // With both set, `steps` wins (TRAIN-003); `epochs` becomes steps in the worker, which has
    // the data (its size is not known here for files).
    loop.steps = train.IntOr("steps", 0);
    loop.epochs = loop.steps > 0 ? 0 : train.IntOr("epochs", 0);
    loop.log_every = train.Int("log_every");
    loop.loss = PlanEnum<plan::Loss>(train["loss"]);
    loop.mixed_precision = precision;
    loop.optimizer = FromSpecUnion<plan::Optimizer>(train["optimizer"], "optimizer");
    loop.lr_schedule = PlanEnum<plan::LrScheduleType>(train["lr_schedule"]);
    loop.warmup_steps = train.Int("warmup_steps");
    loop.warmup_ratio = train.FloatOr("warmup_ratio", 0.0);
    loop.num_cycles = train.Float("num_cycles");
    loop.step_scheduler_with_optimizer = accelerator.Bool("step_scheduler_with_optimizer");
    loop.max_grad_norm = train.FloatOr("max_grad_norm", 0.0);
    loop.eval_samples = train.Int("eval_samples");
    loop.find_executable_batch_size = train.Bool("find_executable_batch_size");
    loop.eval_every = train.IntOr("eval_every", 0);

    plan::GradientAccumulationPlugin& ga = loop.gradient_accumulation;
    const Value& plugin = accelerator["gradient_accumulation_plugin"];
    if (plugin.kind == Value::Kind::Record) {
      Fields fields(plugin);
      ga.num_steps = fields.Int("num_steps");
      ga.sync_with_dataloader = fields.Bool("sync_with_dataloader");
      ga.sync_each_batch = fields.Bool("sync_each_batch");
    } else {
      ga.num_steps = accelerator.Int("gradient_accumulation_steps");
    }
    // GA-003: Accelerate reads the plugin's to_kwargs(), which drops the default True, and
    // falls back to False: adjust_scheduler is in effect always off.
    ga.adjust_scheduler = false;

    // Accelerate builds its GradScaler from GradScalerKwargs only for fp16 (a DeepSpeed plan's
    // JSON replaces this with DeepSpeed's own scaler).
    Fields scaler = accelerator.Record("grad_scaler");
    loop.loss_scaling.enabled = precision == plan::MixedPrecision::fp16 && scaler.Bool("enabled");
    loop.loss_scaling.init_scale = scaler.Float("init_scale");
    loop.loss_scaling.growth_factor = scaler.Float("growth_factor");
    loop.loss_scaling.backoff_factor = scaler.Float("backoff_factor");
    loop.loss_scaling.growth_interval = scaler.Int("growth_interval");

    Fields autocast = accelerator.Record("autocast");
    loop.autocast.enabled = autocast.Bool("enabled");
    const Value& cache = autocast["cache_enabled"];
    loop.autocast.cache_enabled = cache.kind == Value::Kind::None || cache.bool_value;

    Fields ddp = accelerator.Record("ddp");
    loop.ddp.bucket_cap_mb = ddp.Int("bucket_cap_mb");
    const std::string& hook = ddp["comm_hook"].enum_value;
    if (hook == "power_sgd" || hook == "batched_power_sgd") {
      Unsupported(diag::Kind::NativePowerSgd, ddp["comm_hook"],
                  fmt::format("`accelerator.ddp.comm_hook = {}`", hook),
                  "; accelrun compresses gradients with `fp16` or `bf16`" + kExport);
    } else {
      loop.ddp.comm_hook = PlanEnum<plan::DDPCommunicationHookType>(ddp["comm_hook"]);
    }
    // A wrapper around no hook is dropped, as in Accelerate; around fp16/bf16 it would cast
    // twice, which only PowerSGD (not run here) makes meaningful.
    if (hook != "no" && ddp["comm_wrapper"].enum_value != "no") {
      Unsupported(diag::Kind::NativeCommWrapper, ddp["comm_wrapper"],
                  "`accelerator.ddp.comm_wrapper` around an fp16/bf16 hook",
                  "; it wraps PowerSGD hooks, which accelrun does not run: drop the wrapper" + kExport);
    }
    loop.ddp.find_unused_parameters = ddp.Bool("find_unused_parameters");
    loop.ddp.broadcast_buffers = ddp.Bool("broadcast_buffers");

    for (const Value& tracker : accelerator["log_with"].items) {
      // `all` starts every tracker that is installed: the one accelrun has.
      if (tracker.enum_value == "tensorboard" || tracker.enum_value == "all") {
        if (loop.trackers.empty()) loop.trackers.push_back(plan::Tracker::tensorboard);
      } else {
        Unsupported(
            diag::Kind::NativeTracker, tracker,
            fmt::format("`accelerator.log_with = {}`", tracker.enum_value),
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
        Unsupported(diag::Kind::NativeUnusedProjectConfig, FirstSetInSpec(project_value.items[i]),
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
    checkpoint.checkpoint_every = train.IntOr("checkpoint_every", 0);
    checkpoint.checkpoint_every_epoch = every_epoch;
    ProjectDirs dirs = ResolveProjectDirs(accelerator);
    checkpoint.project_dir = dirs.project_dir;
    checkpoint.automatic_checkpoint_naming = project.Bool("automatic_checkpoint_naming");
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

  // Where the job set what a runtime limit is about: the first of the fields that decide it
  // that the spec or the environment set (Unsupported names the variable), else the job. Only
  // a hand-edited plan has a stage above 3; lowering writes 0 to 3.
  const Value& SpecValueOf(plan::LimitedSetting setting) const {
    std::vector<std::vector<const char*>> paths;
    switch (setting) {
      case plan::LimitedSetting::kProcesses:
        paths = {{"compute", "num_processes"}, {"compute", "num_machines"}};
        break;
      case plan::LimitedSetting::kShardingStage:
        paths = {{"compute", "deepspeed_config", "zero_stage"}, {"compute", "distributed_type"}};
        break;
      case plan::LimitedSetting::kTensorParallel:
        paths = {{"compute", "parallelism_config", "tp_size"}};
        break;
      case plan::LimitedSetting::kMaxGradNorm:
        paths = {{"train", "max_grad_norm"}};
        break;
      case plan::LimitedSetting::kStateDictType:
        paths = {{"compute", "fsdp_config", "state_dict_type"}, {"compute", "fsdp_config", "fsdp_version"},
                 {"compute", "fsdp_config"}};
        break;
      case plan::LimitedSetting::kSaveOnEachNode:
        paths = {{"accelerator", "project_config", "save_on_each_node"}};
        break;
    }
    for (const std::vector<const char*>& path : paths) {
      const Value* value = &spec_.root;
      for (const char* key : path) value = value != nullptr ? value->Field(key) : nullptr;
      if (value != nullptr && value->provenance.kind != sema::Provenance::Kind::SchemaDefault) return *value;
    }
    return spec_.root;
  }

  void Unsupported(diag::Kind kind, const Value& value, const std::string& what, const std::string& hint) {
    failed_ = true;
    // A value from a base job or a `--set` override is reported where it was written.
    bool located = value.provenance.kind == sema::Provenance::Kind::Spec && value.provenance.file != nullptr;
    diag::Diagnostic& d = diagnostics_.Emit(kind, located ? value.provenance.file : spec_.file,
                                            located ? value.provenance.span : spec_.span, what, hint);
    if (value.provenance.kind == sema::Provenance::Kind::Environment) {
      d.message += fmt::format(" (value from environment variable `{}`)", value.provenance.env_var);
    }
  }

  const sema::Spec& spec_;
  // The checked DeepSpeed JSON `compute.deepspeed_config.hf_ds_config` names, or null.
  const sema::Value* deepspeed_json_;
  diag::DiagnosticEngine& diagnostics_;
  std::string distributed_;  // compute.distributed_type
  bool failed_ = false;
};

}  // namespace

json::Value ConfigTree(const Value& v) {
  if (v.kind == Value::Kind::Record) {
    json::Object object{{"type", v.type_name}};
    for (size_t i = 0; i < v.keys.size(); ++i) object[v.keys[i]] = ConfigTree(v.items[i]);
    return object;
  }
  return json::Object{{"value", Scalar(v)}, {"from", v.provenance.Describe()}};
}

std::optional<plan::Plan> Lower(const sema::Spec& spec, const std::string& source_name,
                                diag::DiagnosticEngine& diagnostics, const sema::Value* deepspeed_json) {
  return Lowerer(spec, deepspeed_json, diagnostics).Run(source_name);
}

}  // namespace accel::lower
