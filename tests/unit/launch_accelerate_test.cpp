// `accelerate launch` reproduced (runtime/launch/accelerate): Python's spelling of values, the
// option table, and the launches of the config files whose behaviour surprises. The oracle test
// (tests/e2e/accelerate_launch_oracle_test.py) compares the whole environment with Accelerate's
// own code; these pin the decisions one at a time, without Python.
#include <gtest/gtest.h>

#include "runtime/launch/accelerate/launch_flags.h"
#include "runtime/launch/accelerate/launch_plan.h"
#include "runtime/launch/accelerate/python_value.h"

namespace accel::rt::launch::accelerate {
namespace {

TEST(PythonValue, FloatsPrintAsPythonsRepr) {
  EXPECT_EQ(FloatRepr(1.0), "1.0");
  EXPECT_EQ(FloatRepr(0.1), "0.1");
  EXPECT_EQ(FloatRepr(1e-05), "1e-05");
  EXPECT_EQ(FloatRepr(0.0001), "0.0001");
  EXPECT_EQ(FloatRepr(1e16), "1e+16");
  EXPECT_EQ(FloatRepr(1e15), "1000000000000000.0");
  EXPECT_EQ(FloatRepr(-2.5), "-2.5");
  EXPECT_EQ(FloatRepr(123456.789), "123456.789");
  EXPECT_EQ(FloatRepr(3e-4), "0.0003");
}

TEST(PythonValue, StrOfContainersQuotesTheirStrings) {
  PyValue list{PyList{{std::string("BertLayer")}, {std::string("it's")}, {int64_t{2}}, {true}, {}}};
  EXPECT_EQ(Str(list), "['BertLayer', \"it's\", 2, True, None]");
  EXPECT_EQ(Str({std::string("plain")}), "plain");
  EXPECT_EQ(Str(PyValue{PyValue::Tuple{{{int64_t{1}}, {int64_t{0}}, {int64_t{0}}}}}), "(1, 0, 0)");
  EXPECT_EQ(Str(PyValue{PyDict{{"a", {int64_t{1}}}}}), "{'a': 1}");
  EXPECT_FALSE(Truthy({std::string("")}));
  EXPECT_TRUE(Truthy({std::string("false")}));  // a non-empty string, as in Python
}

LaunchNamespace Parse(const std::vector<std::string>& args, std::string& error) {
  LaunchNamespace ns = DefaultNamespace();
  error = cli::Parse(args, LaunchOptions(ns), [](const std::string& arg) { return "positional " + arg; });
  ns.given.insert("training_script");
  return ns;
}

TEST(LaunchFlags, BothSpellingsAndArgparseTypes) {
  std::string error;
  LaunchNamespace ns = Parse({"--num-processes=4", "--mixed_precision", "bf16", "--megatron_lm_no_load_optim",
                              "False", "--fp8_override_linear_precision", "true,false,1"},
                             error);
  ASSERT_EQ(error, "");
  EXPECT_EQ(Str(ns.Get("num_processes")), "4");
  EXPECT_EQ(Str(ns.Get("mixed_precision")), "bf16");
  // type=bool: Python's bool("False") is True.
  EXPECT_EQ(Str(ns.Get("megatron_lm_no_load_optim")), "True");
  EXPECT_EQ(Str(ns.Get("fp8_override_linear_precision")), "(1, 0, 1)");
  EXPECT_TRUE(ns.given.count("num_processes"));
  EXPECT_FALSE(ns.given.count("fsdp_offload_params"));
  EXPECT_EQ(Str(ns.Get("fsdp_offload_params")), "false");  // argparse's default, a string
  EXPECT_EQ(Str(ns.Get("fp8_pad_inner_dim")), "1");        // str_to_bool("true") of the default
}

TEST(LaunchFlags, BadValuesAreRefusedAsArgparseRefusesThem) {
  std::string error;
  Parse({"--num_processes", "two"}, error);
  EXPECT_NE(error.find("invalid int value: 'two'"), std::string::npos) << error;
  Parse({"--mixed_precision", "fp32"}, error);
  EXPECT_NE(error.find("invalid choice: 'fp32'"), std::string::npos) << error;
}

Host TestHost() {
  Host host;
  host.python = "/usr/bin/python3";
  host.cwd = "/work";
  host.physical_cores = 8;
  host.free_port = [] { return 40000; };
  return host;
}

ConfigFile Config(PyDict values) { return ConfigFile{"cfg.yaml", std::move(values)}; }

ScriptLaunch Plan(const std::vector<std::string>& flags, const std::optional<ConfigFile>& config,
                  const Host& host = TestHost()) {
  std::string error;
  LaunchNamespace ns = Parse(flags, error);
  EXPECT_EQ(error, "");
  llvm::Expected<ScriptLaunch> launch = PlanScriptLaunch(ns, config, "train.py", {"--lr", "3"}, host);
  if (!launch) {
    ADD_FAILURE() << llvm::toString(launch.takeError());
    return {};
  }
  return *launch;
}

PyValue T(const char* text) { return {std::string(text)}; }
PyValue N(int64_t n) { return {n}; }

TEST(ScriptLaunch, NoStartsOneProcessWhateverItsCount) {
  ScriptLaunch launch = Plan({}, Config({{"distributed_type", T("NO")}, {"num_processes", N(8)}}));
  EXPECT_EQ(launch.runner, Runner::kProcess);
  EXPECT_EQ(launch.command, (std::vector<std::string>{"/usr/bin/python3", "train.py", "--lr", "3"}));
  // More than one process configured: the rendezvous is set for a script that starts its own.
  EXPECT_EQ(launch.env["MASTER_PORT"], "29500");
  EXPECT_EQ(launch.env["ACCELERATE_USE_CPU"], "False");
  EXPECT_EQ(launch.env.count("RANK"), 0u);
}

TEST(ScriptLaunch, MultiCpuWithoutMpirunIsOnePlainProcess) {
  ScriptLaunch launch =
      Plan({}, Config({{"distributed_type", T("MULTI_CPU")}, {"num_processes", N(4)}, {"use_cpu", {true}}}));
  EXPECT_EQ(launch.runner, Runner::kProcess);
  EXPECT_EQ(launch.env["ACCELERATE_USE_CPU"], "True");
  EXPECT_EQ(launch.env["KMP_BLOCKTIME"], "1");
  // Unset OMP_NUM_THREADS on a CPU run: physical cores over local processes.
  EXPECT_EQ(launch.env["OMP_NUM_THREADS"], "2");
}

TEST(ScriptLaunch, MultiGpuRunsTorchrunWithTheConfigsMachineRankAndPort) {
  ScriptLaunch launch = Plan({}, Config({{"distributed_type", T("MULTI_GPU")},
                                         {"num_processes", N(8)},
                                         {"num_machines", N(2)},
                                         {"machine_rank", N(1)},
                                         {"main_process_ip", T("10.0.0.1")},
                                         {"main_process_port", N(1234)}}));
  EXPECT_EQ(launch.runner, Runner::kTorchrun);
  EXPECT_EQ(launch.nproc_per_node, 4);
  EXPECT_EQ(launch.node_rank, 1);
  EXPECT_EQ(launch.master_addr, "10.0.0.1");
  EXPECT_EQ(launch.master_port, 1234);
  EXPECT_EQ(launch.command[1], "-u");
  std::map<std::string, std::string> worker =
      TorchrunWorkerEnvironment(launch, LocalPlaces(launch)[2], 0, "", {});
  EXPECT_EQ(worker["RANK"], "6");
  EXPECT_EQ(worker["GROUP_RANK"], "1");
  EXPECT_EQ(worker["WORLD_SIZE"], "8");
  EXPECT_EQ(worker.count("TORCHELASTIC_USE_AGENT_STORE"), 0u);
}

// torchrun's --nproc_per_node words, which a config's `num_processes` reaches on one machine.
TEST(ScriptLaunch, NumProcessesAutoCountsTheDevicesAsTorchrunDoes) {
  ConfigFile config = Config({{"distributed_type", T("MULTI_GPU")}, {"num_processes", T("auto")}});
  Host gpus = TestHost();
  gpus.cuda_devices = 4;
  gpus.logical_cpus = 16;
  EXPECT_EQ(Plan({}, config, gpus).nproc_per_node, 4);
  Host cpus = TestHost();
  cpus.logical_cpus = 6;
  EXPECT_EQ(Plan({}, config, cpus).nproc_per_node, 6);
  ConfigFile deepspeed = Config({{"distributed_type", T("DEEPSPEED")}, {"num_processes", T("cpu")}});
  EXPECT_EQ(Plan({}, deepspeed, gpus).nproc_per_node, 16);
}

TEST(ScriptLaunch, NumProcessesWordsFailWhereTorchrunOrLaunchFails) {
  std::string error;
  LaunchNamespace ns = Parse({}, error);
  auto failure = [&](PyDict values, const Host& host) {
    llvm::Expected<ScriptLaunch> launch = PlanScriptLaunch(ns, Config(std::move(values)), "train.py", {}, host);
    return launch ? std::string() : llvm::toString(launch.takeError());
  };
  // Several machines divide the total, which text cannot be.
  EXPECT_NE(failure({{"distributed_type", T("MULTI_GPU")}, {"num_processes", T("auto")}, {"num_machines", N(2)},
                     {"main_process_ip", T("10.0.0.1")}},
                    TestHost())
                .find("unsupported operand type(s) for //"),
            std::string::npos);
  EXPECT_NE(failure({{"distributed_type", T("MULTI_GPU")}, {"num_processes", T("gpu")}}, TestHost())
                .find("Cuda is not available."),
            std::string::npos);
  EXPECT_NE(failure({{"distributed_type", T("FSDP")}, {"num_processes", T("many")}}, TestHost())
                .find("Unsupported nproc_per_node value: many"),
            std::string::npos);
}

TEST(ScriptLaunch, PortZeroPicksAFreeOneAndAPortInUseMovesOnOneMachine) {
  ConfigFile config =
      Config({{"distributed_type", T("MULTI_GPU")}, {"num_processes", N(2)}, {"main_process_port", N(0)}});
  EXPECT_EQ(Plan({}, config).master_port, 40000);
  Host busy = TestHost();
  busy.port_in_use = [](int port) { return port == 29500; };
  ScriptLaunch moved =
      Plan({}, Config({{"distributed_type", T("MULTI_GPU")}, {"num_processes", N(2)}}), busy);
  EXPECT_EQ(moved.master_port, 29500);  // decided once the placement is final
  ASSERT_FALSE(CheckPort(moved, busy, /*starts_every_rank=*/true));
  EXPECT_EQ(moved.master_port, 40000);
  EXPECT_EQ(moved.run_id, "standalone");  // torchrun's standalone launch has a run id of its own
  EXPECT_FALSE(moved.warnings.empty());
  // A launcher of some of the ranks (a scheduler's task) cannot tell the others a new port.
  ScriptLaunch task = Plan({}, Config({{"distributed_type", T("MULTI_GPU")}, {"num_processes", N(2)}}), busy);
  llvm::Error refused = CheckPort(task, busy, /*starts_every_rank=*/false);
  ASSERT_TRUE(bool(refused));
  EXPECT_NE(llvm::toString(std::move(refused)).find("another process is utilizing it"), std::string::npos);
}

TEST(ScriptLaunch, ConfigValuesHiddenByArgparseDefaultsStayHidden) {
  // Accelerate copies a top-level value only over an option left at None: these options
  // default to False, so the file's true never reaches the launch.
  ScriptLaunch launch = Plan({}, Config({{"distributed_type", T("MULTI_GPU")},
                                         {"num_processes", N(2)},
                                         {"enable_cpu_affinity", {true}},
                                         {"same_network", {true}}}));
  EXPECT_EQ(launch.env.count("ACCELERATE_CPU_AFFINITY"), 0u);
  EXPECT_EQ(
      Plan({"--enable_cpu_affinity"}, Config({{"distributed_type", T("MULTI_GPU")}, {"num_processes", N(2)}}))
          .env["ACCELERATE_CPU_AFFINITY"],
      "1");
}

TEST(ScriptLaunch, FsdpSectionValuesAreSpelledAsAccelerateSpellsThem) {
  PyDict fsdp = {{"fsdp_transformer_layer_cls_to_wrap", {PyList{T("BertLayer"), T("T5Block")}}},
                 {"fsdp_offload_params", {false}},
                 {"fsdp_version", N(2)},
                 {"reshard_after_forward", {true}}};
  ScriptLaunch launch =
      Plan({"--fsdp_offload_params", "true"},
           Config({{"distributed_type", T("FSDP")}, {"num_processes", N(2)}, {"fsdp_config", {fsdp}}}));
  EXPECT_EQ(launch.env["FSDP_TRANSFORMER_CLS_TO_WRAP"], "['BertLayer', 'T5Block']");
  EXPECT_EQ(launch.env["FSDP_VERSION"], "2");
  EXPECT_EQ(launch.env["FSDP_RESHARD_AFTER_FORWARD"], "true");  // the unprefixed key, prefixed
  EXPECT_EQ(launch.env["FSDP_OFFLOAD_PARAMS"], "true");         // the option given wins over the file
  EXPECT_EQ(launch.env["FSDP_MIN_NUM_PARAMS"], "100000000");
}

TEST(ScriptLaunch, DeepSpeedNamesTheFieldsTheConfigGave) {
  PyDict ds = {{"zero_stage", N(3)}, {"gradient_clipping", {1.0}}, {"offload_optimizer_device", T("CPU")}};
  ScriptLaunch launch = Plan({}, Config({{"distributed_type", T("DEEPSPEED")},
                                         {"num_processes", N(2)},
                                         {"mixed_precision", T("bf16")},
                                         {"deepspeed_config", {ds}}}));
  EXPECT_EQ(launch.launcher, "torchrun");
  EXPECT_EQ(launch.distributed_type, "DEEPSPEED");
  EXPECT_EQ(launch.env["PYTORCH_NVML_BASED_CUDA_CHECK"], "1");  // what importing DeepSpeed sets
  EXPECT_EQ(launch.env["ACCELERATE_CONFIG_DS_FIELDS"],
            "zero_stage,gradient_clipping,offload_optimizer_device,mixed_precision");
  EXPECT_EQ(launch.env["ACCELERATE_GRADIENT_CLIPPING"], "1.0");
  EXPECT_EQ(launch.env["ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE"], "cpu");
  EXPECT_EQ(launch.env["PYTHONPATH"], "/work");
  // torchrun gives each of several workers one thread when nothing set it.
  EXPECT_EQ(TorchrunWorkerEnvironment(launch, LocalPlaces(launch)[0], 0, "", {})["OMP_NUM_THREADS"], "1");
}

TEST(ScriptLaunch, DeepSpeedAcrossMachinesRunsDeepSpeedsRunner) {
  PyDict ds = {{"zero_stage", N(2)}, {"deepspeed_hostfile", T("/job/hostfile")}};
  ScriptLaunch launch = Plan({}, Config({{"distributed_type", T("DEEPSPEED")},
                                         {"num_processes", N(16)},
                                         {"num_machines", N(2)},
                                         {"main_process_ip", T("10.0.0.1")},
                                         {"deepspeed_config", {ds}}}));
  EXPECT_EQ(launch.runner, Runner::kProcess);
  EXPECT_TRUE(launch.deepspeed_env_file);
  EXPECT_EQ(launch.command,
            (std::vector<std::string>{"deepspeed", "--hostfile", "/job/hostfile", "--no_local_rank",
                                      "--launcher", "pdsh", "--num_gpus", "8", "--master_addr", "10.0.0.1",
                                      "--master_port", "29500", "train.py", "--lr", "3"}));
}

TEST(ScriptLaunch, AStringLinearPrecisionIsIndexedByCharacter) {
  // Accelerate indexes the config file's text `(false, false, false)` one character at a time.
  PyDict fp8 = {{"override_linear_precision", T("(false, false, false)")}};
  ScriptLaunch launch = Plan({}, Config({{"distributed_type", T("MULTI_GPU")},
                                         {"num_processes", N(2)},
                                         {"mixed_precision", T("fp8")},
                                         {"fp8_config", {fp8}}}));
  EXPECT_EQ(launch.env["ACCELERATE_FP8_OVERRIDE_FPROP"], "(");
  EXPECT_EQ(launch.env["ACCELERATE_FP8_OVERRIDE_DGRAD"], "f");
  EXPECT_EQ(launch.env["ACCELERATE_FP8_OVERRIDE_WGRAD"], "a");
}

TEST(ScriptLaunch, AccelerateRaisesBecomeErrors) {
  std::string error;
  LaunchNamespace ns = Parse({}, error);
  auto fails = [&](const ConfigFile& config, const std::string& expected) {
    llvm::Expected<ScriptLaunch> launch = PlanScriptLaunch(ns, config, "train.py", {}, TestHost());
    ASSERT_FALSE(launch) << expected;
    std::string message = llvm::toString(launch.takeError());
    EXPECT_NE(message.find(expected), std::string::npos) << message;
  };
  fails(Config({{"num_processes", N(2)}}), "A `distributed_type` must be specified");
  fails(Config({{"distributed_type", T("MULTI_GPU")}}), "manually pass in `--num_processes`");
  fails(Config({{"distributed_type", T("MULTI_GPU")}, {"num_processes", N(2)}, {"gpu_ids", T("0")}}),
        "Less than two GPU ids");
  fails(Config({{"distributed_type", T("MULTI_GPU")}, {"num_processes", N(2)}, {"bogus", N(1)}}),
        "unknown keys (['bogus'])");
  fails(Config({{"distributed_type", T("XLA")}, {"num_processes", N(8)}}), "XLA (TPU)");
}

TEST(ScriptLaunch, NullDistributedTypeLaunchesOnePlainProcess) {
  ScriptLaunch launch = Plan({}, Config({{"distributed_type", {}}, {"num_processes", N(1)}}));
  EXPECT_EQ(launch.runner, Runner::kProcess);
  EXPECT_EQ(launch.launcher, "simple");
}

}  // namespace
}  // namespace accel::rt::launch::accelerate
