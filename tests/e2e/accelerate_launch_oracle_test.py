"""Judges `accelrun` script mode against Accelerate's own launch code.

For each case (an Accelerate config file, some `accelerate launch` flags, `train.py --lr 3`) this
runs Accelerate's `launch_command` in this process with the host probes listed below patched and
the process start captured, then works out from torch's elastic agent code what torchrun gives
each worker. It compares that with what `accelrun --dry-run --format json` says it would start:
the launcher kind, the number of processes, each command (past the python executable) and the
environment of local worker 0. A difference must be listed in
accelerate_launch_oracle/expected_differences.txt; a listed one that no longer happens is stale.
Before judging, it checks its torchrun derivation against real `accelerate launch` runs of a
script that only writes its environment (no torch, no GPU).

Usage: accelerate_launch_oracle_test.py <accelrun> <repo_root> <work_dir>
           [--oracle-only] [--case GLOB] [--skip-real-torchrun] [--cuda-devices N]
--oracle-only prints what Accelerate gives each case (and writes <work_dir>/oracle.json) without
running accelrun. Exit 0 pass, 1 fail, 77 when Accelerate cannot be imported.
"""
# What the oracle patches. Each one is a host probe or a process start, so that the cases are
# the same on every machine and nothing is launched; expected_differences.txt repeats this list.
#   accelerate.commands.launch.subprocess.Popen: records (cmd, env) and "exits" 0, after refusing
#       an environment value that is not text with the real Popen's TypeError. Used by the
#       simple launcher, mpirun, and the `deepspeed` runner for several machines.
#   torch.distributed.run.run: records os.environ at the call (Accelerate's patch_environment has
#       applied its variables) and runs torch's own config_from_args on the filtered namespace.
#   accelerate.commands.launch.is_deepspeed_available -> True, after applying to os.environ what
#       importing deepspeed.launcher.runner does (deepspeed sets PYTORCH_NVML_BASED_CUDA_CHECK=1)
#       as a fresh `accelerate launch` process would; a stub module when deepspeed is missing.
#   accelerate.utils.launch.is_port_in_use -> False, and the ports asked about are noted. When
#       judging, a case whose port is in use on this host right then is asked again with the port
#       busy, so that it expects what Accelerate really does there (standalone rendezvous, or an
#       error with several machines), just before accelrun probes the same port.
#   accelerate.commands.launch.check_cuda_p2p_ib_support -> True (it runs nvidia-smi).
#   accelerate.utils.launch.is_fp8_available -> True; accelerate.commands.launch.is_bf16_available
#       -> True.
#   torch.cuda.device_count -> this host's count (read once before patching; --cuda-devices N
#       overrides it for exploration only); torch.cuda.is_available -> count > 0.
#   is_{xpu,mlu,sdaa,musa,npu,hpu,neuron}_available, is_torch_xla_available -> False, in
#       accelerate.commands.launch and accelerate.utils.launch.
#   accelerate.utils.launch.get_free_port: wrapped only to note the port (compared by shape).
# Not patched, because accelrun reads the same host: psutil.cpu_count(logical=False) (the
# use_cpu thread count); `mpirun --version` (PATH starts with tests/e2e/fake_mpirun.py as
# `mpirun` for both tools); no default_config.yaml (HF_HOME is an empty folder for both tools).
import argparse
import contextlib
import dataclasses
import fnmatch
import io
import json
import logging
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import types
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_support import free_port  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ORACLE_DIR = os.path.join(HERE, "accelerate_launch_oracle")
CONFIGS = os.path.join(ORACLE_DIR, "configs")
DIFFERENCES = os.path.join(ORACLE_DIR, "expected_differences.txt")
SCRIPT = ["train.py", "--lr", "3"]
SKIP_EXIT = 77

# Launch variables a caller's shell may hold; the cases start without them so that both tools
# see the same clean slate.
_CLEARED_PREFIXES = (
    "ACCELERATE_", "ACCEL_", "FSDP_", "MEGATRON_LM_", "PARALLELISM_CONFIG_", "TORCHELASTIC_",
    "TORCH_ELASTIC_", "PET_", "OMP_", "KMP_", "MASTER_", "NCCL_", "OMPI_", "PMI_", "PMIX_",
    "MPI_", "MV2_", "SLURM_", "PBS_", "LSB_", "DS_", "XLA_", "DEEPSPEED_",
)
_CLEARED_NAMES = {
    "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE",
    "ROLE_RANK", "ROLE_NAME", "ROLE_WORLD_SIZE", "CUDA_VISIBLE_DEVICES", "PYTHONPATH",
    "PYTHON_EXEC", "TORCH_NCCL_ASYNC_ERROR_HANDLING", "TORCH_DISABLE_SHARE_RDZV_TCP_STORE",
    "PYTORCH_NVML_BASED_CUDA_CHECK", "ZE_AFFINITY_MASK", "ASCEND_RT_VISIBLE_DEVICES",
    "MLU_VISIBLE_DEVICES", "SDAA_VISIBLE_DEVICES", "MUSA_VISIBLE_DEVICES",
    "HABANA_VISIBLE_MODULES", "NEURON_RT_VISIBLE_CORES", "HF_HOME", "XDG_CACHE_HOME", "TMPDIR",
    "LOGLEVEL", "DUMP_DIR",
}


