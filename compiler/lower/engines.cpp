#include "compiler/lower/engines.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>

#include <fmt/format.h>

namespace accel::lower {
namespace {

using sema::Value;

// ---- reading checked values ----

using Fsdp = spec::FullyShardedDataParallelPlugin;
using Plugin = spec::DeepSpeedPlugin;
using Json = spec::DeepSpeedConfig;
using Zero = spec::DeepSpeedZeroConfig;

bool IsSet(const Value* v) { return v != nullptr && v->kind != Value::Kind::None; }
bool IsAuto(const Value* v) { return v != nullptr && sema::views::Holds<spec::Auto>(*v); }
// Written in the file, not a schema default: DeepSpeed's own default and "absent" differ for
// some keys (the JSON's `gradient_accumulation_steps` defaults to 1, Accelerate fills it in).
bool Written(const Value* v) { return IsSet(v) && v->provenance.kind == sema::Provenance::Kind::Spec; }

// The Value of the field `accessor` names in a section the config may leave out, or null
// without the section. The engines read raw Values: DeepSpeed's JSON writes counts as floats
// (`2e8`) and many of its fields take "auto" besides their type.
template <typename View>
const Value* In(const std::optional<View>& section, const Value& (View::*accessor)() const) {
  return section ? &((*section).*accessor)() : nullptr;
}

// The section `accessor` names inside a section the config may leave out.
template <typename View, typename Inner>
std::optional<Inner> Within(const std::optional<View>& section, std::optional<Inner> (View::*accessor)() const) {
  return section ? ((*section).*accessor)() : std::nullopt;
}

// An entry of a map value (`optimizer.params`), or null.
const Value* Entry(const Value* map, std::string_view key) {
  if (map == nullptr || map->kind != Value::Kind::Map) return nullptr;
  for (size_t i = 0; i < map->keys.size(); ++i)
    if (map->keys[i] == key) return &map->items[i];
  return nullptr;
}

std::optional<double> Number(const Value* v) {
  if (v == nullptr) return std::nullopt;
  if (v->kind == Value::Kind::Int) return static_cast<double>(v->int_value);
  if (v->kind == Value::Kind::Float) return v->float_value;
  return std::nullopt;
}

// JSON writes sizes as `2e8`: a float with an integral value is a count too.
std::optional<int64_t> Count(const Value* v) {
  if (v == nullptr) return std::nullopt;
  if (v->kind == Value::Kind::Int) return v->int_value;
  if (v->kind == Value::Kind::Float && std::trunc(v->float_value) == v->float_value)
    return static_cast<int64_t>(v->float_value);
  return std::nullopt;
}

std::optional<bool> Flag(const Value* v) {
  if (v != nullptr && v->kind == Value::Kind::Bool) return v->bool_value;
  return std::nullopt;
}

// The member of E the value holds, or unset.
template <typename E>
std::optional<E> Member(const Value* v) {
  if (v == nullptr || !sema::views::Holds<E>(*v)) return std::nullopt;
  return sema::views::EnumOf<E>(*v);
}

std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

// ---- FSDP ----

using spec::FSDPShardingStrategy;

// torch's ShardingStrategy by its integer, as older config files write it (FULL_SHARD = 1): the
// stdlib declares the members in torch's order.
constexpr bool DeclaredInTorchOrder() {
  constexpr std::array<std::string_view, 5> kTorch = {"FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD",
                                                      "HYBRID_SHARD_ZERO2"};
  const auto& names = sema::views::EnumTable<FSDPShardingStrategy>::kNames;
  if (names.size() != kTorch.size()) return false;
  for (size_t i = 0; i < kTorch.size(); ++i)
    if (names[i] != kTorch[i]) return false;
  return true;
}
static_assert(DeclaredInTorchOrder(), "FSDPShardingStrategy's members must follow torch's numbering");

FSDPShardingStrategy Strategy(const Value* v) {
  if (std::optional<int64_t> n = Count(v); n && *n >= 1 && *n <= 5) return static_cast<FSDPShardingStrategy>(*n - 1);
  return Member<FSDPShardingStrategy>(v).value_or(FSDPShardingStrategy::FULL_SHARD);
}

// FSDP1's strategy as a ZeRO stage: SHARD_GRAD_OP keeps the gathered parameters from forward
// to backward (no reshard), and the HYBRID_ ones do the same within a machine only.
void ApplyStrategy(FSDPShardingStrategy strategy, plan::Sharding& s) {
  s.stage = 3;
  s.hybrid = false;
  s.reshard_after_forward = false;
  switch (strategy) {
    case FSDPShardingStrategy::FULL_SHARD:
      s.reshard_after_forward = true;
      return;
    case FSDPShardingStrategy::SHARD_GRAD_OP:
      return;
    case FSDPShardingStrategy::NO_SHARD:
      s.stage = 0;
      return;
    case FSDPShardingStrategy::HYBRID_SHARD:
      s.hybrid = true;
      s.reshard_after_forward = true;
      return;
    case FSDPShardingStrategy::HYBRID_SHARD_ZERO2:
      s.hybrid = true;
      return;
  }
}

// A list of class names, or one comma-separated string as the questionnaire writes it.
std::vector<std::string> ClassNames(const Value* v) {
  std::vector<std::string> names;
  auto add = [&names](std::string_view text) {
    size_t start = 0;
    while (start <= text.size()) {
      size_t end = std::min(text.find(',', start), text.size());
      std::string_view name = text.substr(start, end - start);
      while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
      while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
      if (!name.empty()) names.emplace_back(name);
      start = end + 1;
    }
  };
  if (v != nullptr && v->kind == Value::Kind::String) add(v->text);
  if (v != nullptr && v->kind == Value::Kind::List)
    for (const Value& item : v->items) add(item.text);
  return names;
}

// ---- DeepSpeed ----

// Where an offload goes: the JSON's section (`auto` takes the plugin's device) or the plugin's.
// NVMe is refused: accelrun has no asynchronous I/O engine to page tensors through.
bool OffloadsToCpu(const Value* json_device, const Value* plugin_device, std::string_view what,
                   std::vector<Refusal>& refusals) {
  const Value* device = IsSet(json_device) && !IsAuto(json_device) ? json_device : plugin_device;
  std::optional<spec::OffloadDevice> member = Member<spec::OffloadDevice>(device);
  if (!member) return false;
  switch (*member) {
    case spec::OffloadDevice::NONE:
      return false;
    case spec::OffloadDevice::CPU:
      return true;
    case spec::OffloadDevice::NVME:
      refusals.push_back({diag::Kind::NativeNvmeOffload, device, fmt::format("`{} = nvme`", what),
                          "; accelrun offloads to host memory only: use `cpu`"});
      return false;
  }
  return false;
}

// A size the JSON may write "auto": Accelerate fills it from the model's hidden size when the
// model has one; otherwise DeepSpeed's default (the plan's) stays.
void Size(const Value* v, std::optional<int64_t> from_hidden, int64_t& out) {
  if (IsAuto(v)) {
    if (from_hidden) out = *from_hidden;
  } else if (std::optional<int64_t> n = Count(v)) {
    out = *n;
  }
}

// The job's optimizer's hyperparameters, which "auto" in the JSON's `optimizer.params` takes.
struct Hyper {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0, momentum = 0;
};

// Read by name from whichever optimizer the job has, so that a new one needs no case here: a
// hyperparameter it lacks keeps DeepSpeed's default above.
Hyper JobHyper(const plan::Optimizer& optimizer) {
  Hyper h;
  const std::pair<std::string_view, double*> by_name[] = {{"lr", &h.lr},   {"beta1", &h.beta1},
                                                          {"beta2", &h.beta2}, {"eps", &h.eps},
                                                          {"weight_decay", &h.weight_decay}, {"momentum", &h.momentum}};
  std::visit(
      [&](const auto& o) {
        plan::ForEachField(o, [&](const plan::FieldInfo& field, const auto& member) {
          if constexpr (std::is_same_v<std::decay_t<decltype(member)>, double>) {
            for (const auto& [name, out] : by_name)
              if (name == field.name) *out = member;
          }
        });
      },
      optimizer);
  return h;
}

// A number of `optimizer.params`: absent keeps the DeepSpeed default already in `out`, `auto`
// takes the job's, a number is DeepSpeed's.
void Param(const Value* params, std::string_view key, double job, double& out) {
  const Value* v = Entry(params, key);
  if (IsAuto(v)) {
    out = job;
  } else if (std::optional<double> n = Number(v)) {
    out = *n;
  }
}

// The JSON's `optimizer` section: DeepSpeed builds it instead of the job's (transformers and
// Accelerate pass a DummyOptim), with "auto" hyperparameters taken from the job's optimizer.
// DeepSpeed's Adam is AdamW unless `adam_w_mode` is false; a torch.optim name such as SGD is
// built by torch. Other optimizers (Lamb, 1-bit Adam, ...) are DeepSpeed kernels.
void LowerOptimizer(const spec::DeepSpeedOptimizerConfig& section, plan::TrainLoop& loop,
                    std::vector<Refusal>& refusals) {
  const Value* type = &section.type_value();
  const Value* params = &section.params();
  std::string name = Lower(section.type());
  Hyper job = JobHyper(loop.optimizer);
  Hyper ds;  // DeepSpeed's FusedAdam and torch's SGD defaults
  Param(params, "lr", job.lr, ds.lr);
  Param(params, "eps", job.eps, ds.eps);
  Param(params, "weight_decay", job.weight_decay, ds.weight_decay);
  Param(params, "momentum", job.momentum, ds.momentum);
  const Value* betas = Entry(params, "betas");
  if (IsAuto(betas)) {
    ds.beta1 = job.beta1;
    ds.beta2 = job.beta2;
  } else if (betas != nullptr && betas->kind == Value::Kind::List && betas->items.size() == 2) {
    ds.beta1 = Number(&betas->items[0]).value_or(ds.beta1);
    ds.beta2 = Number(&betas->items[1]).value_or(ds.beta2);
  }
  if (name == "adam" || name == "adamw") {
    std::optional<bool> w_mode = Flag(Entry(params, "adam_w_mode"));
    if (w_mode.value_or(true)) {
      loop.optimizer = plan::AdamW{ds.lr, ds.beta1, ds.beta2, ds.eps, ds.weight_decay};
    } else {
      loop.optimizer = plan::Adam{ds.lr, ds.beta1, ds.beta2, ds.eps, ds.weight_decay};
    }
  } else if (name == "sgd") {
    loop.optimizer = plan::SGD{ds.lr, ds.momentum, ds.weight_decay};
  } else {
    refusals.push_back(
        {diag::Kind::NativeDeepSpeed, type, fmt::format("the DeepSpeed optimizer `{}`", type->text),
         "; accelrun runs `Adam`, `AdamW` and `SGD`: choose one, or drop the `optimizer` section to "
         "train with the job's `train.optimizer`"});
  }
}

void SetLearningRate(plan::Optimizer& optimizer, double lr) {
  std::visit([lr](auto& o) { o.lr = lr; }, optimizer);
}

// The JSON's `scheduler` section: WarmupLR (warm up, then constant) and WarmupDecayLR (warm
// up, then linear decay to 0 at `total_num_steps`), from `warmup_min_lr` 0 to `warmup_max_lr`,
// which is the optimizer's learning rate. DeepSpeed warms up logarithmically unless
// `warmup_type` is `linear`. "auto" takes the job's: warmup from `train.warmup_steps` (or
// `warmup_ratio`), the peak from the optimizer, the total from `train.steps`.
void LowerScheduler(const spec::DeepSpeedSchedulerConfig& section, plan::TrainLoop& loop,
                    std::vector<Refusal>& refusals) {
  const Value* type = &section.type_value();
  const Value* params = &section.params();
  const std::string& name = section.type();
  if (name == "WarmupLR") {
    loop.lr_schedule = plan::LrScheduleType::constant_with_warmup;
  } else if (name == "WarmupDecayLR") {
    loop.lr_schedule = plan::LrScheduleType::linear;
  } else {
    refusals.push_back({diag::Kind::NativeDeepSpeed, type, fmt::format("the DeepSpeed scheduler `{}`", name),
                        "; accelrun runs `WarmupLR` and `WarmupDecayLR`: choose one, or drop the `scheduler` "
                        "section to use the job's `train.lr_schedule`"});
    return;
  }
  const Value* min_lr = Entry(params, "warmup_min_lr");
  if (std::optional<double> n = Number(min_lr); n && *n != 0.0) {
    refusals.push_back({diag::Kind::NativeDeepSpeed, min_lr,
                        fmt::format("`scheduler.params.warmup_min_lr = {}`", *n),
                        "; accelrun's warmup starts from a learning rate of 0: write 0 or \"auto\""});
  }
  const Value* max_lr = Entry(params, "warmup_max_lr");
  if (std::optional<double> n = Number(max_lr)) {
    SetLearningRate(loop.optimizer, *n);
  } else if (!IsAuto(max_lr)) {
    SetLearningRate(loop.optimizer, 1e-3);  // DeepSpeed's default peak
  }
  const Value* warmup = Entry(params, "warmup_num_steps");
  if (std::optional<int64_t> n = Count(warmup)) {
    loop.warmup_steps = *n;
    loop.warmup_ratio = 0;
  } else if (!IsAuto(warmup)) {
    loop.warmup_steps = 1000;  // DeepSpeed's default
    loop.warmup_ratio = 0;
  }
  const Value* curve = Entry(params, "warmup_type");
  loop.warmup_curve = curve != nullptr && curve->kind == Value::Kind::String && curve->text == "linear"
                          ? plan::WarmupCurve::linear
                          : plan::WarmupCurve::log;
  const Value* total = Entry(params, "total_num_steps");
  std::optional<int64_t> total_steps = Count(total);
  if (name == "WarmupDecayLR" && total_steps && *total_steps != loop.steps) {
    refusals.push_back({diag::Kind::NativeDeepSpeed, total,
                        fmt::format("`scheduler.params.total_num_steps = {}` with `train.steps = {}`",
                                    *total_steps, loop.steps),
                        "; accelrun decays the learning rate to 0 at the end of the run: write \"auto\", or "
                        "set `train.steps` to "
                        "the same number"});
  }
}

// Sections of the JSON that change what is trained in ways accelrun does not run. Monitoring,
// profiling and I/O sections change nothing a native run computes and are left without effect.
void RefuseSections(const Json& json, std::vector<Refusal>& refusals) {
  if (json.pipeline()) {
    refusals.push_back({diag::Kind::NativeParallelism, &json.pipeline_value(), "the DeepSpeed `pipeline` section",
                        "; accelrun runs data parallelism only (no pipeline stages)"});
  }
  using TensorParallel = spec::DeepSpeedTensorParallelConfig;
  if (const Value* tp = In(json.tensor_parallel(), &TensorParallel::autotp_size_value); Count(tp).value_or(0) > 1) {
    refusals.push_back(
        {diag::Kind::NativeParallelism, tp, "`tensor_parallel.autotp_size` above 1",
         "; accelrun splits models only through `parallelism_config.tp_size` (FSDP2), not DeepSpeed AutoTP"});
  }
  if (const Value* sp = &json.sequence_parallel_size_value(); Count(sp).value_or(1) > 1) {
    refusals.push_back({diag::Kind::NativeParallelism, sp, "`sequence_parallel_size` above 1",
                        "; accelrun runs data parallelism only (no sequence parallelism)"});
  }
  if (const Value* msamp = In(json.msamp(), &spec::DeepSpeedMsampConfig::enabled_value); Flag(msamp).value_or(false)) {
    refusals.push_back({diag::Kind::NativeFp8, msamp, "`msamp.enabled = true`",
                        "; fp8 needs MS-AMP, which exists only in Python"});
  }
  auto refuse_enabled = [&](const Value* on, std::string_view section) {
    if (!Flag(on).value_or(false)) return;
    refusals.push_back({diag::Kind::NativeDeepSpeed, on, fmt::format("`{}.enabled = true`", section),
                        "; accelrun trains every layer on every sample in the loader's order: drop the section"});
  };
  refuse_enabled(In(json.data_efficiency(), &spec::DeepSpeedDataEfficiencyConfig::enabled_value), "data_efficiency");
  refuse_enabled(In(json.hybrid_engine(), &spec::DeepSpeedHybridEngineConfig::enabled_value), "hybrid_engine");
}

// DeepSpeed's fp16 loss scaler from the JSON's `fp16` section, with DeepSpeed's defaults for
// what it leaves out: dynamic (DynamicLossScaler) unless `loss_scale` is a positive number.
plan::LossScaling JsonLossScaling(const std::optional<Json>& json) {
  using Fp16 = spec::DeepSpeedFp16Config;
  std::optional<Fp16> fp16 = Within(json, &Json::fp16);
  plan::LossScaling scaling;
  scaling.rule = plan::LossScaleRule::deepspeed;
  scaling.growth_factor = 2.0;  // DynamicLossScaler's scale_factor, not configurable
  scaling.backoff_factor = 0.5;
  scaling.init_scale = std::ldexp(1.0, static_cast<int>(Count(In(fp16, &Fp16::initial_scale_power_value)).value_or(16)));
  scaling.growth_interval = Count(In(fp16, &Fp16::loss_scale_window_value)).value_or(1000);
  scaling.hysteresis = Count(In(fp16, &Fp16::hysteresis_value)).value_or(2);
  scaling.consecutive_hysteresis = Flag(In(fp16, &Fp16::consecutive_hysteresis_value)).value_or(false);
  scaling.min_scale = Number(In(fp16, &Fp16::min_loss_scale_value)).value_or(1.0);
  if (double fixed = Number(In(fp16, &Fp16::loss_scale_value)).value_or(0); fixed > 0) {
    scaling.rule = plan::LossScaleRule::fixed;
    scaling.init_scale = fixed;
  }
  return scaling;
}

}  // namespace

plan::Sharding LowerFsdp(const std::optional<Fsdp>& plugin) {
  plan::Sharding s;
  s.engine = plan::ShardingEngine::fsdp;
  bool fsdp2 = Count(In(plugin, &Fsdp::fsdp_version_value)).value_or(1) == 2;
  if (fsdp2) {
    // FSDP2 (`fully_shard`) always shards parameters; `reshard_after_forward` (unset: true)
    // decides, and it has no backward or forward prefetch settings (FSDP-008, FSDP-013).
    s.stage = 3;
    s.reshard_after_forward = Flag(In(plugin, &Fsdp::reshard_after_forward_value)).value_or(true);
    s.backward_prefetch = plan::BackwardPrefetch::none;
  } else {
    // `accelerate launch` gives FSDP1 the strategy, never `reshard_after_forward` (LCH-FSDP-3).
    ApplyStrategy(Strategy(In(plugin, &Fsdp::sharding_strategy_value)), s);
    s.backward_prefetch = plan::BackwardPrefetch::none;
    switch (Member<spec::FSDPBackwardPrefetch>(In(plugin, &Fsdp::backward_prefetch_value))
                .value_or(spec::FSDPBackwardPrefetch::NO_PREFETCH)) {
      case spec::FSDPBackwardPrefetch::BACKWARD_PRE:
        s.backward_prefetch = plan::BackwardPrefetch::backward_pre;
        break;
      case spec::FSDPBackwardPrefetch::BACKWARD_POST:
        s.backward_prefetch = plan::BackwardPrefetch::backward_post;
        break;
      case spec::FSDPBackwardPrefetch::NO_PREFETCH:
        break;
    }
    s.forward_prefetch = Flag(In(plugin, &Fsdp::forward_prefetch_value)).value_or(false);
  }
  s.wrap_policy = plan::WrapPolicy::no_wrap;
  switch (Member<spec::FSDPAutoWrapPolicy>(In(plugin, &Fsdp::auto_wrap_policy_value))
              .value_or(spec::FSDPAutoWrapPolicy::NO_WRAP)) {
    case spec::FSDPAutoWrapPolicy::TRANSFORMER_BASED_WRAP:
      s.wrap_policy = plan::WrapPolicy::transformer_based;
      // Empty: the model's own block class, as `_no_split_modules` is for Transformers models.
      s.transformer_layer_cls_to_wrap = ClassNames(In(plugin, &Fsdp::transformer_cls_names_to_wrap_value));
      break;
    case spec::FSDPAutoWrapPolicy::SIZE_BASED_WRAP:
      s.wrap_policy = plan::WrapPolicy::size_based;
      // The launcher's default.
      s.min_num_params = Count(In(plugin, &Fsdp::min_num_params_value)).value_or(100000000);
      break;
    case spec::FSDPAutoWrapPolicy::NO_WRAP:
      break;
  }
  s.limit_all_gathers = Flag(In(plugin, &Fsdp::limit_all_gathers_value)).value_or(true);
  // The launcher's defaults: both on; loading on rank 0 alone needs the broadcast (FSDP-014).
  s.cpu_ram_efficient_loading = Flag(In(plugin, &Fsdp::cpu_ram_efficient_loading_value)).value_or(true);
  s.sync_module_states =
      Flag(In(plugin, &Fsdp::sync_module_states_value)).value_or(true) || s.cpu_ram_efficient_loading;
  s.activation_checkpointing = Flag(In(plugin, &Fsdp::activation_checkpointing_value)).value_or(false);
  // FSDP reduce-scatters each unit in its post-backward hook, while backward goes on.
  s.overlap_comm = true;
  // LOCAL_STATE_DICT (each rank's flat shard, FSDP1) is written as `sharded`: every rank writes
  // its own shard and no rank gathers, which is all LOCAL promises; the sharded layout also
  // loads into another world size, which LOCAL does not.
  std::optional<spec::FSDPStateDictType> layout = Member<spec::FSDPStateDictType>(In(plugin, &Fsdp::state_dict_type_value));
  s.state_dict_type = fsdp2 ? plan::StateDictType::sharded : plan::StateDictType::full;
  if (layout) {
    switch (*layout) {
      case spec::FSDPStateDictType::FULL_STATE_DICT:
        s.state_dict_type = plan::StateDictType::full;
        break;
      case spec::FSDPStateDictType::SHARDED_STATE_DICT:
      case spec::FSDPStateDictType::LOCAL_STATE_DICT:
        s.state_dict_type = plan::StateDictType::sharded;
        break;
    }
  }
  // FSDP's CPU offload moves parameters and gradients to host memory, and the optimizer
  // steps there, so its state lives there too.
  s.offload_params = Flag(In(plugin, &Fsdp::cpu_offload_value)).value_or(false);
  s.offload_optimizer = s.offload_params;
  return s;
}

void LowerParallelism(const spec::ParallelismConfig& config, spec::DistributedType distributed_type,
                      const std::variant<spec::MLP, spec::Transformer, spec::TorchScript>& model,
                      plan::Sharding& s, std::vector<Refusal>& refusals) {
  const Value* tp = &config.tp_size_value();
  const int64_t r = Count(&config.dp_replicate_size_value()).value_or(1);
  const int64_t d = Count(&config.dp_shard_size_value()).value_or(1);
  const int64_t t = Count(tp).value_or(1);
  // A mesh of one process changes nothing (Accelerate then replicates over every process).
  if (r * d * t <= 1) return;
  if (distributed_type != spec::DistributedType::FSDP) {
    refusals.push_back({diag::Kind::NativeParallelism, &config.value(),
                        fmt::format("`compute.parallelism_config` with `distributed_type = {}`",
                                    sema::views::MemberName(distributed_type)),
                        "; accelrun runs the parallelism mesh under FSDP version 2: set `distributed_type: FSDP` "
                        "and `fsdp_config.fsdp_version: 2`"});
    return;
  }
  s.tensor_parallel = t;
  s.dp_shard_size = d;
  s.hybrid = r > 1;
  if (t == 1) return;
  // The widths the split divides: the MLP's column-parallel outputs (every other hidden width),
  // the Transformer's feed-forward width. A TorchScript model is a runtime limit.
  std::vector<int64_t> widths;
  std::string_view hint;
  std::visit(plan::Overloaded{
                 [&](const spec::MLP& mlp) {
                   const Value& hidden = mlp.hidden();
                   for (size_t i = 0; i < hidden.items.size(); i += 2) widths.push_back(hidden.items[i].int_value);
                   hint =
                       "; each Linear pair's inner width (hidden[0], hidden[2], ...) is divided over the "
                       "tensor-parallel ranks: make it a multiple of tp_size";
                 },
                 [&](const spec::Transformer& transformer) {
                   widths.push_back(Count(&transformer.feedforward_value()).value_or(0));
                   hint =
                       "; the feed-forward width is divided over the tensor-parallel ranks: make "
                       "`feedforward` a multiple of tp_size";
                 },
                 [](const spec::TorchScript&) {},
             },
             model);
  for (int64_t width : widths) {
    if (width % t == 0) continue;
    refusals.push_back({diag::Kind::NativeParallelism, tp,
                        fmt::format("`parallelism_config.tp_size = {}` with a split width of {}", t, width),
                        std::string(hint)});
    break;
  }
}

plan::Sharding LowerDeepSpeed(const std::optional<Plugin>& plugin, const std::optional<Json>& json,
                              const DeepSpeedJob& job, plan::TrainLoop& loop, std::vector<Refusal>& refusals) {
  plan::Sharding s;
  s.engine = plan::ShardingEngine::deepspeed;
  // The plugin's stage, unset 2, is also what Accelerate writes for a JSON's "auto".
  int64_t plugin_stage = Count(In(plugin, &Plugin::zero_stage_value)).value_or(2);
  std::optional<Zero> zero = Within(json, &Json::zero_optimization);
  if (!json) {
    s.stage = plugin_stage;
  } else {
    const Value* stage = In(zero, &Zero::stage_value);
    s.stage = IsAuto(stage) ? plugin_stage : Count(stage).value_or(0);
  }
  using OffloadOptimizer = spec::DeepSpeedOffloadOptimizerConfig;
  using OffloadParam = spec::DeepSpeedOffloadParamConfig;
  s.offload_optimizer = OffloadsToCpu(In(Within(zero, &Zero::offload_optimizer), &OffloadOptimizer::device_value),
                                      In(plugin, &Plugin::offload_optimizer_device_value),
                                      "offload_optimizer.device", refusals) ||
                        Flag(In(zero, &Zero::cpu_offload_value)).value_or(false);
  s.offload_params = OffloadsToCpu(In(Within(zero, &Zero::offload_param), &OffloadParam::device_value),
                                   In(plugin, &Plugin::offload_param_device_value), "offload_param.device",
                                   refusals) ||
                     Flag(In(zero, &Zero::cpu_offload_param_value)).value_or(false);

  // Buckets: "auto" is sized from the model's width as Accelerate and transformers do.
  std::optional<int64_t> h = job.hidden_size;
  Size(In(zero, &Zero::reduce_bucket_size_value), h ? std::optional<int64_t>(*h * *h) : std::nullopt,
       s.reduce_bucket_size);
  Size(In(zero, &Zero::allgather_bucket_size_value), std::nullopt, s.allgather_bucket_size);
  Size(In(zero, &Zero::stage3_prefetch_bucket_size_value),
       h ? std::optional<int64_t>(static_cast<int64_t>(0.9 * static_cast<double>(*h * *h))) : std::nullopt,
       s.prefetch_bucket_size);
  s.param_persistence_threshold = 100000;  // DeepSpeed's default
  Size(In(zero, &Zero::stage3_param_persistence_threshold_value),
       h ? std::optional<int64_t>(10 * *h) : std::nullopt, s.param_persistence_threshold);
  Size(In(zero, &Zero::stage3_max_live_parameters_value), std::nullopt, s.max_live_parameters);
  // DeepSpeed overlaps the reduction with backward by default at stage 3 only.
  s.overlap_comm = Flag(In(zero, &Zero::overlap_comm_value)).value_or(s.stage == 3);
  s.contiguous_gradients = Flag(In(zero, &Zero::contiguous_gradients_value)).value_or(true);
  // Stage 3 fetches the next module's parameters ahead, forward and backward, a
  // prefetch_bucket_size at a time.
  s.forward_prefetch = s.stage == 3;
  s.backward_prefetch = s.stage == 3 ? plan::BackwardPrefetch::backward_pre : plan::BackwardPrefetch::none;
  // zero3_init_flag (deepspeed.zero.Init; Accelerate turns it on for a stage-3 config unless
  // set false, and off at other stages): no rank builds the whole model. Here rank 0 still does,
  // the others build its shapes and receive their shards, as cpu_ram_efficient_loading.
  s.cpu_ram_efficient_loading = s.stage == 3 && Flag(In(plugin, &Plugin::zero3_init_flag_value)).value_or(true);
  const Value* gather = In(zero, &Zero::stage3_gather_16bit_weights_on_model_save_value);
  bool plugin_gather = Flag(In(plugin, &Plugin::zero3_save_16bit_model_value)).value_or(false);
  s.gather_16bit_weights_on_model_save =
      IsAuto(gather) || !IsSet(gather) ? plugin_gather : Flag(gather).value_or(false);

  // Accumulation and clipping: the JSON's number, else the plugin's, else ("auto") the job's.
  const Value* json_ga = In(json, &Json::gradient_accumulation_steps_value);
  const Value* ga = Written(json_ga) ? json_ga : In(plugin, &Plugin::gradient_accumulation_steps_value);
  if (std::optional<int64_t> n = Count(ga)) loop.gradient_accumulation.num_steps = *n;
  // DeepSpeed scales fp16 losses itself, also under a plugin without a JSON (its defaults). The
  // precision, the JSON's when there is one, was decided with the job's (target.h).
  loop.loss_scaling = JsonLossScaling(json);
  loop.loss_scaling.enabled = loop.mixed_precision == plan::MixedPrecision::fp16;
  if (!json) {
    if (std::optional<double> n = Number(In(plugin, &Plugin::gradient_clipping_value))) loop.max_grad_norm = *n;
    return s;
  }
  // Unset, DeepSpeed's own default holds whatever the job says: the schema's, 1.0 since
  // DeepSpeed 0.19.3 (no clipping before).
  if (std::optional<double> n = Number(&json->gradient_clipping_value())) loop.max_grad_norm = *n;

  // The JSON's batch sizes describe the job's loader; a number must agree with it.
  int64_t micro = job.batch_size;
  if (const Value* v = &json->train_micro_batch_size_per_gpu_value(); Count(v) && *Count(v) != micro) {
    refusals.push_back(
        {diag::Kind::NativeDeepSpeed, v,
         fmt::format("`train_micro_batch_size_per_gpu = {}` with `data.batch_size = {}`", *Count(v), micro),
         "; accelrun's loader draws `data.batch_size` per process: write \"auto\", or the same number"});
  }
  int64_t global = micro * loop.gradient_accumulation.num_steps * job.world_size;
  if (const Value* v = &json->train_batch_size_value(); Count(v) && *Count(v) != global) {
    refusals.push_back(
        {diag::Kind::NativeDeepSpeed, v,
         fmt::format("`train_batch_size = {}` with {} per process x {} accumulation steps x {} processes",
                     *Count(v), micro, loop.gradient_accumulation.num_steps, job.world_size),
         fmt::format("; the job trains on {} samples per optimizer step: write \"auto\", or {}", global,
                     global)});
  }
  if (std::optional<spec::DeepSpeedOptimizerConfig> optimizer = json->optimizer())
    LowerOptimizer(*optimizer, loop, refusals);
  if (std::optional<spec::DeepSpeedSchedulerConfig> scheduler = json->scheduler())
    LowerScheduler(*scheduler, loop, refusals);
  RefuseSections(*json, refusals);
  return s;
}

}  // namespace accel::lower
