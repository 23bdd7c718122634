// JSON reading and writing of the plan: the two halves live together so they cannot drift.
#include <fmt/format.h>

#include "compiler/plan/plan.h"
#include "llvm/Support/raw_ostream.h"

namespace accel::plan {
namespace json = llvm::json;

// ---- writing ----

namespace {

json::Array IntArray(const std::vector<int64_t>& values) {
  json::Array array;
  for (int64_t v : values) array.push_back(v);
  return array;
}

json::Array StringArray(const std::vector<std::string>& values) {
  json::Array array;
  for (const std::string& v : values) array.push_back(v);
  return array;
}

json::Object StepJson(const Step& step) {
  json::Object o{{"op", std::string(OpName(step))}};
  if (const auto* s = std::get_if<InitProcessGroup>(&step)) {
    o["backend"] = s->backend;
    o["timeout_ms"] = s->timeout_ms;
    o["num_machines"] = s->num_machines;
    o["processes_per_machine"] = s->processes_per_machine;
    o["main_process_ip"] = s->main_process_ip;
    o["main_process_port"] = s->main_process_port;
  } else if (const auto* s = std::get_if<Seed>(&step)) {
    o["seed"] = s->seed;
  } else if (const auto* s = std::get_if<BuildModel>(&step)) {
    o["kind"] = s->kind;
    o["inputs"] = s->inputs;
    o["hidden"] = IntArray(s->hidden);
    o["outputs"] = s->outputs;
    o["path"] = s->path;
    o["d_model"] = s->d_model;
    o["heads"] = s->heads;
    o["layers"] = s->layers;
    o["feedforward"] = s->feedforward;
  } else if (const auto* s = std::get_if<BuildDataloader>(&step)) {
    o["kind"] = s->kind;
    o["samples"] = s->samples;
    o["features"] = s->features;
    o["outputs"] = s->outputs;
    o["noise"] = s->noise;
    o["seed"] = s->seed;
    o["path"] = s->path;
    o["targets_path"] = s->targets_path;
    o["feature_columns"] = StringArray(s->feature_columns);
    o["target_columns"] = StringArray(s->target_columns);
    o["features_key"] = s->features_key;
    o["targets_key"] = s->targets_key;
    o["targets"] = s->targets;
    o["batch_size"] = s->batch_size;
    o["shuffle"] = s->shuffle;
    o["drop_last"] = s->drop_last;
    o["split_batches"] = s->split_batches;
    o["dispatch_batches"] = s->dispatch_batches;
    o["even_batches"] = s->even_batches;
    o["use_seedable_sampler"] = s->use_seedable_sampler;
    o["data_seed"] = s->data_seed;
    o["non_blocking"] = s->non_blocking;
    o["use_stateful_dataloader"] = s->use_stateful_dataloader;
  } else if (const auto* s = std::get_if<TrainLoop>(&step)) {
    o["steps"] = s->steps;
    o["log_every"] = s->log_every;
    o["loss"] = s->loss;
    o["mixed_precision"] = s->mixed_precision;
    o["lr_schedule"] = s->lr_schedule;
    o["warmup_steps"] = s->warmup_steps;
    o["num_cycles"] = s->num_cycles;
    o["step_scheduler_with_optimizer"] = s->step_scheduler_with_optimizer;
    o["max_grad_norm"] = s->max_grad_norm;
    o["accumulation_steps"] = s->accumulation_steps;
    o["adjust_scheduler"] = s->adjust_scheduler;
    o["sync_with_dataloader"] = s->sync_with_dataloader;
    o["sync_each_batch"] = s->sync_each_batch;
    o["autocast_enabled"] = s->autocast_enabled;
    o["autocast_cache_enabled"] = s->autocast_cache_enabled;
    o["bucket_cap_mb"] = s->bucket_cap_mb;
    o["comm_hook"] = s->comm_hook;
    o["find_unused_parameters"] = s->find_unused_parameters;
    o["broadcast_buffers"] = s->broadcast_buffers;
    o["trackers"] = StringArray(s->trackers);
    o["logging_dir"] = s->logging_dir;
    o["eval_samples"] = s->eval_samples;
    o["eval_every"] = s->eval_every;
    o["find_executable_batch_size"] = s->find_executable_batch_size;
    const Optimizer& opt = s->optimizer;
    o["optimizer"] = json::Object{
        {"name", opt.name},   {"lr", opt.lr},   {"momentum", opt.momentum},        {"beta1", opt.beta1},
        {"beta2", opt.beta2}, {"eps", opt.eps}, {"weight_decay", opt.weight_decay}};
  } else if (const auto* s = std::get_if<SaveModel>(&step)) {
    o["dir"] = s->dir;
    o["file"] = s->file;
  } else if (const auto* s = std::get_if<Checkpoint>(&step)) {
    o["every_steps"] = s->every_steps;
    o["every_epoch"] = s->every_epoch;
    o["project_dir"] = s->project_dir;
    o["automatic_naming"] = s->automatic_naming;
    o["total_limit"] = s->total_limit;
    o["iteration"] = s->iteration;
    o["save_on_each_node"] = s->save_on_each_node;
    o["logging_dir"] = s->logging_dir;
  }
  return o;
}

}  // namespace

std::string ToJson(const Plan& plan) {
  json::Array steps;
  for (const Step& step : plan.steps) steps.push_back(StepJson(step));
  json::Value root =
      json::Object{{"format", plan.format}, {"job", plan.job},       {"source", plan.source},
                   {"hash", plan.hash},     {"config", plan.config}, {"steps", std::move(steps)}};
  std::string out;
  llvm::raw_string_ostream stream(out);
  // llvm::json prints object keys sorted, which makes the output deterministic.
  stream << llvm::formatv("{0:2}", root) << "\n";
  stream.flush();
  return out;
}

// ---- reading ----

bool fromJSON(const json::Value& v, Optimizer& o, json::Path p) {
  json::ObjectMapper m(v, p);
  return m && m.map("name", o.name) && m.map("lr", o.lr) && m.map("momentum", o.momentum) &&
         m.map("beta1", o.beta1) && m.map("beta2", o.beta2) && m.map("eps", o.eps) &&
         m.map("weight_decay", o.weight_decay);
}

namespace {

bool ReadStep(const json::Value& v, Step& out, json::Path p) {
  json::ObjectMapper m(v, p);
  std::string op;
  if (!m || !m.map("op", op)) return false;
  if (op == "init_process_group") {
    InitProcessGroup s;
    if (!(m.map("backend", s.backend) && m.map("timeout_ms", s.timeout_ms) &&
          m.map("num_machines", s.num_machines) && m.map("processes_per_machine", s.processes_per_machine) &&
          m.map("main_process_ip", s.main_process_ip) && m.map("main_process_port", s.main_process_port))) {
      return false;
    }
    out = s;
  } else if (op == "seed") {
    Seed s;
    if (!m.map("seed", s.seed)) return false;
    out = s;
  } else if (op == "build_model") {
    BuildModel s;
    if (!(m.map("kind", s.kind) && m.map("inputs", s.inputs) && m.map("hidden", s.hidden) &&
          m.map("outputs", s.outputs) && m.map("path", s.path) && m.map("d_model", s.d_model) &&
          m.map("heads", s.heads) && m.map("layers", s.layers) && m.map("feedforward", s.feedforward))) {
      return false;
    }
    out = s;
  } else if (op == "build_dataloader") {
    BuildDataloader s;
    if (!(m.map("kind", s.kind) && m.map("samples", s.samples) && m.map("features", s.features) &&
          m.map("outputs", s.outputs) && m.map("noise", s.noise) && m.map("seed", s.seed) &&
          m.map("path", s.path) && m.map("targets_path", s.targets_path) &&
          m.map("feature_columns", s.feature_columns) && m.map("target_columns", s.target_columns) &&
          m.map("features_key", s.features_key) && m.map("targets_key", s.targets_key) &&
          m.map("targets", s.targets) && m.map("batch_size", s.batch_size) && m.map("shuffle", s.shuffle) &&
          m.map("drop_last", s.drop_last) && m.map("split_batches", s.split_batches) &&
          m.map("dispatch_batches", s.dispatch_batches) && m.map("even_batches", s.even_batches) &&
          m.map("use_seedable_sampler", s.use_seedable_sampler) && m.map("data_seed", s.data_seed) &&
          m.map("non_blocking", s.non_blocking) &&
          m.map("use_stateful_dataloader", s.use_stateful_dataloader))) {
      return false;
    }
    out = s;
  } else if (op == "train") {
    TrainLoop s;
    if (!(m.map("steps", s.steps) && m.map("log_every", s.log_every) && m.map("loss", s.loss) &&
          m.map("mixed_precision", s.mixed_precision) && m.map("optimizer", s.optimizer) &&
          m.map("lr_schedule", s.lr_schedule) && m.map("warmup_steps", s.warmup_steps) &&
          m.map("num_cycles", s.num_cycles) &&
          m.map("step_scheduler_with_optimizer", s.step_scheduler_with_optimizer) &&
          m.map("max_grad_norm", s.max_grad_norm) && m.map("accumulation_steps", s.accumulation_steps) &&
          m.map("adjust_scheduler", s.adjust_scheduler) &&
          m.map("sync_with_dataloader", s.sync_with_dataloader) &&
          m.map("sync_each_batch", s.sync_each_batch) && m.map("autocast_enabled", s.autocast_enabled) &&
          m.map("autocast_cache_enabled", s.autocast_cache_enabled) &&
          m.map("bucket_cap_mb", s.bucket_cap_mb) && m.map("comm_hook", s.comm_hook) &&
          m.map("find_unused_parameters", s.find_unused_parameters) &&
          m.map("broadcast_buffers", s.broadcast_buffers) && m.map("trackers", s.trackers) &&
          m.map("logging_dir", s.logging_dir) && m.map("eval_samples", s.eval_samples) &&
          m.map("eval_every", s.eval_every) &&
          m.map("find_executable_batch_size", s.find_executable_batch_size))) {
      return false;
    }
    out = s;
  } else if (op == "save_model") {
    SaveModel s;
    if (!(m.map("dir", s.dir) && m.map("file", s.file))) return false;
    out = s;
  } else if (op == "checkpoint") {
    Checkpoint s;
    if (!(m.map("every_steps", s.every_steps) && m.map("every_epoch", s.every_epoch) &&
          m.map("project_dir", s.project_dir) && m.map("automatic_naming", s.automatic_naming) &&
          m.map("total_limit", s.total_limit) && m.map("iteration", s.iteration) &&
          m.map("save_on_each_node", s.save_on_each_node) && m.map("logging_dir", s.logging_dir))) {
      return false;
    }
    out = s;
  } else {
    p.field("op").report("unknown op");
    return false;
  }
  return true;
}

// Range checks: the compiler guarantees these for plans it writes; a plan edited by hand (and
// rehashed) must not crash a worker (`log_every: 0`) or disable every timeout (`timeout_ms: 0`).
std::string CheckRanges(const Plan& plan) {
  auto positive = [](int64_t value, size_t step, const char* field) -> std::string {
    if (value > 0) return "";
    return fmt::format("invalid value {} at steps[{}].{}: must be positive", value, step, field);
  };
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    std::string problem;
    const Step& step = plan.steps[i];
    if (const auto* s = std::get_if<InitProcessGroup>(&step)) {
      for (auto [value, field] : {std::pair{s->timeout_ms, "timeout_ms"},
                                  {s->num_machines, "num_machines"},
                                  {s->processes_per_machine, "processes_per_machine"}}) {
        if (problem.empty()) problem = positive(value, i, field);
      }
      if (problem.empty() && (s->main_process_port < 0 || s->main_process_port > 65535)) {
        problem = fmt::format("invalid value {} at steps[{}].main_process_port: not a port",
                              s->main_process_port, i);
      }
    } else if (const auto* s = std::get_if<BuildModel>(&step); s && s->kind == "transformer") {
      for (auto [value, field] : {std::pair{s->inputs, "inputs"},
                                  {s->outputs, "outputs"},
                                  {s->d_model, "d_model"},
                                  {s->heads, "heads"},
                                  {s->layers, "layers"},
                                  {s->feedforward, "feedforward"}}) {
        if (problem.empty()) problem = positive(value, i, field);
      }
      if (problem.empty() && s->d_model % s->heads != 0)
        problem = fmt::format("invalid value {} at steps[{}].heads: must divide d_model {}", s->heads, i,
                              s->d_model);
    } else if (const auto* s = std::get_if<BuildModel>(&step); s && s->kind == "mlp") {
      problem = positive(s->inputs, i, "inputs");
      if (problem.empty()) problem = positive(s->outputs, i, "outputs");
      for (size_t h = 0; problem.empty() && h < s->hidden.size(); ++h) {
        problem = positive(s->hidden[h], i, fmt::format("hidden[{}]", h).c_str());
      }
    } else if (const auto* s = std::get_if<BuildDataloader>(&step)) {
      problem = positive(s->batch_size, i, "batch_size");
      if (s->kind == "synthetic_regression") {
        for (auto [value, field] :
             {std::pair{s->samples, "samples"}, {s->features, "features"}, {s->outputs, "outputs"}}) {
          if (problem.empty()) problem = positive(value, i, field);
        }
      }
    } else if (const auto* s = std::get_if<TrainLoop>(&step)) {
      for (auto [value, field] : {std::pair{s->steps, "steps"},
                                  {s->log_every, "log_every"},
                                  {s->bucket_cap_mb, "bucket_cap_mb"},
                                  {s->accumulation_steps, "accumulation_steps"}}) {
        if (problem.empty()) problem = positive(value, i, field);
      }
      if (problem.empty() &&
          (s->eval_samples < 0 || s->eval_every < 0 || (s->eval_every > 0 && s->eval_samples == 0))) {
        problem =
            fmt::format("invalid evaluation at steps[{}]: eval_every {} needs eval_samples > 0 (has {})", i,
                        s->eval_every, s->eval_samples);
      }
      if (problem.empty() && !(s->optimizer.lr > 0)) {
        problem =
            fmt::format("invalid value {} at steps[{}].optimizer.lr: must be positive", s->optimizer.lr, i);
      }
    } else if (const auto* s = std::get_if<Checkpoint>(&step)) {
      if (s->every_steps < 0 || (s->every_steps == 0 && !s->every_epoch))
        problem = positive(s->every_steps, i, "every_steps");
      if (problem.empty() && s->total_limit < 0) {
        problem = fmt::format("invalid value {} at steps[{}].total_limit: must be 0 (keep all) or positive",
                              s->total_limit, i);
      }
      if (problem.empty() && s->iteration < 0) {
        problem =
            fmt::format("invalid value {} at steps[{}].iteration: must not be negative", s->iteration, i);
      }
    }
    if (!problem.empty()) return problem;
  }
  return "";
}

}  // namespace