# ---------------------------------------------------------------------------------------------
# Cases


@dataclasses.dataclass
class Case:
    id: str
    config: str | None
    flags: list = dataclasses.field(default_factory=list)
    script: list = dataclasses.field(default_factory=lambda: list(SCRIPT))
    # accelrun gets the config as its first word; Accelerate always gets --config_file.
    positional_config: bool = False

    def accelerate_argv(self):
        config = ["--config_file", self.config] if self.config else []
        return config + self.flags + self.script

    def accelrun_argv(self, accelrun):
        config = []
        if self.config:
            config = [self.config] if self.positional_config else ["--config_file", self.config]
        return [accelrun, "--dry-run", "--format", "json"] + config + self.flags + self.script


def corpus_cases(repo_root):
    """Every published file that is an Accelerate config (a mapping with distributed_type)."""
    import yaml

    root = os.path.join(repo_root, "tests", "corpus", "published")
    paths = []
    for folder, _, names in os.walk(root):
        paths += [os.path.join(folder, n) for n in names if n.endswith((".yaml", ".yml"))]
    cases = []
    for path in sorted(paths):
        try:
            with open(path) as f:
                data = yaml.safe_load(f)
        except yaml.YAMLError:
            continue
        if isinstance(data, dict) and "distributed_type" in data:
            cases.append(Case("corpus/" + os.path.relpath(path, root), path))
    return cases


def synthetic_cases():
    names = sorted(n for n in os.listdir(CONFIGS) if n.endswith(".yaml"))
    return [Case("synthetic/" + n, os.path.join(CONFIGS, n)) for n in names]


def flag_cases():
    def c(name):
        return os.path.join(CONFIGS, name)

    module = ["pkg.mod", "--lr", "3"]
    binary = ["./a.out", "--lr", "3"]
    return [
        Case("flags/num_processes_4", c("multi_gpu_ids.yaml"), ["--num_processes", "4"]),
        Case("flags/num-processes=4", c("fsdp_v2.yaml"), ["--num-processes=4"]),
        Case("flags/mixed_precision_bf16", c("multi_gpu_ids.yaml"), ["--mixed_precision", "bf16"]),
        Case("flags/main_process_port_1234", c("multi_gpu_port_unset.yaml"), ["--main_process_port", "1234"]),
        Case("flags/use_fsdp_no_config", None, ["--use_fsdp"]),
        Case("flags/use_fsdp_2_processes_no_config", None, ["--use_fsdp", "--num_processes", "2"]),
        Case("flags/use_fsdp_version_2_over_multi_gpu", c("multi_gpu_port_unset.yaml"),
             ["--use_fsdp", "--fsdp_version", "2"]),
        Case("flags/use_deepspeed_no_config", None,
             ["--use_deepspeed", "--num_processes", "2", "--zero_stage", "3", "--gradient_clipping", "1",
              "--deepspeed_config_file", "ds_config.json"]),
        # One DeepSpeed process: torchrun leaves OMP_NUM_THREADS unset (Accelerate sets none here).
        Case("flags/deepspeed_1_process", c("deepspeed_inline.yaml"), ["--num_processes", "1"]),
        Case("flags/module_torchrun", c("multi_gpu_ids.yaml"), ["-m"], module),
        Case("flags/module_simple", c("use_cpu.yaml"), ["-m"], module),
        Case("flags/module_deepspeed", c("deepspeed_file.yaml"), ["--module"], module),
        Case("flags/no_python_torchrun", c("multi_gpu_ids.yaml"), ["--no_python"], binary),
        Case("flags/no_python_simple", c("no_8_processes.yaml"), ["--no_python"], binary),
        Case("flags/module_and_no_python", c("multi_gpu_ids.yaml"), ["-m", "--no_python"], module),
        Case("flags/cpu_over_multi_gpu", c("multi_gpu_ids.yaml"), ["--cpu"]),
        Case("flags/two_paradigms", c("multi_gpu_ids.yaml"), ["--multi_gpu", "--use_fsdp"]),
        Case("flags/gpu_ids_2_3", c("multi_gpu_port_unset.yaml"), ["--gpu_ids", "2,3"]),
        Case("flags/machine_rank_1", c("deepspeed_multinode_standard.yaml"), ["--machine_rank", "1"]),
        Case("flags/same_network", c("multi_node_rank1.yaml"), ["--same_network"]),
        Case("flags/rdzv_backend_c10d", c("multi_node_rank1.yaml"), ["--rdzv_backend", "c10d"]),
        Case("flags/enable_cpu_affinity", c("cpu_affinity.yaml"), ["--enable_cpu_affinity"]),
        Case("flags/debug_dynamo_threads", c("multi_gpu_port_unset.yaml"),
             ["--debug", "--dynamo_backend", "inductor", "--num_cpu_threads_per_process", "4"]),
        Case("flags/max_restarts_role", c("multi_gpu_ids.yaml"),
             ["--max_restarts", "3", "--role", "trainer", "--monitor_interval", "1"]),
        Case("flags/positional_config", c("fsdp_v1.yaml"), [], positional_config=True),
    ]


