// The questionnaire's one table: what `accelc init` asks, in `accelerate config`'s order, and
// how each answer is validated against the schema and the earlier answers.
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <regex>

#include <fmt/format.h>

#include "compiler/cli/arguments.h"
#include "compiler/init/init.h"
#include "compiler/interop/interop.h"

namespace accel::init {
namespace {

// The machine types a job's `compute` can launch, as `accelerate config` lists them, and the
// `DistributedType` member each selects. TPUs (XLA) and Megatron-LM have questionnaires of their
// own that `accelc init` does not ask.
const std::vector<std::pair<std::string, std::string>>& MachineTypes() {
  static const std::vector<std::pair<std::string, std::string>> kTypes = {
      {"no", "NO"},
      {"multi-CPU", "MULTI_CPU"},
      {"multi-GPU", "MULTI_GPU"},
      {"multi-NPU", "MULTI_NPU"},
      {"multi-XPU", "MULTI_XPU"},
      {"multi-HPU", "MULTI_HPU"},
      {"multi-MLU", "MULTI_MLU"},
      {"multi-SDAA", "MULTI_SDAA"},
      {"multi-MUSA", "MULTI_MUSA"},
      {"multi-NEURON", "MULTI_NEURON"},
  };
  return kTypes;
}

std::optional<std::string> Fixed(std::string value) { return value; }

// A choice question over the members of the schema's enum `name`, shown by serialized value
// when the enum has values (`no`, `fp16`) and by name otherwise.
Question EnumQuestion(const sema::Schema& schema, std::string id, std::string text, std::string_view name) {
  Question question{.id = std::move(id), .text = std::move(text), .kind = AnswerKind::kChoice};
  auto found = schema.enums.find(name);
  // The stdlib is embedded and tested: a missing enum is a bug, and an empty choice list would
  // refuse every answer, which the property test reports.
  if (found == schema.enums.end()) return question;
  for (const sema::EnumSchema::Member& member : found->second.members) {
    question.choices.push_back(member.value.empty() ? member.name : member.value);
    question.members.push_back(member.name);
  }
  return question;
}

// An integer in [low, high] given the earlier answers.
std::function<std::string(const std::string&, const Answers&)> Between(
    std::function<std::pair<int64_t, int64_t>(const Answers&)> bounds) {
  return [bounds](const std::string& answer, const Answers& earlier) -> std::string {
    auto [low, high] = bounds(earlier);
    int64_t value = std::strtoll(answer.c_str(), nullptr, 10);
    if (value < low || value > high) return fmt::format("is not an integer from {} to {}", low, high);
    return "";
  };
}
std::function<std::string(const std::string&, const Answers&)> Between(int64_t low, int64_t high) {
  return Between([low, high](const Answers&) { return std::pair{low, high}; });
}

// Text that a `.accel` string and an Accelerate YAML string both hold as typed: no control
// characters (a newline would end the answer anyway).
std::string PrintableText(const std::string& answer, const Answers&) {
  if (answer.empty()) return "is empty";
  for (unsigned char c : answer) {
    if (c < 0x20 || c == 0x7f) return "holds a control character";
  }
  return "";
}

bool Multi(const Answers& a) { return a.Get("machine_type") != "NO"; }
bool MultiMachine(const Answers& a) { return a.Int("num_machines", 1) > 1; }
bool Fsdp(const Answers& a) { return a.Get("engine") == "FSDP"; }
bool DeepSpeed(const Answers& a) { return a.Get("engine") == "DeepSpeed"; }
int64_t ZeroStage(const Answers& a) { return a.Int("zero_stage", 2); }

// Gradient accumulation: DeepSpeed's section asks it among its own settings, other engines
// near the end; `asked` says where this row of the table stands.
Question GradientAccumulation(std::function<bool(const Answers&)> asked) {
  return {.id = "gradient_accumulation_steps",
          .text = "How many gradient accumulation steps you're passing in your script?",
          .kind = AnswerKind::kInteger,
          .asked = std::move(asked),
          .default_value = [](const Answers&) { return Fixed("1"); },
          .check = Between(1, 1'000'000)};
}

}  // namespace

std::string Answers::Get(std::string_view id) const {
  auto found = values_.find(std::string(id));
  return found == values_.end() ? "" : found->second;
}

int64_t Answers::Int(std::string_view id, int64_t fallback) const {
  return Has(id) ? std::strtoll(Get(id).c_str(), nullptr, 10) : fallback;
}

std::string Answers::DistributedType() const {
  if (Get("engine") == "FSDP") return "FSDP";
  if (Get("engine") == "DeepSpeed") return "DEEPSPEED";
  return Has("machine_type") ? Get("machine_type") : "NO";
}

std::vector<Question> Questions(const sema::Schema& schema) {
  std::vector<Question> questions;
  auto add = [&](Question q) { questions.push_back(std::move(q)); };

  // ---- Where the job runs (accelerate config: the machine, then the cluster) -----------------
  Question machine{
      .id = "machine_type", .text = "Which type of machine are you using?", .kind = AnswerKind::kChoice};
  for (const auto& [shown, member] : MachineTypes()) {
    machine.choices.push_back(shown);
    machine.members.push_back(member);
  }
  machine.default_value = [](const Answers&) { return Fixed("no"); };
  add(std::move(machine));
  add({.id = "use_cpu",
       .text = "Do you want to run your training on CPU only (even if an accelerator is available)?",
       .kind = AnswerKind::kYesNo,
       .asked = [](const Answers& a) { return !Multi(a); },
       .default_value = [](const Answers&) { return Fixed("no"); }});
  add({.id = "num_machines",
       .text = "How many different machines will you use (more than 1 for multi-node training)?",
       .kind = AnswerKind::kInteger,
       .asked = Multi,
       .default_value = [](const Answers&) { return Fixed("1"); },
       .check = Between(1, 1024)});
  add({.id = "machine_rank",
       .text = "What is the rank of this machine?",
       .kind = AnswerKind::kInteger,
       .asked = MultiMachine,
       .default_value = [](const Answers&) { return Fixed("0"); },
       .check = Between([](const Answers& a) {
         return std::pair<int64_t, int64_t>{0, a.Int("num_machines", 1) - 1};
       })});
  // No default: any address would be wrong for somebody's cluster.
  add({.id = "main_process_ip",
       .text = "What is the IP address of the machine that will host the main process?",
       .kind = AnswerKind::kText,
       .asked = MultiMachine,
       .check = [](const std::string& answer, const Answers&) -> std::string {
         static const std::regex kHost("[A-Za-z0-9][A-Za-z0-9.:_-]*");
         return std::regex_match(answer, kHost) ? "" : "is not an IP address or host name";
       }});
  add({.id = "main_process_port",
       .text = "What is the port you will use to communicate with the main process?",
       .kind = AnswerKind::kInteger,
       .asked = MultiMachine,
       .default_value = [](const Answers&) { return Fixed("29500"); },
       .check = Between(1, 65535)});
  add({.id = "debug",
       .text = "Should distributed operations be checked while running for errors? This can avoid "
               "timeout issues but will be slower.",
       .kind = AnswerKind::kYesNo,
       .asked = Multi,
       .default_value = [](const Answers&) { return Fixed("no"); }});

  // ---- The engine: DDP, or FSDP or DeepSpeed on accelerators ------------------------------------
  add({.id = "engine",
       .text = "Which engine should distribute the model?",
       .kind = AnswerKind::kChoice,
       .choices = {"DDP", "FSDP", "DeepSpeed"},
       .members = {"DDP", "FSDP", "DeepSpeed"},
       .asked = [](const Answers& a) { return Multi(a) && a.Get("machine_type") != "MULTI_CPU"; },
       .default_value = [](const Answers&) { return Fixed("DDP"); }});

  // DeepSpeed, as `accelerate config` asks it without a DeepSpeed JSON file.
  add({.id = "zero_stage",
       .text = "What should be your DeepSpeed's ZeRO optimization stage?",
       .kind = AnswerKind::kChoice,
       .choices = {"0", "1", "2", "3"},
       .members = {"0", "1", "2", "3"},
       .asked = DeepSpeed,
       .default_value = [](const Answers&) { return Fixed("2"); }});
  // Accelerate documents optimizer offload for ZeRO 2 and 3, parameter offload for 3 (DS-019).
  Question offload_optimizer =
      EnumQuestion(schema, "offload_optimizer_device", "Where to offload optimizer states?", "OffloadDevice");
  offload_optimizer.asked = [](const Answers& a) { return DeepSpeed(a) && ZeroStage(a) >= 2; };
  offload_optimizer.default_value = [](const Answers&) { return Fixed("none"); };
  add(std::move(offload_optimizer));
  add({.id = "offload_optimizer_nvme_path",
       .text = "NVMe path to offload optimizer states?",
       .kind = AnswerKind::kText,
       .asked = [](const Answers& a) { return a.Get("offload_optimizer_device") == "NVME"; },
       .default_value = [](const Answers&) { return Fixed("/nvme"); },
       .check = PrintableText});
  Question offload_param =
      EnumQuestion(schema, "offload_param_device", "Where to offload parameters?", "OffloadDevice");
  offload_param.asked = [](const Answers& a) { return DeepSpeed(a) && ZeroStage(a) == 3; };
  offload_param.default_value = [](const Answers&) { return Fixed("none"); };
  add(std::move(offload_param));
  add({.id = "offload_param_nvme_path",
       .text = "NVMe path to offload parameters?",
       .kind = AnswerKind::kText,
       .asked = [](const Answers& a) { return a.Get("offload_param_device") == "NVME"; },
       .default_value = [](const Answers&) { return Fixed("/nvme"); },
       .check = PrintableText});
  add(GradientAccumulation(DeepSpeed));
  add({.id = "use_gradient_clipping",
       .text = "Do you want to use gradient clipping?",
       .kind = AnswerKind::kYesNo,
       .asked = DeepSpeed,
       .default_value = [](const Answers&) { return Fixed("no"); }});
  add({.id = "gradient_clipping",
       .text = "What is the gradient clipping value?",
       .kind = AnswerKind::kText,
       .asked = [](const Answers& a) { return a.Yes("use_gradient_clipping"); },
       .default_value = [](const Answers&) { return Fixed("1.0"); },
       .check = [](const std::string& answer, const Answers&) -> std::string {
         char* end = nullptr;
         double value = std::strtod(answer.c_str(), &end);
         if (end == answer.c_str() || *end != '\0' || !std::isfinite(value) || value <= 0)
           return "is not a positive number";
         return "";
       }});
  add({.id = "zero3_save_16bit_model",
       .text = "Do you want to save 16-bit model weights when using ZeRO Stage-3?",
       .kind = AnswerKind::kYesNo,
       .asked = [](const Answers& a) { return DeepSpeed(a) && ZeroStage(a) == 3; },
       .default_value = [](const Answers&) { return Fixed("no"); }});
  add({.id = "zero3_init_flag",
       .text = "Do you want to enable `deepspeed.zero.Init` when using ZeRO Stage-3 for constructing massive "
               "models?",
       .kind = AnswerKind::kYesNo,
       .asked = [](const Answers& a) { return DeepSpeed(a) && ZeroStage(a) == 3; },
       .default_value = [](const Answers&) { return Fixed("no"); }});
  Question launcher =
      EnumQuestion(schema, "multinode_launcher", "Which launcher should start DeepSpeed on every machine?",
                   "DeepSpeedMultinodeLauncher");
  launcher.asked = [](const Answers& a) { return DeepSpeed(a) && MultiMachine(a); };
  launcher.default_value = [](const Answers&) { return Fixed("pdsh"); };
  add(std::move(launcher));
  // Every launcher but `standard` runs `deepspeed --hostfile` (DSL-001).
  add({.id = "hostfile",
       .text = "DeepSpeed hostfile (one `hostname slots=N` line per machine)?",
       .kind = AnswerKind::kText,
       .asked =
           [](const Answers& a) {
             return a.Has("multinode_launcher") && a.Get("multinode_launcher") != "STANDARD";
           },
       .default_value = [](const Answers&) { return Fixed("/job/hostfile"); },
       .check = PrintableText});

  // FSDP, as `accelerate config` asks it.
  add({.id = "fsdp_version",
       .text = "What should be your FSDP version?",
       .kind = AnswerKind::kChoice,
       .choices = {"1", "2"},
       .members = {"1", "2"},
       .asked = Fsdp,
       .default_value = [](const Answers&) { return Fixed("2"); }});
  // FSDP1 reads the strategy; FSDP2 only whether to reshard (FSDP-004).
  Question strategy = EnumQuestion(schema, "sharding_strategy", "What should be your sharding strategy?",
                                   "FSDPShardingStrategy");
  strategy.asked = [](const Answers& a) { return Fsdp(a) && a.Get("fsdp_version") == "1"; };
  strategy.default_value = [](const Answers&) { return Fixed("FULL_SHARD"); };
  add(std::move(strategy));
  add({.id = "reshard_after_forward",
       .text = "Do you want to enable resharding after forward?",
       .kind = AnswerKind::kYesNo,
       .asked = [](const Answers& a) { return Fsdp(a) && a.Get("fsdp_version") == "2"; },
       .default_value = [](const Answers&) { return Fixed("yes"); }});
  add({.id = "cpu_offload",
       .text = "Do you want to offload parameters and gradients to CPU?",
       .kind = AnswerKind::kYesNo,
       .asked = Fsdp,
       .default_value = [](const Answers&) { return Fixed("no"); }});
  Question wrap =
      EnumQuestion(schema, "auto_wrap_policy", "What should be your auto wrap policy?", "FSDPAutoWrapPolicy");
  wrap.asked = Fsdp;
  wrap.default_value = [](const Answers&) { return Fixed("TRANSFORMER_BASED_WRAP"); };
  add(std::move(wrap));
  add({.id = "transformer_cls_names_to_wrap",
       .text = "Specify the comma-separated list of transformer layer class names (case-sensitive) to wrap, "
               "e.g. `BertLayer`, `GPTJBlock`, `T5Block`; empty uses the model's `_no_split_modules`",
       .kind = AnswerKind::kText,
       .asked = [](const Answers& a) { return a.Get("auto_wrap_policy") == "TRANSFORMER_BASED_WRAP"; },
       .default_value = [](const Answers&) { return Fixed(""); },
       .empty_default_label = "_no_split_modules",
       .check = [](const std::string& answer, const Answers&) -> std::string {
         static const std::regex kClasses("[A-Za-z_][A-Za-z0-9_]*(,[A-Za-z_][A-Za-z0-9_]*)*");
         return answer.empty() || std::regex_match(answer, kClasses)
                    ? ""
                    : "is not a comma-separated list of class names";
       }});
  add({.id = "min_num_params",
       .text = "What should be your FSDP's minimum number of parameters for Default Auto Wrapping Policy?",
       .kind = AnswerKind::kInteger,
       .asked = [](const Answers& a) { return a.Get("auto_wrap_policy") == "SIZE_BASED_WRAP"; },
       .default_value = [](const Answers&) { return Fixed("100000000"); },
       .check = Between(1, 1'000'000'000'000'000)});
  Question state_dict = EnumQuestion(schema, "state_dict_type", "What should be your FSDP's state dict type?",
                                     "FSDPStateDictType");
  state_dict.asked = Fsdp;
  // Each version's own default; FSDP2 cannot write LOCAL_STATE_DICT (FSDP-009).
  state_dict.default_value = [](const Answers& a) {
    return Fixed(a.Get("fsdp_version") == "1" ? "FULL_STATE_DICT" : "SHARDED_STATE_DICT");
  };
  state_dict.check = [](const std::string& answer, const Answers& a) -> std::string {
    if (answer == "LOCAL_STATE_DICT" && a.Get("fsdp_version") == "2")
      return "is not supported by FSDP2; choose SHARDED_STATE_DICT or FULL_STATE_DICT";
    return "";
  };
  add(std::move(state_dict));

  // ---- Processes and precision, asked last as `accelerate config` does -------------------------
  add({.id = "num_processes",
       .text = "How many processes should be used for distributed training, on all machines together?",
       .kind = AnswerKind::kInteger,
       .asked = Multi,
       .default_value = [](const Answers& a) { return Fixed(std::to_string(2 * a.Int("num_machines", 1))); },
       .check = [](const std::string& answer, const Answers& a) -> std::string {
         int64_t processes = std::strtoll(answer.c_str(), nullptr, 10);
         int64_t machines = a.Int("num_machines", 1);
         // DDP on one machine with one process is no data parallelism (CMP-002, and
         // `accelerate config` refuses it for GPUs); FSDP and DeepSpeed run on one device.
         bool ddp = a.DistributedType() != "FSDP" && a.DistributedType() != "DEEPSPEED";
         int64_t low = ddp && machines == 1 ? 2 : machines;
         constexpr int64_t kHigh = 1 << 20;
         if (processes < low || processes > kHigh)
           return fmt::format("is not an integer from {} to {}", low, kHigh);
         if (processes % machines != 0)
           return fmt::format("is not a multiple of the {} machines (each runs the same number)", machines);
         return "";
       }});
  // The same question, where `accelerate config` asks it without DeepSpeed.
  add(GradientAccumulation([](const Answers& a) { return !DeepSpeed(a); }));
  Question precision =
      EnumQuestion(schema, "mixed_precision", "Do you wish to use mixed precision?", "PrecisionType");
  precision.default_value = [](const Answers&) { return Fixed("no"); };
  add(std::move(precision));

  // ---- The job: what an Accelerate config file has no place for ---------------------------------
  add({.id = "seed",
       .text = "Which seed should every random number generator start from?",
       .kind = AnswerKind::kInteger,
       .default_value = [](const Answers&) { return Fixed("42"); },
       .check = Between(0, 4'294'967'295),  // numpy's seeds are 32-bit
       .spec_only = true});
  add({.id = "job_name",
       .text = "What is the job's name?",
       .kind = AnswerKind::kText,
       .default_value = [](const Answers& a) { return Fixed(a.Get("default_job_name")); },
       .check = [](const std::string& answer, const Answers&) -> std::string {
         // JobNameFor keeps a name as it is and turns anything else into one.
         std::string name = interop::JobNameFor(answer);
         return name == answer ? "" : fmt::format("cannot name a job; try `{}`", name);
       },
       .spec_only = true});
  return questions;
}

llvm::Expected<std::string> ReadAnswer(const Question& question, std::string_view raw,
                                       const Answers& earlier) {
  auto refuse = [&](const std::string& why) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "`%s` %s", std::string(raw).c_str(),
                                   why.c_str());
  };
  std::string text(raw);
  // Surrounding blanks are never meant; a terminal's line editing leaves them easily.
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  text.erase(0, std::min(text.size(), text.find_first_not_of(" \t")));
  if (text.empty()) {
    std::optional<std::string> fallback =
        question.default_value ? question.default_value(earlier) : std::nullopt;
    if (!fallback) {
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "an answer is needed; there is no default");
    }
    if (fallback->empty()) return std::string();  // "leave it unset"
    text = *fallback;
  }
  std::string answer;
  switch (question.kind) {
    case AnswerKind::kChoice: {
      for (size_t i = 0; i < question.choices.size() && answer.empty(); ++i) {
        auto same = [](std::string_view a, std::string_view b) {
          return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
                   return std::tolower(static_cast<unsigned char>(x)) ==
                          std::tolower(static_cast<unsigned char>(y));
                 });
        };
        if (same(text, question.choices[i]) || same(text, question.members[i])) answer = question.members[i];
      }
      if (answer.empty()) return refuse(fmt::format("is not one of {}", fmt::join(question.choices, ", ")));
      break;
    }
    case AnswerKind::kInteger: {
      std::optional<long> value =
          cli::ParseInteger(text, std::numeric_limits<long>::min(), std::numeric_limits<long>::max());
      if (!value) return refuse("is not an integer");
      answer = std::to_string(*value);
      break;
    }
    case AnswerKind::kYesNo: {
      std::string lower;
      for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (lower == "yes" || lower == "y" || lower == "true") {
        answer = "true";
      } else if (lower == "no" || lower == "n" || lower == "false") {
        answer = "false";
      } else {
        return refuse("is not yes or no");
      }
      break;
    }
    case AnswerKind::kText:
      answer = text;
      break;
  }
  if (question.check) {
    if (std::string why = question.check(answer, earlier); !why.empty()) return refuse(why);
  }
  return answer;
}

}  // namespace accel::init
