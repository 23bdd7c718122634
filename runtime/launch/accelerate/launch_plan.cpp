// Accelerate's launch decisions (commands/launch.py: _validate_launch_command, launch_command;
// utils/launch.py: prepare_simple_launcher_cmd_env, prepare_multi_gpu_env,
// prepare_deepspeed_cmd_env), reproduced step by step so that a script launched by accelrun
// finds exactly the environment `accelerate launch` gives it. Where Accelerate's behaviour is
// surprising (a config value its argparse default hides, a string compared with an int), this
// keeps it and says so: docs/launch.md lists each.
//
// This file holds the launchers (the simple one, torchrun's, DeepSpeed's) with their commands
// and rendezvous; the config's merge is launch_config.cpp's, each feature's variables
// launch_env.cpp's.
#include "runtime/launch/accelerate/launch_plan.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/launch/accelerate/launch_plan_internal.h"

namespace accel::rt::launch::accelerate {
namespace {

// The script's command: `python [-m] script args`, or the program itself with --no_python.
// torchrun adds `-u` for its workers.
llvm::Expected<std::vector<std::string>> ScriptCommand(const LaunchNamespace& ns, const std::string& script,
                                                       const std::vector<std::string>& script_args,
                                                       const Host& host, bool unbuffered) {
  bool module = Flag(ns, "module");
  bool no_python = Flag(ns, "no_python");
  if (module && no_python) return Fail("--module and --no_python cannot be used together");
  std::vector<std::string> command;
  if (!no_python) {
    command.push_back(host.python);
    if (unbuffered) command.push_back("-u");
    if (module) command.push_back("-m");
  }
  command.push_back(script);
  command.insert(command.end(), script_args.begin(), script_args.end());
  return command;
}

// torchrun's determine_local_world_size: `--nproc_per_node` is a count, or a word that counts
// this machine's devices: "gpu" the CUDA devices, "cpu" the logical CPUs, and "auto" the CUDA
// devices when there are any, else the CPUs. A config file's `num_processes: auto` reaches it
// unchanged on one machine.
llvm::Expected<int64_t> LocalWorldSize(const PyValue& nproc_per_node, const Host& host) {
  if (std::optional<int64_t> count = AsInt(nproc_per_node)) return *count;
  const std::string* word = nproc_per_node.String();
  if (word != nullptr && *word == "cpu") return host.logical_cpus;
  if (word != nullptr && *word == "gpu") {
    if (host.cuda_devices == 0) return Fail("Cuda is not available.");
    return host.cuda_devices;
  }
  if (word != nullptr && *word == "auto") return host.cuda_devices > 0 ? host.cuda_devices : host.logical_cpus;
  if (nproc_per_node.IsNone()) return 1;
  return Fail(fmt::format("Unsupported nproc_per_node value: {}", Str(nproc_per_node)));
}

// The rendezvous of the torchrun launches (prepare_multi_gpu_env, prepare_deepspeed_cmd_env).
llvm::Error PlaceTorchrun(LaunchNamespace& ns, const Host& host, ScriptLaunch& launch) {
  std::optional<int64_t> port = AsInt(ns.Get("main_process_port"));
  int64_t chosen_port = !port ? 29500 : *port == 0 ? host.free_port() : *port;
  ns.Set("main_process_port", {chosen_port});
  int64_t machines = AsInt(ns.Get("num_machines")).value_or(1);
  int64_t machine_rank = AsInt(ns.Get("machine_rank")).value_or(0);
  launch.master_port = static_cast<int>(chosen_port);
  // Several machines divide the total (`num_processes // num_machines`), which only a number can.
  if (machines > 1 && !ns.Get("num_processes").IsNone() && !AsInt(ns.Get("num_processes")))
    return Fail(fmt::format("unsupported operand type(s) for //: 'str' and 'int' (`num_processes` is {})",
                            Repr(ns.Get("num_processes"))));
  llvm::Expected<int64_t> local = LocalWorldSize(ns.Get("num_processes"), host);
  if (!local) return local.takeError();
  int64_t processes = *local;
  if (machines > 1) {
    launch.nproc_per_node = static_cast<int>(processes / machines);
    launch.nnodes = static_cast<int>(machines);
    launch.node_rank = static_cast<int>(machine_rank);
    // torchrun's static rendezvous reads the address from the endpoint (or --master_addr with
    // same_network): either way the main process's.
    launch.master_addr = Str(ns.Get("main_process_ip"));
  } else {
    launch.nproc_per_node = static_cast<int>(processes);
  }
  launch.max_restarts = static_cast<int>(AsInt(ns.Get("max_restarts")).value_or(0));
  launch.role = Str(ns.Get("role"));
  if (launch.nproc_per_node < 1)
    return Fail(fmt::format("`num_processes` is {}: nothing to start", processes));
  return llvm::Error::success();
}

llvm::Expected<ScriptLaunch> SimpleLaunch(const LaunchNamespace& ns, const std::string& script,
                                          const std::vector<std::string>& script_args, const Host& host) {
  ScriptLaunch launch;
  launch.launcher = "simple";
  if (Flag(ns, "no_python") && Flag(ns, "module"))
    return Fail("--module and --no_python cannot be used together");
  std::optional<int64_t> processes = AsInt(ns.Get("num_processes"));
  int64_t machines = AsInt(ns.Get("num_machines")).value_or(1);
  if (!ns.Get("mpirun_hostfile").IsNone()) {
    // mpirun starts the processes: its flavour (Open MPI, or Intel MPI and MVAPICH) picks the flags.
    llvm::Expected<Mpirun> mpirun = host.find_mpirun();
    if (!mpirun) return mpirun.takeError();
    launch.launcher = "mpirun";
    int per_node = processes && *processes && machines ? static_cast<int>(*processes / machines) : 1;
    launch.command = MpirunCommand(mpirun->path, mpirun->flavor, Str(ns.Get("mpirun_hostfile")), per_node,
                                   static_cast<int>(processes.value_or(0)), {});
    // Accelerate leaves the total out when it has none.
    if (!processes || *processes == 0) {
      auto n = std::find(launch.command.begin(), launch.command.end(), "-n");
      launch.command.erase(n, n + 2);
    }
  }
  llvm::Expected<std::vector<std::string>> command = ScriptCommand(ns, script, script_args, host, false);
  if (!command) return command.takeError();
  launch.command.insert(launch.command.end(), command->begin(), command->end());

  std::map<std::string, std::string>& env = launch.env;
  bool use_cpu = Truthy(ns.Get("cpu")) || Truthy(ns.Get("use_cpu"));
  env["ACCELERATE_USE_CPU"] = Str(Truthy(ns.Get("cpu")) ? ns.Get("cpu") : ns.Get("use_cpu"));
  if (Flag(ns, "debug")) env["ACCELERATE_DEBUG_MODE"] = "true";
  SetVisibleDevices(ns, env);
  if (machines > 1) {
    if (ns.Get("main_process_ip").IsNone())
      return Fail("When using multiple machines, you need to specify the main process IP.");
    if (ns.Get("main_process_port").IsNone())
      return Fail("When using multiple machines, you need to specify the main process port.");
  }
  if ((processes && *processes > 1) || machines > 1) {
    env["MASTER_ADDR"] = ns.Get("main_process_ip").IsNone() ? "127.0.0.1" : Str(ns.Get("main_process_ip"));
    env["MASTER_PORT"] = ns.Get("main_process_port").IsNone() ? "29500" : Str(ns.Get("main_process_port"));
  }
  if (use_cpu) {
    env["KMP_AFFINITY"] = "granularity=fine,compact,1,0";
    env["KMP_BLOCKTIME"] = "1";
  }
  if (llvm::Error error = SetMixedPrecision(ns, env)) return error;
  if (llvm::Error error = SetDynamo(ns, env)) return error;
  env["OMP_NUM_THREADS"] = Str(ns.Get("num_cpu_threads_per_process"));
  if (Flag(ns, "enable_cpu_affinity")) env["ACCELERATE_CPU_AFFINITY"] = "1";
  return launch;
}

llvm::Expected<ScriptLaunch> MultiGpuLaunch(LaunchNamespace ns, const std::string& script,
                                            const std::vector<std::string>& script_args, const Host& host) {
  ScriptLaunch launch;
  launch.runner = Runner::kTorchrun;
  launch.launcher = "torchrun";
  if (llvm::Error error = PlaceTorchrun(ns, host, launch)) return error;
  llvm::Expected<std::vector<std::string>> command = ScriptCommand(ns, script, script_args, host, true);
  if (!command) return command.takeError();
  launch.command = std::move(*command);
  std::map<std::string, std::string>& env = launch.env;
  if (Flag(ns, "debug")) env["ACCELERATE_DEBUG_MODE"] = "true";
  SetVisibleDevices(ns, env);
  if (llvm::Error error = SetMixedPrecision(ns, env)) return error;
  if (llvm::Error error = SetDynamo(ns, env)) return error;
  if (Flag(ns, "use_fsdp")) {
    if (Truthy(ns.Get("fsdp_cpu_ram_efficient_loading")) && !Truthy(ns.Get("fsdp_sync_module_states")))
      return Fail("When using `--fsdp_cpu_ram_efficient_loading` set `--fsdp_sync_module_states` to `True`");
    SetFsdp(ns, env);
  }
  if (Flag(ns, "use_megatron_lm")) SetMegatron(ns, env);
  env["OMP_NUM_THREADS"] = Str(ns.Get("num_cpu_threads_per_process"));
  if (Flag(ns, "enable_cpu_affinity")) env["ACCELERATE_CPU_AFFINITY"] = "1";
  SetParallelismConfig(ns, env);
  return launch;
}

llvm::Expected<ScriptLaunch> DeepSpeedLaunch(LaunchNamespace ns, const Validated& validated,
                                             const std::string& script,
                                             const std::vector<std::string>& script_args, const Host& host) {
  ScriptLaunch launch;
  launch.runner = Runner::kTorchrun;
  launch.launcher = "torchrun";
  std::string multinode = ns.Get("deepspeed_multinode_launcher").IsNone()
                              ? std::string("pdsh")
                              : Str(ns.Get("deepspeed_multinode_launcher"));
  if (llvm::Error error = PlaceTorchrun(ns, host, launch)) return error;
  llvm::Expected<std::vector<std::string>> command = ScriptCommand(ns, script, script_args, host, true);
  if (!command) return command.takeError();
  launch.command = std::move(*command);
  if (launch.nnodes > 1 && multinode != "standard") {
    // DeepSpeed's runner starts every machine's ranks from here (over pdsh, ssh, MPI, ...).
    launch.runner = Runner::kProcess;
    launch.launcher = "deepspeed";
    launch.command = {"deepspeed", "--hostfile", Str(ns.Get("deepspeed_hostfile"))};
    if (multinode == "nossh")
      launch.command.insert(launch.command.end(), {"--node_rank", Str(ns.Get("machine_rank")), "--no_ssh"});
    else
      launch.command.insert(launch.command.end(), {"--no_local_rank", "--launcher", multinode});
    if (!ns.Get("deepspeed_exclusion_filter").IsNone())
      launch.command.insert(launch.command.end(), {"--exclude", Str(ns.Get("deepspeed_exclusion_filter"))});
    else if (!ns.Get("deepspeed_inclusion_filter").IsNone())
      launch.command.insert(launch.command.end(), {"--include", Str(ns.Get("deepspeed_inclusion_filter"))});
    else
      launch.command.insert(launch.command.end(), {"--num_gpus", std::to_string(launch.nproc_per_node)});
    if (Truthy(ns.Get("main_process_ip")))
      launch.command.insert(launch.command.end(), {"--master_addr", Str(ns.Get("main_process_ip"))});
    launch.command.insert(launch.command.end(), {"--master_port", std::to_string(launch.master_port)});
    if (Flag(ns, "module")) launch.command.push_back("--module");
    if (Flag(ns, "no_python")) launch.command.push_back("--no_python");
    launch.command.push_back(script);
    launch.command.insert(launch.command.end(), script_args.begin(), script_args.end());
    launch.deepspeed_env_file = true;
  }
  std::map<std::string, std::string>& env = launch.env;
  if (Flag(ns, "debug")) env["ACCELERATE_DEBUG_MODE"] = "true";
  SetVisibleDevices(ns, env);
  // env_var_path_add: the inherited PYTHONPATH's non-empty entries, then the working directory.
  std::string pythonpath;
  auto inherited = host.env.find("PYTHONPATH");
  if (inherited != host.env.end()) {
    size_t start = 0;
    const std::string& paths = inherited->second;
    while (start <= paths.size()) {
      size_t colon = std::min(paths.find(':', start), paths.size());
      if (colon > start) pythonpath += paths.substr(start, colon - start) + ":";
      start = colon + 1;
    }
  }
  env["PYTHONPATH"] = pythonpath + host.cwd;
  // What importing DeepSpeed in Accelerate's process sets (os.environ.setdefault), which its
  // workers inherit.
  if (!host.env.count("PYTORCH_NVML_BASED_CUDA_CHECK")) env["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1";
  if (llvm::Error error = SetMixedPrecision(ns, env)) return error;
  // The DeepSpeed settings the config file's section gave (the script's DeepSpeedPlugin must not
  // also take them from a DeepSpeed JSON), and the mixed precision when the file chose it.
  std::vector<std::string> fields;
  if (validated.defaults) {
    const PyValue* section = Lookup(*validated.defaults, "deepspeed_config");
    if (const auto* dict = section ? std::get_if<PyDict>(&section->value) : nullptr)
      for (const auto& [key, value] : *dict) fields.push_back(key);
  }
  if (validated.mp_from_config) fields.push_back("mixed_precision");
  env["ACCELERATE_CONFIG_DS_FIELDS"] = Lower(fmt::format("{}", fmt::join(fields, ",")));
  env["ACCELERATE_USE_DEEPSPEED"] = "true";
  const std::tuple<const char*, const char*, bool> settings[] = {
      {"zero_stage", "ACCELERATE_DEEPSPEED_ZERO_STAGE", false},
      {"gradient_accumulation_steps", "ACCELERATE_GRADIENT_ACCUMULATION_STEPS", false},
      {"gradient_clipping", "ACCELERATE_GRADIENT_CLIPPING", true},
      {"offload_optimizer_device", "ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE", true},
      {"offload_param_device", "ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE", true},
      {"zero3_init_flag", "ACCELERATE_DEEPSPEED_ZERO3_INIT", true},
      {"zero3_save_16bit_model", "ACCELERATE_DEEPSPEED_ZERO3_SAVE_16BIT_MODEL", true},
      {"deepspeed_config_file", "ACCELERATE_DEEPSPEED_CONFIG_FILE", false},
  };
  for (const auto& [dest, variable, lower] : settings) {
    const PyValue& value = ns.Get(dest);
    if (!value.IsNone()) env[variable] = lower ? Lower(Str(value)) : Str(value);
  }
  if (Flag(ns, "enable_cpu_affinity")) env["ACCELERATE_CPU_AFFINITY"] = "1";
  if (!ns.Get("deepspeed_moe_layer_cls_names").IsNone())
    env["ACCELERATE_DEEPSPEED_MOE_LAYER_CLS_NAMES"] = Str(ns.Get("deepspeed_moe_layer_cls_names"));
  SetParallelismConfig(ns, env);
  return launch;
}

}  // namespace

llvm::Error CheckPort(ScriptLaunch& launch, const Host& host, bool starts_every_rank) {
  bool rendezvous = launch.runner == Runner::kTorchrun || launch.launcher == "deepspeed";
  if (!rendezvous || launch.node_rank != 0) return llvm::Error::success();
  if (!host.port_in_use(launch.master_port)) return llvm::Error::success();
  if (launch.nnodes > 1 || !starts_every_rank)
    return Fail(fmt::format(
        "Tried to launch distributed communication on port `{}`, but another process is utilizing it. Please "
        "specify a different port (such as using the `--main_process_port` flag or specifying a different "
        "`main_process_port` in your config file) and rerun your script. To automatically use the next open "
        "port "
        "(on a single node), you can set this to `0`.",
        launch.master_port));
  // Accelerate's standalone mode: a free port of this machine, and torchrun's new run id.
  int requested = launch.master_port;
  launch.master_port = host.free_port();
  launch.run_id = host.new_run_id();
  launch.warnings.push_back(fmt::format("Port `{}` is already in use; using the free port {} instead",
                                        requested, launch.master_port));
  return llvm::Error::success();
}

llvm::Expected<ScriptLaunch> PlanScriptLaunch(LaunchNamespace ns, const std::optional<ConfigFile>& config,
                                              const std::string& script,
                                              const std::vector<std::string>& script_args, const Host& host) {
  llvm::Expected<Validated> validated = Validate(std::move(ns), config, host);
  if (!validated) return validated.takeError();
  const LaunchNamespace& args = validated->ns;
  bool cpu = Flag(args, "cpu");
  llvm::Expected<ScriptLaunch> launch = [&]() -> llvm::Expected<ScriptLaunch> {
    if (Flag(args, "use_deepspeed") && !cpu)
      return DeepSpeedLaunch(args, *validated, script, script_args, host);
    if ((Flag(args, "use_fsdp") || Flag(args, "use_megatron_lm") || Flag(args, "multi_gpu")) && !cpu)
      return MultiGpuLaunch(args, script, script_args, host);
    if (Flag(args, "tpu") && !cpu)
      return Fail(
          "XLA (TPU) launches run the script inside Accelerate's own Python process (torch_xla's xmp.spawn), "
          "which accelrun does not start; run `accelerate launch` for them");
    return SimpleLaunch(args, script, script_args, host);
  }();
  if (!launch) return launch.takeError();
  launch->distributed_type = Flag(args, "use_deepspeed")     ? "DEEPSPEED"
                             : Flag(args, "use_fsdp")        ? "FSDP"
                             : Flag(args, "use_megatron_lm") ? "MEGATRON_LM"
                             : Flag(args, "multi_gpu")       ? "MULTI_GPU"
                                                             : "NO";
  launch->warnings.insert(launch->warnings.begin(), validated->warnings.begin(), validated->warnings.end());
  // Only what Accelerate changes: a variable it sets to the inherited value is no change.
  for (auto it = launch->env.begin(); it != launch->env.end();) {
    auto inherited = host.env.find(it->first);
    it = inherited != host.env.end() && inherited->second == it->second ? launch->env.erase(it)
                                                                        : std::next(it);
  }
  return launch;
}

std::vector<WorkerPlace> LocalPlaces(const ScriptLaunch& launch) {
  std::vector<WorkerPlace> places;
  for (int local = 0; local < launch.nproc_per_node; ++local)
    places.push_back({launch.node_rank * launch.nproc_per_node + local, local, launch.nproc_per_node,
                      launch.nproc_per_node * launch.nnodes, launch.node_rank, launch.nnodes});
  return places;
}

std::map<std::string, std::string> TorchrunWorkerEnvironment(
    const ScriptLaunch& launch, const WorkerPlace& place, int restart_count, const std::string& error_file,
    const std::map<std::string, std::string>& inherited) {
  std::map<std::string, std::string> env = {
      {"RANK", std::to_string(place.rank)},
      {"LOCAL_RANK", std::to_string(place.local_rank)},
      {"GROUP_RANK", std::to_string(place.node_rank)},
      {"ROLE_RANK", std::to_string(place.rank)},
      {"ROLE_NAME", launch.role},
      {"LOCAL_WORLD_SIZE", std::to_string(place.local_world_size)},
      {"WORLD_SIZE", std::to_string(place.world_size)},
      {"GROUP_WORLD_SIZE", std::to_string(place.nnodes)},
      {"ROLE_WORLD_SIZE", std::to_string(place.world_size)},
      {"MASTER_ADDR", launch.master_addr},
      {"MASTER_PORT", std::to_string(launch.master_port)},
      {"TORCHELASTIC_RESTART_COUNT", std::to_string(restart_count)},
      {"TORCHELASTIC_MAX_RESTARTS", std::to_string(launch.max_restarts)},
      {"TORCHELASTIC_RUN_ID", launch.run_id},
      // torchrun's agent sets it in its own environment, which its workers inherit.
      {"TORCHELASTIC_SIGNALS_TO_HANDLE", "SIGTERM,SIGINT,SIGHUP,SIGQUIT"},
  };
  if (!error_file.empty()) env["TORCHELASTIC_ERROR_FILE"] = error_file;
  // torchrun limits each of several workers to one OpenMP thread unless the variable is set.
  if (place.local_world_size > 1 && !inherited.count("OMP_NUM_THREADS") &&
      !launch.env.count("OMP_NUM_THREADS"))
    env["OMP_NUM_THREADS"] = "1";
  auto async = inherited.find("TORCH_NCCL_ASYNC_ERROR_HANDLING");
  if (async == inherited.end()) env["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "1";
  return env;
}

}  // namespace accel::rt::launch::accelerate