# ---------------------------------------------------------------------------------------------
# Values compared by shape


class Shape:
    """A value that varies from run to run: compared by a test, printed as <what>."""

    def __init__(self, what, test):
        self.what = what
        self.test = test

    def matches(self, value):
        return isinstance(value, str) and bool(self.test(value))

    def __repr__(self):
        return f"<{self.what}>"


def any_port():
    return Shape("a free port", lambda v: v.isdigit() and 0 < int(v) < 65536)


def error_file(local_rank):
    return Shape(f"an absolute path to worker {local_rank}'s error.json",
                 lambda v: v.startswith("/") and v.endswith("error.json"))


def same_paths(value):
    """PYTHONPATH: the same folders, however each tool spells the working directory."""
    want = [os.path.realpath(p) for p in value.split(":")]
    return Shape(f"PYTHONPATH {value}", lambda v: [os.path.realpath(p) for p in v.split(":")] == want)


def jsonable(value):
    if isinstance(value, Shape):
        return repr(value)
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


# ---------------------------------------------------------------------------------------------
# The environment both tools start from


def base_environment(work_dir):
    """This process's environment without launch variables, with an empty HF_HOME (no default
    config), TMPDIR in the work folder, and a fake Open MPI `mpirun` first on PATH."""
    env = {k: v for k, v in os.environ.items()
           if k not in _CLEARED_NAMES and not k.startswith(_CLEARED_PREFIXES)}
    fake_bin = os.path.join(work_dir, "bin")
    for name in ("hf_home", "tmp", "bin"):
        os.makedirs(os.path.join(work_dir, name), exist_ok=True)
    shutil.copy(os.path.join(HERE, "fake_mpirun.py"), os.path.join(fake_bin, "mpirun"))
    os.chmod(os.path.join(fake_bin, "mpirun"), 0o755)
    env["PATH"] = fake_bin + os.pathsep + env.get("PATH", "")
    env["HF_HOME"] = os.path.join(work_dir, "hf_home")
    env["TMPDIR"] = os.path.join(work_dir, "tmp")
    return env


def set_environ(env):
    os.environ.clear()
    os.environ.update(env)


def prepare_cwd(work_dir, case_id):
    """A working folder per case holding the files the cases name (train.py, pkg/, a.out,
    ds_config.json, hostfile): relative paths are Accelerate's to pass on, not to resolve."""
    cwd = os.path.join(work_dir, "cases", re.sub(r"[^A-Za-z0-9_.=-]+", "_", case_id))
    shutil.rmtree(cwd, ignore_errors=True)
    shutil.copytree(os.path.join(ORACLE_DIR, "case_files"), cwd)
    return cwd


# ---------------------------------------------------------------------------------------------
# The oracle: Accelerate's launch_command with its process starts captured


