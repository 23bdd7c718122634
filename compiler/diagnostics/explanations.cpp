#include "compiler/diagnostics/explanations.h"

namespace accel::diag {

// Kept next to kinds.def rather than in the driver so that the docs generator can print the
// same text without depending on the driver.
const std::map<std::string, std::string, std::less<>>& Explanations() {
  static const std::map<std::string, std::string, std::less<>> table = {
      {"A0001", "A note pointing at a declaration the diagnostic above refers to."},
      {"A0002", "A note pointing at the first place a value was set."},
      {"A0003", "A note pointing at another field a broken rule reads, with its value."},
      {"A0004",
       "A file not named `.json` was read as a DeepSpeed config because more of its top-level keys are "
       "DeepSpeed's than Accelerate's. DeepSpeed, Accelerate and the Trainer load a DeepSpeed config with "
       "json.load whatever its name, so JSON text is typed as JSON.\nFix: nothing, or name it `.json`."},
      {"A0005",
       "`accelc check --for TOOL@VERSION`: the release named reads this key, and a later covered release "
       "refuses or ignores it (compiler/sema/releases.def, generated from the releases' own sources).\n"
       "Fix: nothing for that release; remove the key before upgrading."},
      {"A0006",
       "`accelc check --for TOOL@VERSION`: the file leaves a key unset whose default differs between the "
       "release named and the newest covered one (DeepSpeed 0.19.3 turned `gradient_clipping` on at 1.0), "
       "so the same file trains differently after an upgrade.\nFix: set the key to the value you mean."},
      {"A0007",
       "A config file's \"auto\" that the launcher passes on as is to a tool that resolves it: "
       "`num_processes: auto` on one machine becomes torchrun's `--nproc_per_node auto`, one process per "
       "GPU of the machine (per CPU without one), and accelrun counts the same. The count is unknown "
       "until then, so the rules that compare it are not run.\nFix: nothing; write a number to fix the "
       "count, or to launch on several machines (launch divides the total by the machines)."},
      {"A1001",
       "The parser expected something else at this point, e.g. a missing `}` or `=`.\n"
       "Fix: the message says what was expected; compare with docs/language.md.\n"
       "In YAML and JSON files this is the YAML parser's own error."},
      {"A1002",
       "A character that cannot start any token (`@`, `$`, a stray backtick).\nFix: remove it, or quote it "
       "inside a string."},
      {"A1003", "An integer literal beyond 64 bits.\nFix: use a smaller value, or a byte size (`10GB`)."},
      {"A1004",
       "A string escape other than \\\\ \\\" \\n \\t.\nFix: write the character itself, or escape the "
       "backslash."},
      {"A1005", "The file is not valid UTF-8.\nFix: re-save it as UTF-8."},
      {"A1006",
       "Nesting deeper than 256 levels: brackets, types, runs of `-`/`not`/`implies`, or an expression "
       "whose operators chain more than 256 terms (`1 + 1 + ...`: each operator is a level); in a YAML or "
       "JSON config, mappings and lists inside each other. No real spec or config needs that, and the "
       "bound keeps every reader's stack safe.\nFix: in a spec, split the expression and name its parts "
       "with `let`; in a config file, flatten the structure."},
      {"A1007", "A string literal does not end on its line.\nFix: close it with `\"`; strings are one line."},
      {"A1008",
       "The file is over 16 MiB, or a device or pipe sent more than that; specs are a few KiB.\nFix: check "
       "that the right file was passed."},
      {"A1009",
       "A number runs into letters: `10Gb`, `5sec`.\nFix: durations take ms, s, m, h; sizes B, KB, MB, GB, "
       "TB, KiB, MiB, GiB, TiB."},
      {"A1010", "A float literal overflows a double.\nFix: use a value below 1.8e308."},
      {"A1011",
       "A config file expands to more than 100,000 values or holds more than 300,000 keys, values and "
       "sections, or a spec holds more than 200,000 tokens. YAML aliases (`*name`) copy their anchor's subtree where they are used, so nested aliases "
       "multiply (the \"billion laughs\" file). Real configs have a few hundred values and real specs a "
       "few thousand tokens; reading past the limit would cost gigabytes.\nFix: write the values out, "
       "use fewer nested aliases, or keep large data in a dataset file the spec names."},
      {"A2001",
       "A type name that no schema declares (often a typo of a record name).\nFix: use the suggested name; "
       "`accelc docs` lists every type."},
      {"A2002", "A type or `let` is declared twice.\nFix: rename or delete one; the note shows the first."},
      {"A2003",
       "A field or config-file key the record does not have. Accelerate ignores unknown keys inside "
       "sections, so the setting silently does nothing there.\nFix: use the suggested name, or delete "
       "the line."},
      {"A2004", "A field is set twice in one spec.\nFix: keep one; the note shows the first."},
      {"A2005",
       "A spec file without a `job`.\nFix: add `job NAME { ... }`, or pass a schema file on purpose."},
      {"A2006", "A spec file with a second `job`; a spec holds exactly one.\nFix: move it to its own file."},
      {"A2007",
       "A value that is not a member of the field's enum (enum values are case-sensitive, as in "
       "Accelerate).\nFix: use one of the listed members; the fix-it offers the closest."},
      {"A2008",
       "A schema expression names something that is neither a field nor an enum member (or an "
       "unknown function).\nFix: correct the name in the schema."},
      {"A2009",
       "Syntax the compiler parses but does not support yet.\nFix: see the message for the issue that "
       "adds it."},
      {"A2010", "A field set by an old name.\nFix: use the new name (the fix-it does it)."},
      {"A2011",
       "A field that is deprecated; the message says what replaces it.\nFix: follow the message; "
       "Accelerate still upgrades old files, but the setting may stop working."},
      {"A2012", "`let` constants that refer to each other in a cycle.\nFix: break the cycle."},
      {"A2013",
       "A schema expression that cannot be evaluated (types do not fit, overflow).\nFix: correct the "
       "schema's `where` or `rule`."},
      {"A2014", "A rule severity other than `error` or `warning`.\nFix: use one of the two."},
      {"A2015",
       "A YAML key appears twice in one mapping; PyYAML keeps the last value silently.\nFix: delete the "
       "line you did not mean."},
      {"A2016",
       "An unquoted `NO`, `yes`, `on` or `off` is a boolean in YAML 1.1, which PyYAML (and so "
       "Accelerate) follows, so `distributed_type: NO` reaches Accelerate as `False`.\nFix: quote it: "
       "`'NO'`."},
      {"A2017", "An `accelc-ignore[...]` comment without a reason.\nFix: add `: why this is fine here`."},
      {"A2018",
       "An `accelc-ignore[...]` comment that suppresses nothing (fixed since, or a wrong code or line).\n"
       "Fix: remove it."},
      {"A2019",
       "An `import` names a file that cannot be read (missing, a directory, no permission); the path is "
       "relative to the importing file.\nFix: correct the path, or create the file."},
      {"A2020",
       "Imports that lead back to a file already being imported; the message shows the chain.\nFix: move "
       "what both files need into a third file that imports neither."},
      {"A2021",
       "`job NAME extends BASE` names no job of this file or of its imports (often a typo).\nFix: use the "
       "suggested name, or import the file that declares the base job."},
      {"A2022",
       "A chain of `extends` that returns to a job; the message shows the chain.\nFix: remove one `extends` "
       "so that the chain ends."},
      {"A2023",
       "A key its section's reader does not know, in a section that ignores such keys (DeepSpeed's top "
       "level and the sections it reads with `dict.get`, such as `fp16`, `bf16`, `optimizer`): DeepSpeed "
       "starts, and the setting has no effect. Keys starting with `_` (`_comment`) are notes and get no "
       "diagnostic.\nFix: correct the key (a suggestion is shown when one is close), move it to the "
       "section that reads it, or remove it."},
      {"A2027",
       "A DeepSpeed JSON gives a key of one of DeepSpeed's pydantic sections (zero_optimization, fp16, bf16, "
       "compile, tensor_parallel, ...) a value of another JSON type, which pydantic's lax mode converts: the "
       "text of a number (`\"3\"` for 3), 0 or 1 (and `\"yes\"`, `\"off\"`, ...) for a bool, true for 1. "
       "DeepSpeed runs with the converted value; the file says it less plainly than it could, and other "
       "readers (a spec, a linter with strict types) refuse it.\nFix: write the value the warning shows."},
      {"A3001",
       "A value of the wrong type (a string where an int is expected, a block for a union...).\nFix: write "
       "a value of the expected type, shown in the message."},
      {"A3002",
       "A value outside the range its field allows (the field's `where`). Where the constraint keeps a "
       "string to a list of names (`lower(log_level) in [\"debug\", \"info\", ...]`), the name closest "
       "to the value is offered as the fix.\nFix: pick a value that satisfies the constraint shown."},
      {"A3003",
       "An environment variable that supplies a field's default holds text that does not parse as the "
       "field's type.\nFix: correct the variable (booleans: yes/no/true/false/on/off/1/0)."},
      {"A3004", "A required field is not set.\nFix: set it; the note shows its declaration."},
      {"A3005",
       "A string reads `${VAR}` and nothing sets `VAR`: specs see only `--env` and `--env-file` (and the "
       "process environment with `--process-env`).\nFix: pass `--env VAR=...`, or give a default: "
       "`${VAR:-default}`."},
      {"A3006",
       "A DeepSpeed launch whose JSON config fixes `train_batch_size` to something other than "
       "`train_micro_batch_size_per_gpu` x `gradient_accumulation_steps` x the data-parallel processes "
       "(`num_processes` of the launch config, divided by `sequence_parallel_size`): DeepSpeed asserts this "
       "at "
       "start-up, after the job was scheduled.\nFix: set the value the message computes, or \"auto\" to let "
       "Accelerate fill it."},
      {"A2024",
       "A key of one file written in a section of another that does not read it: a DeepSpeed JSON key "
       "(`zero_optimization`, `bf16`, `train_micro_batch_size_per_gpu`, ...) in an Accelerate config's "
       "`deepspeed_config`. `accelerate launch` copies that section onto its own arguments, and a key "
       "that is none of them is dropped.\nFix: put it in the DeepSpeed JSON file and name that file "
       "with `deepspeed_config_file`, or use the section's own key for it (`zero_stage`, "
       "`offload_optimizer_device`, `mixed_precision` at the top level, ...)."},
      {"A2025",
       "A config-file key that other releases of Accelerate read and the modelled release refuses, so "
       "its loader rejects the whole file (`ipex_config`, removed in 1.13; `tp_config`, read by 1.4 to "
       "1.6). The message names the releases that accept it (compiler/sema/key_versions.def). With "
       "`--for TOOL@VERSION` it is also a key that the release named refuses and later ones read "
       "(`zero_optimization.leaf_module` under DeepSpeed 0.17.6; compiler/sema/releases.def).\nFix: "
       "follow the message (remove the section, or write its replacement), or pin the release the file "
       "was written for."},
      {"A2026",
       "A config-file key that other releases of Accelerate read and the modelled release ignores "
       "(`mpirun_config.mpirun_ccl`, read by 0.28 to 1.12): the file loads, and the setting has no "
       "effect. With `--for TOOL@VERSION`, also a key the release named ignores and later ones read.\n"
       "Fix: remove the key, or pin the release that reads it."},
      {"A3010",
       "\"auto\" in a file checked `--for deepspeed`, in a section DeepSpeed builds with its pydantic "
       "constructor (`zero_optimization`, `comms_logger`, `tensor_parallel`, `hybrid_engine`): the "
       "constructor drops the value, so DeepSpeed's default applies (`\"stage\": \"auto\"` is ZeRO "
       "stage 0). Accelerate and the Trainer would fill it in.\nFix: write the value, or check with "
       "`--for accelerate` or `--for trainer` if one of them runs the file."},
      {"A3008",
       "\"auto\" for a DeepSpeed key that neither Accelerate's DeepSpeedPlugin nor the Trainer fills in "
       "(they fill in batch sizes, accumulation, clipping, precision, optimizer and scheduler "
       "parameters, the ZeRO stage and offload, and the bucket sizes derived from the model); "
       "DeepSpeed then reads the text and fails.\nFix: write the value."},
      {"A3009",
       "\"auto\" in a file checked `--for deepspeed`: the `deepspeed` launcher fills in nothing.\nFix: "
       "write the value, or check with `--for accelerate` or `--for trainer` if one of them runs the file."},
      {"A3015",
       "A config names a file that is not of the kind the tool reads there: under /proc, /sys or /dev (the "
       "system's files, such as /proc/self/environ, which holds the environment's tokens), a FIFO, a "
       "socket, a device, or for a DeepSpeed config a file that is not a JSON object (it does not start "
       "with `{`). The tool would fail on it, hang or read what is not meant for it; Accel refuses it "
       "before reading it, and shows nothing of it, since a checked config is untrusted (a pull request "
       "can name any path).\nFix: name the JSON config you mean."},
      {"A3016",
       "`accelc check` (and so the GitHub Action and the editor) reads the files a config names only "
       "inside the checked file's repository: the nearest folder above it holding `.git`, else its own "
       "folder, with symlinks resolved. A config in a pull request could otherwise name any file the "
       "runner can read. A file outside is not read, so it is not checked.\nFix: pass "
       "`--read-outside-repo` where the configs are trusted, or move the file into the repository."},
      {"A3018",
       "An FSDP job wraps layers by class (`auto_wrap_policy = TRANSFORMER_BASED_WRAP`) and names a class "
       "its built-in model (`MLP`, `Transformer`) has no module of. Accelerate looks each named class up "
       "in the model (`FullyShardedDataParallelPlugin.set_auto_wrap_policy`) and raises for one it cannot "
       "find; the classes of a built-in model are known when the spec compiles, so the job is refused "
       "before any process starts. A TorchScript model's classes are checked when it loads.\nFix: name "
       "one of the classes the message lists (`TransformerEncoderLayer` for the built-in Transformer), or "
       "choose another wrap policy."},
      {"A3017",
       "A text value that its type restricts is not of that kind: a `host` (`main_process_ip`) must be a "
       "host name (letters, digits, `-`, `.`, `_`) or an IPv4 or IPv6 address, and a `path` holds no NUL "
       "byte. Accelerate would pass either on to torchrun or to the system, which fails far from the "
       "config, or, for a line break in an address, writes a forged line into the job's environment and "
       "logs. The offending byte is named by its code, not shown.\nFix: write the machine's name or "
       "address, such as `10.0.0.1`, or the path without the byte."},
      {"A3007",
       "A launch config names a file (a DeepSpeed JSON config) that is not there, relative to the config or "
       "to "
       "the working directory, so it could not be checked.\nFix: correct the path, or ignore the warning if "
       "the file is created on the machine that launches."},
      {"A3011",
       "`model = TorchScript { path }` names a file that is not there (relative to the spec's directory). "
       "A warning, not an error, in `check` and `build` alike: the plan may be built before the model is "
       "saved, or on another machine than the one that trains; accelrun stops before the first step, "
       "naming the file, if it is still missing.\nFix: correct the path, or save the model there with "
       "`torch.jit.save(torch.jit.script(model), path)` before the run."},
      {"A3012",
       "A padding field of `SafetensorsColumns` or `NpyColumns` (`pad_values`, `attention_mask_from`, "
       "`same_length`) names a column that the dataset's `columns` list leaves out, so the run could never "
       "pad it. Checked only when `columns` is given; otherwise accelrun checks the names against the files "
       "and stops before the first step.\nFix: correct the column's name, or add it to `columns`."},
      {"A3013",
       "An Accelerate config sets a key to null that Accelerate's loader requires only to be present: "
       "`distributed_type: null` loads (a missing `distributed_type` is refused), and `accelerate launch` "
       "then uses no distributed engine and starts one plain process. The key is checked as the value that "
       "does the same (`NO`). Other nulls are unset keys, except where launch fails on the None (A3019)."
       "\nFix: write that value, or the engine you mean."},
      {"A3014",
       "A key of an Accelerate config that `accelerate launch` hands the plugin through `str()` in an "
       "environment variable is a YAML list: `fsdp_transformer_layer_cls_to_wrap: [BertLayer]` arrives as "
       "the text `['BertLayer']`, which the plugin splits at commas, finds no such class and raises in "
       "`Accelerator.prepare` (only where it reads the key: `fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP`)."
       "\nFix: write the names as one comma-separated string, `BertLayer,T5Block`."},
      {"A3019",
       "A config sets a key to null where Accelerate or DeepSpeed reads the None as a value and fails. Most "
       "nulls are unset keys (launch fills in what None leaves open), but `compute_environment: null` makes "
       "the loader read the file as a SageMaker config, `num_machines: null` fails in launch's comparison "
       "with 1, and under `distributed_type: FSDP` launch writes the FSDP keys into the worker's environment "
       "whatever they are: `fsdp_sharding_strategy: null` becomes `FSDP_SHARDING_STRATEGY=None`, on which "
       "FullyShardedDataParallelPlugin raises. The same holds for the `parallelism_config` keys under "
       "torchrun or DeepSpeed, the dynamo flags and the Megatron-LM sizes; `machine_rank: null` fails in "
       "int() on several machines, and `use_cpu: null` in the simple launcher (NO, MULTI_CPU). In a "
       "DeepSpeed JSON, a null section is built from the None, and `torch_autocast.dtype: null` goes to "
       "DtypeEnum; both fail.\nFix: remove the key to keep its default, or write a value."},
      {"A3020",
       "A DeepSpeed JSON used through Accelerate or the Trainer has \"auto\" under a key DeepSpeed ignores "
       "(a misspelt key, or a key moved to another section), or under a key written by another name than "
       "the one Accelerate fills it by (`bfloat16.enabled` for `bf16.enabled`, `prefetch_bucket_size` for "
       "`stage3_prefetch_bucket_size`), or in `optimizer.params` or `scheduler.params` under a key they do "
       "not fill (Accelerate fills `lr` and `weight_decay`, the Trainer also `betas` and `eps`; both the "
       "warmup and total step counts). "
       "Accelerator._prepare_deepspeed walks every leaf of the file and raises \"`<key>` not found in "
       "kwargs\" for any \"auto\" it has no value for (DeepSpeedPlugin.deepspeed_config_process); it fills "
       "only the keys it computes. Checked `--for deepspeed`, nothing walks the file and the key is only "
       "unknown (A2023).\nFix: write the value, or the key's own name (`bf16`), or remove a key DeepSpeed "
       "ignores."},
      {"A4001",
       "Retired: `compute.distributed_type` named an engine accelrun did not run. Every engine now lowers "
       "(NO, MULTI_CPU, MULTI_GPU, FSDP, DEEPSPEED) or is refused with its own code (MEGATRON_LM A4004, "
       "other accelerators A4024); the row stays so that the code is never reused.\nFix: see the code the "
       "compiler reports now."},
      {"A4002",
       "A DeepSpeed setting accelrun's ZeRO engine does not run: an optimizer other than Adam, AdamW and "
       "SGD, a scheduler other than WarmupLR and WarmupDecayLR (or one that does not start from 0 or ends "
       "before the run), batch sizes in the JSON that disagree with the job's loader, or a section that "
       "rewrites the model or the data order (compression, sparse attention, progressive layer drop, "
       "curriculum, data efficiency, hybrid engine, MoE leaf modules).\nFix: write \"auto\" for the "
       "value, drop the section, or run the job under Accelerate."},
      {"A4003",
       "An FSDP setting accelrun's FSDP engine does not run: per-unit mixed-precision dtypes "
       "(`mixed_precision_policy`; the job's `mixed_precision` decides) or `ignored_modules`.\nFix: drop "
       "the setting, or run the job under Accelerate."},
      {"A4004",
       "Megatron-LM (`distributed_type = MEGATRON_LM`, `megatron_lm_config`): tensor and pipeline "
       "parallelism, which accelrun does not have.\nFix: use FSDP or DeepSpeed ZeRO for a model too large "
       "for one device, or run the job under Accelerate."},
      {"A4005",
       "fp8 training (`fp8_config`, or `mixed_precision = fp8`) needs TransformerEngine, MS-AMP or torchao, "
       "which exist only in Python.\nFix: use `bf16`, or run the job under Accelerate."},
      {"A4006",
       "Parallelism accelrun does not run: context or sequence parallelism (`parallelism_config.cp_size` or "
       "`sp_size` above 1), pipeline stages, DeepSpeed's AutoTP, the deprecated `torch_tp_plugin`, and "
       "tensor "
       "parallelism (`parallelism_config.tp_size`) where it has no split for the model (a TorchScript file, "
       "a "
       "width tp_size does not divide), with clipping, or outside FSDP version 2 (docs/sharding.md).\nFix: "
       "use tp_size with the built-in MLP or Transformer under FSDP2, set the other sizes to 1, or run the "
       "job "
       "under Accelerate."},
      {"A4007",
       "Retired: `mpirun_config` was refused because accelrun did not start mpirun. A CPU job with "
       "`mpirun_config.mpirun_hostfile` now lowers, and `accelrun plan.json` starts it through mpirun as "
       "`accelerate launch` does (docs/launch.md); the row stays so that the code is never reused.\nFix: "
       "nothing to fix."},
      {"A4008",
       "torch.compile (`dynamo_config`, `dynamo_plugin` or a `dynamo_backend` other than NO) exists only in "
       "Python.\nFix: drop the setting (the model then runs eagerly, with the same numbers), or run the job "
       "under Accelerate."},
      {"A4009",
       "bitsandbytes quantization (`accelerator.quantization`) exists only in Python.\nFix: drop it, or run "
       "the job under Accelerate."},
      {"A4010",
       "fp16 mixed precision (`mixed_precision = fp16`, or the legacy `fp16: true`) in a CPU job (NO, "
       "MULTI_CPU): its autocast and gradient scaler need CUDA. A GPU job (MULTI_GPU, FSDP, DEEPSPEED) keeps "
       "fp16, and its rehearsal on the CPU (`accelrun --device cpu`, `compute.use_cpu`) runs bf16 instead, "
       "as the launcher says.\nFix: use `mixed_precision = bf16`, or run the job on a GPU."},
      {"A4011",
       "`train.loss = cross_entropy` on `SyntheticRegression`: its targets are real numbers, not class "
       "indices.\nFix: use `loss = mse`, or a dataset file with integer class labels."},
      {"A4012",
       "Several `target_columns` with `loss = cross_entropy`: cross entropy reads one column of class "
       "indices.\nFix: name one column."},
      {"A4013",
       "`even_batches = false` on several processes without `drop_last`: ranks would draw different numbers "
       "of batches, and their collectives would no longer pair up (Accelerate needs join_uneven_inputs, "
       "which a plan cannot express).\nFix: keep `even_batches = true`, or set `drop_last`."},
      {"A4014",
       "`comm_hook = power_sgd` or `batched_power_sgd`: accelrun compresses gradient buckets with fp16 or "
       "bf16 only.\nFix: use `fp16` or `bf16`, or run the job under Accelerate."},
      {"A4015",
       "A `comm_wrapper` around an fp16/bf16 hook: the wrappers exist for PowerSGD hooks, which accelrun "
       "does not run, and would cast twice.\nFix: drop the wrapper."},
      {"A4016",
       "`ddp.dim` other than 0: accelrun's batches are split along dimension 0 only.\nFix: leave `dim = 0`."},
      {"A4017",
       "`gradient_as_bucket_view` or `static_graph`: accelrun's reducer copies gradients into its own "
       "buckets and has no graph optimizations to enable.\nFix: leave them false; the gradients are the "
       "same."},
      {"A4018",
       "A tracker in `log_with` other than `tensorboard`: accelrun writes `metrics.jsonl` and TensorBoard "
       "event files only.\nFix: use `tensorboard`, or run the job under Accelerate."},
      {"A4019",
       "`accelerator.project_config` is set, but nothing saves checkpoints (neither `train.checkpoint_every` "
       "nor `train.checkpoint_every_epoch`), so the setting would do nothing.\nFix: set "
       "`train.checkpoint_every`, or drop the setting."},
      {"A4020",
       "`init_process_group.init_method`: accelrun's workers always meet at the launch config's main process "
       "address and port.\nFix: set `compute.main_process_ip` and `main_process_port`, and drop "
       "`init_method`."},
      {"A4021",
       "`rng_types` other than `[GENERATOR]`: accelrun keeps the samplers of all ranks in step from the data "
       "seed, as synchronising `generator` does, but does not synchronise torch's global generator at each "
       "epoch.\nFix: leave `rng_types` at its default, or run the job under Accelerate."},
      {"A4022",
       "`init_process_group.backend` names a backend the job's device does not form process groups over "
       "(MPI anywhere, NCCL on an XPU, XCCL on CUDA devices, ...): accelrun forms them over Gloo on the CPU, "
       "and a plan for an accelerator names Gloo or that accelerator's own backend (NCCL, XCCL, HCCL, ...).\n"
       "Fix: use `GLOO` (or leave it unset), or run the job under Accelerate."},
      {"A4023",
       "DeepSpeed offload to NVMe (`offload_optimizer_device` / `offload_param_device = nvme`, or "
       "`\"device\": "
       "\"nvme\"` in the JSON's `offload_optimizer` / `offload_param`, ZeRO-Infinity): accelrun has no "
       "asynchronous I/O engine to page tensors through.\nFix: offload to `cpu` (host memory), or run the "
       "job under Accelerate."},
      {"A4024",
       "`distributed_type = XLA`: torch_xla compiles each step into graphs for TPU cores, and its workers "
       "form no process group that a run on the CPU could stand in for. The other accelerators' types "
       "(MULTI_XPU, MULTI_NPU, MULTI_MLU, MULTI_SDAA, MULTI_MUSA, MULTI_HPU, MULTI_NEURON) build into plans "
       "for their devices, which accelrun rehearses on the CPU (`accelrun plan.json --device cpu`).\nFix: "
       "rehearse it on the CPU with `compute.use_cpu = true` (the same world size over Gloo), use MULTI_GPU "
       "on CUDA devices, or run the job under Accelerate."},
      {"A4025",
       "A plan whose `train.sharding.stage` is above 3: the engines shard the optimizer state (1), the "
       "gradients (2) and the parameters (3), and there is no fourth thing to shard. accelc never writes "
       "one; a plan edited by hand can hold it.\nFix: use a stage from 0 to 3, or rebuild the plan from "
       "its spec."},
      {"A4026",
       "Sharded checkpoints (`state_dict_type` SHARDED_STATE_DICT) with tensor parallelism (`tp_size` above "
       "1): the sharded layout records each rank's slice of the data-parallel shards, and has no "
       "coordinates for the tensor-parallel slices inside them.\nFix: use FULL_STATE_DICT (rank 0 writes "
       "whole tensors, which resume on any mesh), or tp_size 1."},
      {"A4027",
       "Sharded checkpoints with `project_config.save_on_each_node` on more than one machine: every rank "
       "writes its slice into one folder that rank 0 finishes, so each machine's own copy would hold only "
       "its own ranks' slices and resume nowhere.\nFix: unset `save_on_each_node` and put `project_dir` on "
       "a shared file system, or use FULL_STATE_DICT."},
      {"A4028",
       "Fewer processes than machines: `num_processes` counts every machine's processes, and each "
       "machine runs num_processes / num_machines of them, rounded down, which is 0 here. (For the "
       "torchrun types the checker says so as CMP-007.)\nFix: make `num_processes` at least "
       "`num_machines`, a multiple of it."},
      {"A4030",
       "A built-in model (`MLP`, `Transformer`) on a dataset of named columns (`SafetensorsColumns`, "
       "`NpyColumns`, `TokenStream`): the built-in models read one float matrix of features.\nFix: bring a "
       "TorchScript model whose `forward` takes the columns by name and returns its loss, or read the data "
       "with `CsvDataset`, `NpyDataset` or `SafetensorsDataset`."},
      {"A4031",
       "A loss that does not fit the data: on named columns the model computes its own loss (`train.loss = "
       "model`), and on a dataset of features and targets the runtime computes it (`mse` or "
       "`cross_entropy`).\nFix: on named columns drop `train.loss` or set `model`; otherwise choose `mse` or "
       "`cross_entropy`."},
      {"A4032",
       "`model.inputs` on a dataset of features and targets: it says which `forward` input each named column "
       "feeds, and such a dataset feeds `forward` one tensor of features.\nFix: drop `model.inputs`, or read "
       "the data as named columns."},
  };
  return table;
}

}  // namespace accel::diag
