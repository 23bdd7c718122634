#include "compiler/lower/lower.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/lower/data.h"
#include "compiler/lower/engines.h"
#include "compiler/lower/lowering.h"
#include "compiler/lower/native_support.h"
#include "compiler/lower/plan_records.h"
#include "compiler/lower/target.h"
#include "compiler/lower/train.h"
#include "compiler/plan/builtin_modules.h"
#include "compiler/plan/runtime_limits.h"

// Lowering's orchestration: the phases in order (target.h, data.h, train.h, engines.h), the
// refusals of native_support.def, the runtime limits, and the plan's config tree.
namespace accel::lower {
namespace {

namespace json = llvm::json;
using sema::Value;

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

// A value as compact JSON: `"NO"`, `["generator"]`, `1`.
std::string Shown(const Value& value) { return llvm::formatv("{0}", Scalar(value)).str(); }

bool Holds(const NativeField& row, const Value& value) {
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

// `--target native`: what native_support.def refuses, wherever it sits in the job, so a plan
// never claims more than accelrun does. Walks only into fields the runtime executes, by the
// table's names: the walk is generic over every record.
void RefuseWhatTheRuntimeCannotRun(Lowering& lowering, const Value& record, const std::string& path) {
  spec::ClusterConfig compute = lowering.job().compute();
  spec::DistributedType type = compute.distributed_type();
  for (size_t i = 0; i < record.keys.size(); ++i) {
    const Value& item = record.items[i];
    std::string at = path.empty() ? record.keys[i] : path + "." + record.keys[i];
    // An engine's section is read only when the job uses that engine, as `accelerate launch`
    // reads it: published NO configs carry empty `fsdp_config: {}` sections.
    if ((&item == &compute.fsdp_config_value() && type != spec::DistributedType::FSDP) ||
        (&item == &compute.deepspeed_config_value() && type != spec::DistributedType::DEEPSPEED))
      continue;
    // A field without a row is copied whole into its plan twin (the coverage test fails on any
    // other), so it is executed as a lowered one is; a field without effect hides nothing.
    const NativeField* row = FindNativeField(record.type_name, record.keys[i]);
    if (row != nullptr && row->how == NativeField::How::NoEffect) continue;
    if (row != nullptr && row->how == NativeField::How::Refused) {
      if (Holds(*row, item)) {
        bool scalar = item.kind != Value::Kind::Record;
        lowering.Unsupported(row->kind, item,
                             scalar ? fmt::format("`{} = {}`", at, Shown(item)) : fmt::format("`{}`", at),
                             fmt::format("; {}{}", row->note, kExport));
      }
      continue;
    }
    if (item.kind == Value::Kind::Record) RefuseWhatTheRuntimeCannotRun(lowering, item, at);
    for (size_t j = 0; item.kind == Value::Kind::List && j < item.items.size(); ++j) {
      if (item.items[j].kind == Value::Kind::Record)
        RefuseWhatTheRuntimeCannotRun(lowering, item.items[j], fmt::format("{}[{}]", at, j));
    }
  }
}

// Accelerate raises when the model has no module of a class the wrap policy names (its FSDP
// plugin's `set_auto_wrap_policy`); a built-in model's classes are known here, before any
// process starts. A TorchScript model's are checked when it loads (flat_units.cpp).
void CheckWrapClasses(Lowering& lowering, const plan::Model& model, const plan::TrainLoop& loop) {
  if (loop.sharding.wrap_policy != plan::WrapPolicy::transformer_based) return;
  std::optional<std::vector<std::string>> classes = plan::BuiltInModuleClasses(model);
  if (!classes) return;
  std::optional<spec::FullyShardedDataParallelPlugin> plugin = lowering.job().compute().fsdp_config();
  static const Value kUnwritten;  // reported at the job
  const Value& named = plugin ? plugin->transformer_cls_names_to_wrap_value() : kUnwritten;
  std::string_view tag = std::visit([](const auto& m) { return std::string_view(m.kTag); }, model);
  for (const std::string& name : loop.sharding.transformer_layer_cls_to_wrap) {
    if (std::find(classes->begin(), classes->end(), name) != classes->end()) continue;
    lowering.Emit(diag::Kind::WrapClassNotInModel, named, name, tag,
                  fmt::format("`{}`", fmt::join(*classes, "`, `")));
  }
}

// The engine's sharding: DDP (stage 0) for the data-parallel types, FSDP's and DeepSpeed's
// settings for theirs (engines.h). A CPU job stays DDP.
void LowerEngine(Lowering& lowering, const plan::BuildDataloader& data, const plan::InitProcessGroup& init,
                 plan::TrainLoop& loop) {
  spec::Job job = lowering.job();
  spec::ClusterConfig compute = job.compute();
  spec::DistributedType type = compute.distributed_type();
  std::vector<Refusal> refusals;
  if (type == spec::DistributedType::FSDP) {
    loop.sharding = LowerFsdp(compute.fsdp_config());
  } else if (type == spec::DistributedType::DEEPSPEED) {
    std::optional<spec::DeepSpeedPlugin> plugin = compute.deepspeed_config();
    DeepSpeedJob deepspeed;
    deepspeed.batch_size = data.batch_size;
    deepspeed.world_size = init.num_machines * init.processes_per_machine;
    auto model = job.model();
    if (const auto* transformer = std::get_if<spec::Transformer>(&model)) deepspeed.hidden_size = transformer->d_model();
    std::optional<std::string> named = plugin ? plugin->hf_ds_config() : std::nullopt;
    if (named && !named->empty() && *named != "none" && lowering.deepspeed_json() == nullptr) {
      // The JSON owns the stage, precision and optimizer: without it the plan would guess.
      lowering.Unsupported(diag::Kind::NativeDeepSpeed, plugin->hf_ds_config_value(),
                           fmt::format("a DeepSpeed job whose JSON (`compute.deepspeed_config.hf_ds_config = "
                                       "\"{}\"`) could not be read",
                                       *named),
                           "; the plan takes the ZeRO stage, precision and optimizer from that file: fix the "
                           "path or the file");
      return;
    }
    std::optional<spec::DeepSpeedConfig> json;
    if (lowering.deepspeed_json() != nullptr) json.emplace(*lowering.deepspeed_json());
    loop.sharding = LowerDeepSpeed(plugin, json, deepspeed, loop, refusals);
  }
  if (std::optional<spec::ParallelismConfig> mesh = compute.parallelism_config())
    LowerParallelism(*mesh, type, job.model(), loop.sharding, refusals);
  for (const Refusal& refusal : refusals)
    lowering.Unsupported(refusal.kind, *refusal.value, refusal.what, refusal.hint + std::string(kExport));
}

// Where the job set what a runtime limit is about: the first of the fields that decide it
// that the spec or the environment set (Unsupported names the variable), else the job. Only
// a hand-edited plan has a stage above 3; lowering writes 0 to 3.
const Value& SpecValueOf(const Lowering& lowering, plan::LimitedSetting setting) {
  spec::Job job = lowering.job();
  spec::ClusterConfig compute = job.compute();
  std::optional<spec::DeepSpeedPlugin> deepspeed = compute.deepspeed_config();
  std::optional<spec::FullyShardedDataParallelPlugin> fsdp = compute.fsdp_config();
  std::optional<spec::ParallelismConfig> mesh = compute.parallelism_config();
  std::vector<const Value*> candidates;
  switch (setting) {
    case plan::LimitedSetting::kProcesses:
      candidates = {&compute.num_processes_value(), &compute.num_machines_value()};
      break;
    case plan::LimitedSetting::kShardingStage:
      candidates = {deepspeed ? &deepspeed->zero_stage_value() : nullptr, &compute.distributed_type_value()};
      break;
    case plan::LimitedSetting::kTensorParallel:
      candidates = {mesh ? &mesh->tp_size_value() : nullptr};
      break;
    case plan::LimitedSetting::kMaxGradNorm:
      candidates = {&job.train().max_grad_norm_value()};
      break;
    case plan::LimitedSetting::kStateDictType:
      candidates = {fsdp ? &fsdp->state_dict_type_value() : nullptr, fsdp ? &fsdp->fsdp_version_value() : nullptr,
                    &compute.fsdp_config_value()};
      break;
    case plan::LimitedSetting::kSaveOnEachNode:
      candidates = {&job.accelerator().project_config().save_on_each_node_value()};
      break;
  }
  for (const Value* value : candidates)
    if (value != nullptr && value->provenance.kind != sema::Provenance::Kind::SchemaDefault) return *value;
  return lowering.spec().root;
}

std::optional<plan::Plan> Run(Lowering& lowering, const std::string& source_name) {
  spec::Job job = lowering.job();
  plan::Plan plan;
  plan.job = lowering.spec().job_name;
  plan.source = source_name;
  plan.config = ConfigTree(lowering.spec().root);

  spec::ClusterConfig compute = job.compute();
  spec::Accelerator accelerator = job.accelerator();
  RefuseWhatTheRuntimeCannotRun(lowering, lowering.spec().root, "");
  Target target = ChooseTarget(lowering, compute, accelerator);
  plan::MixedPrecision mixed_precision = LowerPrecision(lowering, compute, accelerator, target);
  plan::InitProcessGroup init = LowerProcessGroup(lowering, compute, accelerator, target);
  plan.steps.push_back(init);
  if (std::optional<int64_t> seed = accelerator.seed()) plan.steps.push_back(plan::Seed{*seed});
  plan.steps.push_back(plan::BuildModel{FromSpecUnion<plan::Model>(job.model())});

  plan::BuildDataloader data = LowerData(lowering);
  plan::TrainLoop loop = LowerTrain(lowering, mixed_precision);
  FitModelToData(lowering, data.dataset, loop);
  LowerEngine(lowering, data, init, loop);
  CheckWrapClasses(lowering, plan.Find<plan::BuildModel>()->model, loop);
  plan.steps.push_back(std::move(data));
  plan.steps.push_back(std::move(loop));
  if (std::optional<plan::Checkpoint> checkpoint = LowerCheckpoint(lowering))
    plan.steps.push_back(std::move(*checkpoint));

  spec::Output output = job.output();
  plan.steps.push_back(plan::SaveModel{output.dir(), output.model_file(), output.max_shard_size()});

  for (const plan::RuntimeLimit& limit : plan::RuntimeLimitsBroken(plan))
    lowering.Unsupported(limit.kind, SpecValueOf(lowering, limit.setting), limit.what, limit.fix + std::string(kExport));
  if (lowering.failed()) return std::nullopt;
  plan.hash = plan::ComputeHash(plan);
  return plan;
}

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
  Lowering lowering(spec, deepspeed_json, diagnostics);
  return Run(lowering, source_name);
}

}  // namespace accel::lower