class Oracle:
    def __init__(self, base_env, cuda_devices):
        self.base = base_env
        self.captured = []
        self.free_ports = []
        self.asked_ports = set()
        self.busy_ports = set()
        self.deepspeed_import_env = None
        self._patch(cuda_devices)

    def _patch(self, cuda_devices):
        import accelerate.commands.launch as launch
        import accelerate.utils.launch as ulaunch
        import torch
        import torch.distributed.run as torchrun

        oracle = self

        class FakePopen:
            def __init__(self, cmd, env=None, **_):
                for value in (env or {}).values():
                    if not isinstance(value, (str, bytes, os.PathLike)):
                        raise TypeError(f"expected str, bytes or os.PathLike object, not {type(value).__name__}")
                oracle.captured.append(("popen", list(cmd), dict(os.environ if env is None else env)))
                self.returncode = 0

            def wait(self):
                return 0

        launch.subprocess = types.SimpleNamespace(
            Popen=FakePopen, CalledProcessError=subprocess.CalledProcessError)
        torchrun.run = self._capture_torchrun
        launch.is_deepspeed_available = self._deepspeed_available
        ulaunch.is_port_in_use = self._port_in_use
        launch.check_cuda_p2p_ib_support = lambda: True
        ulaunch.is_fp8_available = lambda: True
        launch.is_bf16_available = lambda ignore_tpu=False: True
        torch.cuda.device_count = lambda: cuda_devices
        torch.cuda.is_available = lambda: cuda_devices > 0
        for module in (launch, ulaunch):
            for name in ("xpu", "mlu", "sdaa", "musa", "npu", "hpu", "neuron"):
                if hasattr(module, f"is_{name}_available"):
                    setattr(module, f"is_{name}_available", lambda *a, **k: False)
            if hasattr(module, "is_torch_xla_available"):
                module.is_torch_xla_available = lambda *a, **k: False
        real_free_port = ulaunch.get_free_port

        def noted_free_port():
            port = real_free_port()
            oracle.free_ports.append(str(port))
            return port

        ulaunch.get_free_port = noted_free_port

    def _port_in_use(self, port=None):
        port = 29500 if port is None else int(port)
        self.asked_ports.add(port)
        return port in self.busy_ports

    def _capture_torchrun(self, args):
        """Stands in for torch.distributed.run.run: its standalone switch, then torch's own
        config_from_args (which may set OMP_NUM_THREADS), then what the agent would do."""
        import uuid

        import torch.distributed.run as torchrun

        if args.standalone:
            args.rdzv_backend, args.rdzv_endpoint, args.rdzv_id = "c10d", "localhost:0", str(uuid.uuid4())
        config, cmd, cmd_args = torchrun.config_from_args(args)
        if args.standalone:
            config.run_id = Shape("a uuid4 run id", re.compile(r"^[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}$").match)
        self.captured.append(("torchrun", config, cmd, list(cmd_args), dict(os.environ)))

    def _deepspeed_available(self):
        """deepspeed_launcher asks this, then imports deepspeed.launcher.runner: apply what that
        import does to os.environ, as it would in a fresh process."""
        if self.deepspeed_import_env is None:
            before = dict(os.environ)
            try:
                import deepspeed.launcher.runner  # noqa: F401
            except ImportError:
                stub = types.ModuleType("deepspeed.launcher.runner")
                stub.DEEPSPEED_ENVIRONMENT_NAME = ".deepspeed_env"
                for name in ("deepspeed", "deepspeed.launcher"):
                    sys.modules.setdefault(name, types.ModuleType(name))
                sys.modules["deepspeed.launcher.runner"] = stub
                print("note: deepspeed is not installed; a stub stands in and the variables its "
                      "import sets (PYTORCH_NVML_BASED_CUDA_CHECK) are missing", flush=True)
            self.deepspeed_import_env = {k: v for k, v in os.environ.items() if before.get(k) != v}
        os.environ.update(self.deepspeed_import_env)
        return True

    def launch(self, case, cwd, extra_env=None):
        """What Accelerate starts for `case`, run in `cwd`: {"error": text} or
        {"launcher", "processes": [{rank, local_rank, command, env}], "files"}; env holds the
        variables that differ from the environment the launch started from (None: removed)."""
        from accelerate.commands.launch import launch_command, launch_command_parser

        start_env = dict(self.base, **(extra_env or {}))
        self.captured.clear()
        self.free_ports.clear()
        self.asked_ports.clear()
        old_cwd = os.getcwd()
        set_environ(start_env)
        os.chdir(cwd)
        messages = io.StringIO()
        try:
            with quiet(messages):
                args = launch_command_parser().parse_args(case.accelerate_argv())
                launch_command(args)
        except (Exception, SystemExit) as e:
            return {"error": describe_error(e, messages.getvalue())}
        finally:
            os.chdir(old_cwd)
            set_environ(self.base)
        if not self.captured:
            return {"error": "Accelerate started nothing"}
        result = self._processes(self.captured[0], start_env)
        result["files"] = read_written_files(cwd)
        return result

    def _processes(self, captured, start_env):
        if captured[0] == "popen":
            _, cmd, env = captured
            process = {"rank": 0, "local_rank": 0, "command": cmd, "env": self._delta(env, start_env)}
            return {"launcher": popen_launcher(cmd), "processes": [process]}
        _, config, cmd, cmd_args, env_at_call = captured
        try:
            workers = torchrun_workers(config, cmd, cmd_args, env_at_call)
        except (AssertionError, ValueError) as e:
            return {"error": f"torchrun: {type(e).__name__}: {e}"}
        for worker in workers:
            worker["env"] = self._delta(worker["env"], start_env)
        return {"launcher": "torchrun", "processes": workers}

    def _delta(self, env, start_env):
        delta = {k: v for k, v in env.items() if start_env.get(k) != v}
        delta.update({k: None for k in start_env if k not in env})
        for name, value in delta.items():
            if isinstance(value, str) and value in self.free_ports:
                delta[name] = any_port()
            elif name == "PYTHONPATH" and isinstance(value, str):
                delta[name] = same_paths(value)
        return delta


@contextlib.contextmanager
def quiet(sink):
    """Accelerate and torch talk through logging, warnings and stdout/stderr; keep the report
    readable and keep argparse's message for the error text."""
    logging.disable(logging.CRITICAL)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stderr(sink), contextlib.redirect_stdout(sink):
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(logging.NOTSET)


def describe_error(e, messages):
    if isinstance(e, SystemExit):
        lines = [line for line in messages.splitlines() if line.strip()]
        return f"SystemExit({e.code}): {lines[-1] if lines else ''}"
    return f"{type(e).__name__}: {e}"