llvm::Expected<Plan> FromJson(std::string_view text, std::string_view name) {
  llvm::Expected<json::Value> parsed = json::parse(llvm::StringRef(text.data(), text.size()));
  if (!parsed) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s: invalid JSON: %s",
                                   std::string(name).c_str(), llvm::toString(parsed.takeError()).c_str());
  }
  Plan plan;
  json::Path::Root root(llvm::StringRef(name.data(), name.size()));
  json::Path path(root);
  json::ObjectMapper m(*parsed, path);
  auto fail = [&]() -> llvm::Error {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s",
                                   llvm::toString(root.getError()).c_str());
  };
  if (!m || !m.map("format", plan.format)) return fail();
  if (plan.format != kFormat) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "%s: unsupported plan format `%s` at format; this accelrun reads `%s`, "
                                   "recompile the spec with the matching accelc",
                                   std::string(name).c_str(), plan.format.c_str(),
                                   std::string(kFormat).c_str());
  }
  if (!(m.map("job", plan.job) && m.map("source", plan.source) && m.map("hash", plan.hash))) return fail();
  const json::Object* object = parsed->getAsObject();
  if (const json::Value* config = object->get("config")) plan.config = *config;
  const json::Array* steps = object->getArray("steps");
  if (steps == nullptr) {
    path.field("steps").report("expected array");
    return fail();
  }
  for (size_t i = 0; i < steps->size(); ++i) {
    Step step;
    if (!ReadStep((*steps)[i], step, path.field("steps").index(static_cast<unsigned>(i)))) return fail();
    plan.steps.push_back(std::move(step));
  }
  if (std::string problem = CheckRanges(plan); !problem.empty()) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s: %s", std::string(name).c_str(),
                                   problem.c_str());
  }
  std::string expected = ComputeHash(plan);
  if (plan.hash != expected) {
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "%s: content hash mismatch at hash: the file says `%s` but its content hashes "
        "to `%s`; the plan was edited by hand or damaged, recompile it with accelc",
        std::string(name).c_str(), plan.hash.c_str(), expected.c_str());
  }
  return plan;
}

}  // namespace accel::plan
