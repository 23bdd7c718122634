"""A one-node Slurm cluster that a test starts for itself and always stops: munged, slurmctld and
slurmd run in the foreground as children of the test, with a generated slurm.conf, munge key,
state, spool and log folders under one scratch folder, on free ports. Nothing outside that folder
is configured, and every daemon is stopped by the id this module started it with.

    with SlurmCluster() as cluster:      # raises Unavailable when it cannot be hosted
        cluster.run(["srun", "-n2", "hostname"])

The folder is a fresh one under the system's temporary directory, short enough for munged's
socket path (108 bytes at most); `remove()` deletes it once the daemons are stopped.

Needs root (slurmd launches the job steps) and the Debian packages slurm-wlm and munge.
"""
import ctypes
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from e2e_support import free_port, scheduler_free_env  # noqa: F401 (free_port: for its importers)

BINARIES = ["munged", "slurmctld", "slurmd", "srun", "sbatch", "salloc", "squeue", "scontrol", "sinfo",
            "scancel"]
# Slurm starts the daemons within seconds on an idle machine; a loaded 2-core one needs more.
START_TIMEOUT_S = 45


class Unavailable(Exception):
    """This machine cannot host the cluster; the message says why (the test then skips)."""


def _die_with_test(sig):
    """For a child, before exec: `sig` when the test process dies, even by SIGKILL (a ctest
    timeout), so that no daemon or client outlives it. (Job steps, which slurmd forks, are
    ended by scancel in stop(); this cannot reach them.)"""
    PR_SET_PDEATHSIG = 1
    return lambda: ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, sig)


def _tail(path, lines=15):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return "(no log)\n"