def popen_launcher(cmd):
    name = os.path.basename(cmd[0])
    if name == "deepspeed":
        return "deepspeed"
    if name in ("mpirun", "mpiexec"):
        return "mpirun"
    return "simple"


def read_written_files(cwd):
    """Files Accelerate writes while launching (.deepspeed_env for the pdsh-style runners)."""
    path = os.path.join(cwd, ".deepspeed_env")
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return {".deepspeed_env": f.read()}


# ---------------------------------------------------------------------------------------------
# What torchrun gives each worker (torch 2.11)


def torchrun_workers(config, cmd, cmd_args, env_at_call):
    """The processes torchrun's agent starts on this machine, with their full environments.

    Mirrors torch/distributed: launcher/api.py launch_agent (TORCHELASTIC_SIGNALS_TO_HANDLE into
    the agent's os.environ; master address and port from a static endpoint), agent/server/api.py
    _rendezvous and _assign_worker_ranks (equal local world sizes, one role: rank = group rank *
    nproc + local rank), local_elastic_agent.py _start_workers, _set_local_rank_env and
    _setup_local_watchdog, multiprocessing/api.py DefaultLogsSpecs.reify
    (TORCHELASTIC_ERROR_FILE) and subprocess_handler.py (os.environ.copy() updated with the
    worker's variables)."""
    from torch.distributed.elastic.rendezvous.utils import parse_rendezvous_endpoint
    from torch.distributed.elastic.utils import macros

    agent_env = dict(env_at_call)
    agent_env["TORCHELASTIC_SIGNALS_TO_HANDLE"] = config.signals_to_handle
    nproc = config.nproc_per_node
    # WorkerSpec.__post_init__ refuses these before anything starts.
    if nproc <= 0:
        raise AssertionError(f"WorkerSpec: local_world_size > 0 fails (nproc_per_node={nproc})")
    if config.monitor_interval <= 0:
        raise AssertionError(f"WorkerSpec: monitor_interval > 0 fails ({config.monitor_interval})")
    if config.rdzv_backend == "static":
        group_rank = int(config.rdzv_configs["rank"])
        master_addr, master_port = parse_rendezvous_endpoint(config.rdzv_endpoint, -1)
        if master_port == -1:  # launcher/api.py _get_addr_and_port
            raise ValueError(f"port is missing in endpoint: {config.rdzv_endpoint}")
        master_port = str(master_port)
        use_agent_store = "True"  # StaticTCPRendezvous.use_agent_store
    else:
        # Dynamic rendezvous: the group rank is the order of joining, the master is rank 0's
        # host and a port it picks (RendezvousStoreInfo.build).
        group_rank = None
        master_addr = Shape("the rendezvous master's host name", lambda v: bool(v))
        master_port = any_port()
        use_agent_store = str(agent_env.get("TORCH_DISABLE_SHARE_RDZV_TCP_STORE", "0") != "1")
    world_size = config.max_nodes * nproc
    log_root = config.logs_specs.root_log_dir
    workers = []
    for local_rank in range(nproc):
        rank = str(group_rank * nproc + local_rank) if group_rank is not None else Shape(
            "a rank from the rendezvous", str.isdigit)
        worker_env = {
            "RANK": rank,
            "GROUP_RANK": str(group_rank) if group_rank is not None else Shape(
                "a group rank from the rendezvous", str.isdigit),
            "ROLE_RANK": rank,
            "ROLE_NAME": config.role,
            "LOCAL_WORLD_SIZE": str(nproc),
            "WORLD_SIZE": str(world_size),
            "GROUP_WORLD_SIZE": str(config.max_nodes),
            "ROLE_WORLD_SIZE": str(world_size),
            "MASTER_ADDR": master_addr,
            "MASTER_PORT": master_port,
            "TORCHELASTIC_RESTART_COUNT": "0",
            "TORCHELASTIC_MAX_RESTARTS": str(config.max_restarts),
            "TORCHELASTIC_RUN_ID": config.run_id,
            "TORCHELASTIC_USE_AGENT_STORE": use_agent_store,
            "TORCH_NCCL_ASYNC_ERROR_HANDLING": agent_env.get("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"),
            "LOCAL_RANK": str(local_rank),
        }
        if config.virtual_local_rank:
            worker_env["LOCAL_RANK"] = "0"
            visible = agent_env.get("CUDA_VISIBLE_DEVICES")
            worker_env["CUDA_VISIBLE_DEVICES"] = (
                visible.split(",")[local_rank].strip() if visible is not None else str(local_rank))
        elif "CUDA_VISIBLE_DEVICES" in agent_env:
            worker_env["CUDA_VISIBLE_DEVICES"] = agent_env["CUDA_VISIBLE_DEVICES"]
        if "OMP_NUM_THREADS" in agent_env:
            worker_env["OMP_NUM_THREADS"] = agent_env["OMP_NUM_THREADS"]
        if agent_env.get("TORCHELASTIC_ENABLE_FILE_TIMER") == "1" or "TORCHELASTIC_TIMER_FILE" in agent_env:
            worker_env["TORCHELASTIC_TIMER_FILE"] = agent_env.get("TORCHELASTIC_TIMER_FILE") or Shape(
                "a watchdog timer file", lambda v: v.startswith("/"))
        worker_env["TORCHELASTIC_ERROR_FILE"] = "" if log_root == os.devnull else error_file(local_rank)
        env = dict(agent_env)
        env.update(worker_env)
        workers.append({
            "rank": int(rank) if isinstance(rank, str) else rank,
            "local_rank": local_rank,
            "command": [cmd] + macros.substitute(list(cmd_args), str(local_rank)),
            "env": env,
        })
    return workers


