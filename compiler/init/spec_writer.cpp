// WriteSpec: the answers as `.accel` text. The formatter lays it out afterwards, so this only
// has to be correct, not pretty.
#include <fmt/format.h>

#include "compiler/init/init.h"

namespace accel::init {
namespace {

// A `.accel` string literal; answers hold no control characters (the questions refuse them).
std::string Quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
  return out + "\"";
}

// A float literal: a dot or an exponent keeps `1` a float.
std::string FloatLiteral(const std::string& text) {
  return text.find_first_of(".eE") == std::string::npos ? text + ".0" : text;
}

class Block {
 public:
  void Line(const std::string& statement) { text_ += statement + "\n"; }
  // `field = value` when the question was asked.
  void FieldIfAsked(const Answers& answers, const std::string& id, const std::string& field,
                    std::string (*literal)(const std::string&) = nullptr) {
    if (!answers.Has(id) || answers.Get(id).empty()) return;
    Line(field + " = " + (literal ? literal(answers.Get(id)) : answers.Get(id)));
  }
  std::string Close(const std::string& name) const { return name + " {\n" + text_ + "}\n"; }
  bool empty() const { return text_.empty(); }

 private:
  std::string text_;
};

std::string DeepSpeedBlock(const Answers& a) {
  Block ds;
  ds.FieldIfAsked(a, "zero_stage", "zero_stage");
  ds.FieldIfAsked(a, "offload_optimizer_device", "offload_optimizer_device");
  ds.FieldIfAsked(a, "offload_optimizer_nvme_path", "offload_optimizer_nvme_path", Quoted);
  ds.FieldIfAsked(a, "offload_param_device", "offload_param_device");
  ds.FieldIfAsked(a, "offload_param_nvme_path", "offload_param_nvme_path", Quoted);
  // `accelerate config` writes the steps into the DeepSpeed section: the plugin reads them there.
  ds.FieldIfAsked(a, "gradient_accumulation_steps", "gradient_accumulation_steps");
  ds.FieldIfAsked(a, "gradient_clipping", "gradient_clipping", FloatLiteral);
  ds.FieldIfAsked(a, "zero3_save_16bit_model", "zero3_save_16bit_model");
  ds.FieldIfAsked(a, "zero3_init_flag", "zero3_init_flag");
  ds.FieldIfAsked(a, "multinode_launcher", "multinode_launcher");
  ds.FieldIfAsked(a, "hostfile", "hostfile", Quoted);
  return ds.Close("deepspeed_config");
}

std::string FsdpBlock(const Answers& a) {
  Block fsdp;
  fsdp.FieldIfAsked(a, "fsdp_version", "fsdp_version");
  fsdp.FieldIfAsked(a, "sharding_strategy", "sharding_strategy");
  fsdp.FieldIfAsked(a, "reshard_after_forward", "reshard_after_forward");
  fsdp.FieldIfAsked(a, "cpu_offload", "cpu_offload");
  fsdp.FieldIfAsked(a, "auto_wrap_policy", "auto_wrap_policy");
  if (std::string classes = a.Get("transformer_cls_names_to_wrap"); !classes.empty()) {
    // A list, not the questionnaire's one comma-separated string: the same to Accelerate, and
    // each name reads on its own.
    std::vector<std::string> names;
    for (size_t start = 0; start <= classes.size();) {
      size_t comma = classes.find(',', start);
      if (comma == std::string::npos) comma = classes.size();
      names.push_back(Quoted(classes.substr(start, comma - start)));
      start = comma + 1;
    }
    fsdp.Line(fmt::format("transformer_cls_names_to_wrap = [{}]", fmt::join(names, ", ")));
  }
  fsdp.FieldIfAsked(a, "min_num_params", "min_num_params");
  fsdp.FieldIfAsked(a, "state_dict_type", "state_dict_type");
  return fsdp.Close("fsdp_config");
}

}  // namespace

std::string WriteSpec(const Answers& a) {
  const std::string type = a.DistributedType();
  Block compute;
  // Written although it is the default: `accelerate config` writes it, and so the YAML says it.
  compute.Line("compute_environment = LOCAL_MACHINE");
  compute.Line("distributed_type = " + type);
  compute.FieldIfAsked(a, "mixed_precision", "mixed_precision");
  // `accelerate config` sets `use_cpu` for multi-CPU jobs without asking.
  if (type == "MULTI_CPU") {
    compute.Line("use_cpu = true");
  } else if (a.Yes("use_cpu")) {
    compute.Line("use_cpu = true");
  }
  compute.FieldIfAsked(a, "debug", "debug");
  compute.Line("num_processes = " + std::to_string(a.Int("num_processes", 1)));
  compute.FieldIfAsked(a, "num_machines", "num_machines");
  compute.FieldIfAsked(a, "machine_rank", "machine_rank");
  compute.FieldIfAsked(a, "main_process_ip", "main_process_ip", Quoted);
  compute.FieldIfAsked(a, "main_process_port", "main_process_port");
  if (type == "DEEPSPEED") compute.Line(DeepSpeedBlock(a));
  if (type == "FSDP") compute.Line(FsdpBlock(a));

  Block accelerator;
  // Under DeepSpeed the plugin's value (above) is the one Accelerate uses; the Accelerator's
  // must agree with it.
  accelerator.FieldIfAsked(a, "gradient_accumulation_steps", "gradient_accumulation_steps");
  accelerator.FieldIfAsked(a, "seed", "seed");

  // One step draws a batch on every process: the data must hold them all (JOB-002).
  constexpr int64_t kBatchSize = 32;  // SyntheticRegression's default batch_size
  constexpr int64_t kSamples = 1024;  // and its default samples
  int64_t processes = a.Int("num_processes", 1);
  std::string data =
      processes * kBatchSize > kSamples
          ? fmt::format("SyntheticRegression {{ features = 16; samples = {} }}", processes * kBatchSize)
          : "SyntheticRegression { features = 16 }";

  std::string name = a.Has("job_name") ? a.Get("job_name") : a.Get("default_job_name");
  return "// Written by `accelc init`; `accelc check` checks it, `accelc export --to accelerate-yaml`\n"
         "// writes its `compute` as the config file `accelerate launch` reads.\n"
         "job " +
         name + " {\n" + compute.Close("compute") +
         (accelerator.empty() ? "" : accelerator.Close("accelerator")) +
         "\n"
         "// The questions do not describe the workload: the model, data and training loop below are\n"
         "// the smallest complete ones. Replace them with yours.\n"
         "model = MLP { inputs = 16 }\n"
         "data = " +
         data +
         "\n"
         "train { steps = 100 }\n"
         "}\n";
}

}  // namespace accel::init