class SlurmCluster:
    def __init__(self, cpus=2):
        self.dir = tempfile.mkdtemp(prefix="accel-slurm-")
        self.cpus = cpus
        # slurmctld accepts only the host that slurm.conf names as the controller; Slurm uses
        # the short name.
        self.host = socket.gethostname().split(".")[0]
        self.daemons = []  # (name, Popen), in start order
        self.conf = os.path.join(self.dir, "slurm.conf")
        self.env = None

    # -- setup -------------------------------------------------------------------------------
    def _check_machine(self):
        missing = [b for b in BINARIES if shutil.which(b) is None]
        if missing:
            raise Unavailable(f"{', '.join(missing)} not installed (Debian: slurm-wlm, munge; scripts/setup.sh)")
        if os.geteuid() != 0:
            raise Unavailable("slurmd must run as root to launch job steps, and this test is not root")

    def _write_files(self):
        for sub in ("munge", "state", "spool", "log"):
            os.makedirs(os.path.join(self.dir, sub), mode=0o700)
        # munged refuses a key that others can read.
        key = os.path.join(self.dir, "munge", "munge.key")
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
        with os.fdopen(fd, "wb") as f:
            f.write(secrets.token_bytes(1024))
        self.munge_socket = os.path.join(self.dir, "munge", "munge.socket")
        d = self.dir
        # No cgroups, accounting or task affinity: none of them exist in a container, and none
        # matter to how srun places tasks. config_overrides keeps the node usable when this
        # machine has fewer cores than `cpus`.
        conf = f"""\
ClusterName=accel
SlurmctldHost={self.host}(127.0.0.1)
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.munge_socket}
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
SlurmdParameters=config_overrides
InactiveLimit=0
KillWait=5
MinJobAge=300
NodeName={self.host} NodeAddr=127.0.0.1 CPUs={self.cpus} State=UNKNOWN
PartitionName=test Nodes={self.host} Default=YES MaxTime=10 State=UP
"""
        with open(self.conf, "w") as f:
            f.write(conf)
        # Clients and daemons read this slurm.conf, never the machine's; no inherited job
        # variables leak into the jobs.
        self.env = scheduler_free_env()
        self.env["SLURM_CONF"] = self.conf

    def _start(self, name, argv):
        log = open(os.path.join(self.dir, "log", f"{name}.out"), "w")
        # Its own session, so that stopping it can also reach what it forked (slurmstepd).
        process = subprocess.Popen(argv, env=self.env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   start_new_session=True, preexec_fn=_die_with_test(signal.SIGTERM))
        log.close()
        self.daemons.append((name, process))
        return process

    def _wait(self, what, ready, timeout=START_TIMEOUT_S):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, process in self.daemons:
                if process.poll() is not None:
                    raise Unavailable(f"{name} exited {process.returncode} while waiting for {what}:\n"
                                      + self._logs())
            if ready():
                return
            time.sleep(0.2)
        raise Unavailable(f"{what} not within {timeout} s:\n" + self._logs())

    def _logs(self):
        text = ""
        for name in ("munged", "slurmctld", "slurmd"):
            for path in (os.path.join(self.dir, "log", f"{name}.out"), os.path.join(self.dir, "log", f"{name}.log")):
                if os.path.exists(path) and os.path.getsize(path) > 0:
                    text += f"--- {os.path.relpath(path, self.dir)}\n{_tail(path)}"
        return text

    def _node_state(self):
        result = subprocess.run(["sinfo", "-h", "-n", self.host, "-o", "%T"], env=self.env, capture_output=True,
                                text=True, timeout=10)
        return result.stdout.strip() if result.returncode == 0 else ""

    def start(self):
        self._check_machine()
        self._write_files()
        m = os.path.join(self.dir, "munge")
        # --force: the scratch folder's parents (/tmp) are writable by others, which munged
        # otherwise refuses for its socket.
        self._start("munged", ["munged", "--foreground", "--force", f"--socket={self.munge_socket}",
                               f"--key-file={m}/munge.key", f"--pid-file={m}/munged.pid",
                               f"--seed-file={m}/munged.seed", f"--log-file={self.dir}/log/munged.log"])
        self._wait("munged's socket", lambda: os.path.exists(self.munge_socket))
        self._start("slurmctld", ["slurmctld", "-D", "-c", "-i", "-f", self.conf])
        self._start("slurmd", ["slurmd", "-D", "-N", self.host, "-f", self.conf])
        self._wait(f"node {self.host} idle", lambda: self._node_state() == "idle")
        return self

    # -- use ---------------------------------------------------------------------------------
    def run(self, argv, timeout=120, env=None, check=True, cwd=None):
        """Runs a client command (srun, sbatch, ...) against this cluster; echoes its output.
        The job's stdout and stderr come back together, in one string, as `.stdout`."""
        full_env = dict(self.env)
        full_env.update(env or {})
        try:
            # srun takes SIGTERM as a request to end its step and may wait on it: SIGKILL.
            result = subprocess.run(argv, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                    timeout=timeout, stdin=subprocess.DEVNULL, cwd=cwd,
                                    preexec_fn=_die_with_test(signal.SIGKILL))
        except subprocess.TimeoutExpired as e:
            partial = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            sys.stdout.write(partial)
            raise AssertionError(f"`{' '.join(argv)}` ran past {timeout} s") from None
        sys.stdout.write(result.stdout)
        if check:
            assert result.returncode == 0, f"`{' '.join(argv)}` exited {result.returncode}\n" + self._logs()
        return result

    def wait_job(self, job_id, timeout=120):
        """Waits until the job has ended; returns its `JobState` and `ExitCode` (as scontrol
        says them, e.g. ("COMPLETED", "0:0")). Fails after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        fields = {}
        while time.monotonic() < deadline:
            result = subprocess.run(["scontrol", "-o", "show", "job", job_id], env=self.env, capture_output=True,
                                    text=True, timeout=10)
            # One line of key=value pairs; MinJobAge keeps an ended job listed for minutes.
            fields = dict(item.split("=", 1) for item in result.stdout.split() if "=" in item)
            state = fields.get("JobState", "")
            if state and state not in ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED"):
                return state, fields.get("ExitCode", "")
            time.sleep(0.3)
        raise AssertionError(f"job {job_id} not ended after {timeout} s (state {fields.get('JobState')})\n"
                             + self._logs())

    def job_times(self, job_id):
        """The job's `StartTime` and `EndTime` as scontrol says them (ISO 8601, to the second)."""
        result = subprocess.run(["scontrol", "-o", "show", "job", job_id], env=self.env, capture_output=True,
                                text=True, timeout=10)
        fields = dict(item.split("=", 1) for item in result.stdout.split() if "=" in item)
        return fields.get("StartTime", ""), fields.get("EndTime", "")

    # -- teardown ----------------------------------------------------------------------------
    def stop(self):
        if any(name == "slurmctld" and p.poll() is None for name, p in self.daemons):
            # Jobs first, so slurmd can end their steps while it still runs: a step's
            # slurmstepd leads its own session, out of reach of stopping slurmd.
            try:
                subprocess.run(["scancel", "--full", "-u", "root"], env=self.env, capture_output=True, timeout=10)
                deadline = time.monotonic() + 15
                while time.monotonic() < deadline:
                    queued = subprocess.run(["squeue", "-h", "-o", "%i"], env=self.env, capture_output=True,
                                            text=True, timeout=10)
                    if queued.returncode != 0 or not queued.stdout.strip():
                        break
                    time.sleep(0.3)
            except subprocess.TimeoutExpired:
                pass  # the daemons are stopped below all the same
        for name, process in reversed(self.daemons):
            _stop(process)
        self.daemons = []

    def remove(self):
        """Deletes the cluster's folder (configuration, state, logs); call after stop()."""
        assert not self.daemons, "remove() while daemons run"
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc):
        self.stop()


def _stop(process, grace=10):
    """SIGTERM to the daemon's session (it leads it), then SIGKILL after `grace` seconds."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    # Also what it left behind in its session, by the group id this module created.
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        print(f"warning: pid {process.pid} did not exit after SIGKILL", file=sys.stderr)