# ---------------------------------------------------------------------------------------------
# Self-check: the derivation against real `accelerate launch` runs


REAL_RUNS = [
    # (name, config, flags of each machine)
    ("multi_gpu_2", {"distributed_type": "MULTI_GPU", "num_machines": 1, "num_processes": 2,
                     "mixed_precision": "bf16", "gpu_ids": "all"}, [[]]),
    ("deepspeed_2", {"distributed_type": "DEEPSPEED", "num_machines": 1, "num_processes": 2,
                     "deepspeed_config": {"zero_stage": 2, "gradient_accumulation_steps": 2}}, [[]]),
    ("two_machines", {"distributed_type": "MULTI_GPU", "num_machines": 2, "num_processes": 2,
                      "main_process_ip": "127.0.0.1"}, [["--machine_rank", "0"], ["--machine_rank", "1"]]),
]


def check_real_torchrun(oracle, work_dir):
    """Runs each REAL_RUNS config with the real `accelerate launch` (torchrun included) and
    compares every worker's environment and argv with the derivation. Returns failures."""
    import yaml

    failures = []
    for name, settings, machines in REAL_RUNS:
        cwd = prepare_cwd(work_dir, "real/" + name)
        dump = os.path.join(cwd, "dump")
        os.makedirs(dump)
        config = os.path.join(cwd, "config.yaml")
        with open(config, "w") as f:
            yaml.safe_dump(dict(settings, compute_environment="LOCAL_MACHINE", main_process_port=free_port()), f)
        env = dict(oracle.base, DUMP_DIR=dump)
        procs = [subprocess.Popen([sys.executable, "-m", "accelerate.commands.accelerate_cli", "launch",
                                   "--config_file", config] + flags + SCRIPT,
                                  cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                 for flags in machines]
        outputs = [p.communicate(timeout=300)[0] for p in procs]
        if any(p.returncode != 0 for p in procs):
            failures.append(f"real/{name}: accelerate launch failed:\n" + "\n".join(o[-2000:] for o in outputs))
            continue
        checked = 0
        for flags in machines:
            derived = oracle.launch(Case("real/" + name, config, flags), cwd, {"DUMP_DIR": dump})
            if "error" in derived:
                failures.append(f"real/{name} {flags}: the oracle failed: {derived['error']}")
                continue
            for worker in derived["processes"]:
                failures += compare_real_worker(name, worker, dump, env)
                checked += 1
        print(f"real torchrun check {name}: {checked} workers compared", flush=True)
    return failures


def compare_real_worker(name, worker, dump, start_env):
    path = os.path.join(dump, f"rank-{worker['rank']}.json")
    if not os.path.exists(path):
        return [f"real/{name}: no dump from rank {worker['rank']}"]
    with open(path) as f:
        real = json.load(f)
    derived_env = dict(start_env)
    for k, v in worker["env"].items():
        if v is None:
            derived_env.pop(k, None)
        else:
            derived_env[k] = v
    # Real runs show torch's own error-file layout, so hold the derivation to it exactly.
    layout = rf"/torchelastic_[^/]+/none_[^/]+/attempt_0/{worker['local_rank']}/error\.json"
    derived_env["TORCHELASTIC_ERROR_FILE"] = Shape(
        "torch's error file", re.compile("^" + re.escape(start_env["TMPDIR"]) + layout + "$").match)
    failures = []
    for key in sorted(set(real["env"]) | set(derived_env)):
        want, got = derived_env.get(key), real["env"].get(key)
        if not values_equal(want, got):
            failures.append(f"real/{name} rank {worker['rank']}: {key}: derived {want!r}, real {got!r}")
    if real["orig_argv"] != worker["command"]:
        failures.append(f"real/{name} rank {worker['rank']}: argv derived {worker['command']}, "
                        f"real {real['orig_argv']}")
    return failures


# ---------------------------------------------------------------------------------------------
# accelrun and the comparison


def run_accelrun(accelrun, case, cwd, env):
    try:
        result = subprocess.run(case.accelrun_argv(accelrun), cwd=cwd, env=env, capture_output=True,
                                text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return {"exit": "timeout", "stderr": ""}
    if result.returncode != 0:
        return {"exit": result.returncode, "stderr": result.stderr.strip()}
    try:
        return json.loads(result.stdout)
    except json.JSONDecodeError as e:
        return {"exit": "bad json", "stderr": f"{e}: {result.stdout[:300]!r}"}


def values_equal(want, got):
    if isinstance(want, Shape):
        return want.matches(got)
    return want == got


def is_python(word):
    return bool(re.fullmatch(r"python[0-9.]*", os.path.basename(word)))


def commands_equal(want, got):
    """Word for word, except that Accelerate's python (sys.executable) may be any python, and a
    launcher that Accelerate names bare (mpirun, deepspeed) may be a path to it."""
    if len(want) != len(got):
        return False
    for i, (w, g) in enumerate(zip(want, got)):
        if w == sys.executable:
            if not is_python(g):
                return False
        elif i == 0 and os.path.basename(w) == w:
            if os.path.basename(g) != w:
                return False
        elif w != g:
            return False
    return True


def accelrun_owns(name):
    return name.startswith("ACCEL_") and not name.startswith("ACCELERATE_")


@dataclasses.dataclass
class Comparison:
    differences: list = dataclasses.field(default_factory=list)  # (name, accelerate, accelrun)
    identical: int = 0
    compared: int = 0

    def check(self, name, want, got, count=True):
        same = values_equal(want, got)
        if count:
            self.compared += 1
            self.identical += same
        if not same:
            self.differences.append((name, want, got))


def compare(expected, actual, base_env):
    cmp = Comparison()
    if "error" in expected or "exit" in actual:
        if "error" in expected and "exit" in actual and actual.get("stderr"):
            return cmp  # both refuse, and accelrun says why
        want = f"error: {expected['error']}" if "error" in expected else "launches"
        got = f"exit {actual['exit']}: {last_line(actual.get('stderr', ''))}" if "exit" in actual else "launches"
        cmp.check("exit", want, got, count=False)
        return cmp
    cmp.check("launcher", expected["launcher"], actual.get("launcher"), count=False)
    got_processes = actual.get("processes") or []
    cmp.check("processes", str(len(expected["processes"])), str(len(got_processes)), count=False)
    by_local_rank = {p.get("local_rank"): p for p in got_processes}
    for want in expected["processes"]:
        got = by_local_rank.get(want["local_rank"])
        if got is None:
            continue
        first = want["local_rank"] == 0
        if not commands_equal(want["command"], got.get("command", [])):
            cmp.differences.append(("command", want["command"], got.get("command")))
        if isinstance(want["rank"], int):
            cmp.check("rank", str(want["rank"]), str(got.get("rank")), count=False)
        compare_env(cmp, want["env"], got.get("env") or {}, base_env, everything=first)
    return cmp


def compare_env(cmp, want_env, got_env, base_env, everything):
    """Local worker 0: every variable either tool sets (accelrun's own ACCEL_* aside). Other local
    workers: the variables that differ between workers."""
    names = set(want_env) | {n for n in got_env if not accelrun_owns(n)}
    if not everything:
        names &= {"RANK", "LOCAL_RANK", "ROLE_RANK", "CUDA_VISIBLE_DEVICES"}
    for name in sorted(names):
        want = want_env[name] if name in want_env else base_env.get(name)
        got = got_env[name] if name in got_env else base_env.get(name)
        cmp.check(name, want, got, count=everything)


def last_line(text):
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


# ---------------------------------------------------------------------------------------------
# expected_differences.txt


@dataclasses.dataclass
class Allowance:
    name: str
    case_glob: str
    reason: str
    line: int
    used: bool = False


def read_allowances(path):
    """Lines `NAME [CASE_GLOB] — reason`; NAME and CASE_GLOB are fnmatch patterns."""
    allowances = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            head, sep, reason = line.partition(" — ")
            if not sep:
                head, sep, reason = line.partition(" -- ")
            words = head.split()
            if not sep or not reason.strip() or len(words) not in (1, 2):
                raise SystemExit(f"{path}:{number}: expected `NAME [CASE_GLOB] — reason`")
            allowances.append(Allowance(words[0], words[1] if len(words) == 2 else "*", reason.strip(), number))
    return allowances


def allowed(allowances, case_id, name):
    hits = [a for a in allowances if fnmatch.fnmatchcase(name, a.name) and fnmatch.fnmatchcase(case_id, a.case_glob)]
    for a in hits:
        a.used = True
    return bool(hits)


# ---------------------------------------------------------------------------------------------
# Reports


def format_value(value):
    return "(unset)" if value is None else repr(value)


def print_oracle(case, result):
    print(f"== {case.id}")
    print("   accelerate launch " + " ".join(case.accelerate_argv()))
    if "error" in result:
        print(f"   refuses: {result['error']}")
        return
    processes = result["processes"]
    print(f"   launcher {result['launcher']}, {len(processes)} process(es) here, ranks "
          f"{[p['rank'] for p in processes]}")
    first = processes[0]
    print("   command: " + " ".join("<python>" if w == sys.executable else w for w in first["command"]))
    for name in sorted(first["env"]):
        print(f"     {name}={format_value(first['env'][name])}")
    for file, text in result.get("files", {}).items():
        print(f"   writes {file}: {len(text.splitlines())} lines")


def print_parity(rows):
    print("\nparity (environment of local worker 0, (name, value) pairs):")
    identical = compared = 0
    for case_id, cmp in rows:
        identical += cmp.identical
        compared += cmp.compared
        print(f"  {case_id}: {cmp.identical} of {cmp.compared} identical, {len(cmp.differences)} difference(s)")
    print(f"overall: {identical} of {compared} (name,value) pairs identical over {len(rows)} cases")


# ---------------------------------------------------------------------------------------------


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("accelrun")
    parser.add_argument("repo_root")
    parser.add_argument("work_dir")
    parser.add_argument("--oracle-only", action="store_true", help="print Accelerate's side only")
    parser.add_argument("--case", default="*", help="only the cases whose id matches this glob")
    parser.add_argument("--skip-real-torchrun", action="store_true")
    parser.add_argument("--cuda-devices", type=int, default=None,
                        help="the CUDA device count the oracle reports (default: this host's)")
    return parser.parse_args(argv)


def host_cuda_devices():
    import torch

    return torch.cuda.device_count()


def main(argv):
    opts = parse_args(argv)
    work_dir = os.path.abspath(opts.work_dir)
    os.makedirs(work_dir, exist_ok=True)
    base = base_environment(work_dir)
    # Accelerate reads HF_HOME when imported (the default config path), tempfile reads TMPDIR.
    set_environ(base)
    tempfile.tempdir = None
    try:
        import accelerate.commands.launch  # noqa: F401
    except ImportError as e:
        print(f"skipped: accelerate not installed ({e})")
        return SKIP_EXIT
    cuda_devices = host_cuda_devices() if opts.cuda_devices is None else opts.cuda_devices
    oracle = Oracle(base, cuda_devices)
    failures = [] if opts.skip_real_torchrun else check_real_torchrun(oracle, work_dir)
    cases = [c for c in corpus_cases(os.path.abspath(opts.repo_root)) + synthetic_cases() + flag_cases()
             if fnmatch.fnmatchcase(c.id, opts.case)]
    print(f"{len(cases)} cases (CUDA devices: {cuda_devices})", flush=True)
    if opts.oracle_only:
        return show_oracle(oracle, cases, work_dir, failures)
    return judge(opts, oracle, cases, base, work_dir, failures)


def show_oracle(oracle, cases, work_dir, failures):
    started = time.monotonic()
    results = [(case, oracle.launch(case, prepare_cwd(work_dir, case.id))) for case in cases]
    print(f"oracle: {len(cases)} cases in {time.monotonic() - started:.1f}s")
    for case, result in results:
        print_oracle(case, result)
    with open(os.path.join(work_dir, "oracle.json"), "w") as f:
        json.dump([{"case": c.id, "argv": c.accelerate_argv(), **jsonable(r)} for c, r in results], f, indent=1)
    return report_failures(failures)


def port_in_use(port):
    """Accelerate's own probe (accelerate.utils.other.is_port_in_use)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        return s.connect_ex(("localhost", port)) == 0


def expect(oracle, case, cwd):
    """Accelerate's launch of `case`, with the ports it probes as busy as they are here now."""
    expected = oracle.launch(case, cwd)
    busy = {port for port in oracle.asked_ports if port_in_use(port)}
    if busy:
        print(f"note: {case.id}: port {sorted(busy)} is in use here, so Accelerate would see it busy", flush=True)
        oracle.busy_ports = busy
        try:
            expected = oracle.launch(case, cwd)
        finally:
            oracle.busy_ports = set()
    return expected


def judge(opts, oracle, cases, base, work_dir, failures):
    allowances = read_allowances(DIFFERENCES)
    accelrun = os.path.abspath(opts.accelrun)  # it runs in each case's folder
    rows = []
    for case in cases:
        # Accelerate's side, then accelrun's at once, so that both see the host's ports alike.
        cwd = prepare_cwd(work_dir, case.id)
        cmp = compare(expect(oracle, case, cwd), run_accelrun(accelrun, case, cwd, base), base)
        rows.append((case.id, cmp))
        for name, want, got in cmp.differences:
            if not allowed(allowances, case.id, name):
                failures.append(f"{case.id}: {name}: accelerate {format_value(want)}, accelrun {format_value(got)}")
    print_parity(rows)
    if opts.case == "*":
        for a in allowances:
            if not a.used:
                failures.append(f"{DIFFERENCES}:{a.line}: stale, no case differs in {a.name} [{a.case_glob}]")
    return report_failures(failures)


def report_failures(failures):
    if not failures:
        print("PASS")
        return 0
    print(f"\nFAIL: {len(failures)} problem(s); list a real difference in {DIFFERENCES} as "
          "`NAME [CASE_GLOB] — reason`")
    for failure in failures:
        print("  " + failure)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
