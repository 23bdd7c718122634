#!/usr/bin/env python3
"""A real two-machine job: two network namespaces joined by a veth pair, one accelrun per
"node" (`--nnodes 2 --node-rank R --master-addr 10.x.y.1`).

1. It trains on world size 2 to weights bit-identical to a local 2-process run. The hostname
   resolves to 127.0.0.1 here (as Debian's stock 127.0.1.1 line does): a worker must advertise
   the address that routes to the master, not the loopback its hostname gives.
2. Link cut: with a 4 s timeout, the veth is taken down mid-training; both launchers must stop,
   each exiting non-zero, within the timeout + 5 s.

Skipped (exit 77) where namespaces cannot be made (not root, no `ip`, no veth). Namespaces and
processes are removed at the end, also on failure.

Usage: two_node_netns_test.py ACCELC ACCELRUN SPEC WORKDIR
"""
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from e2e_support import assert_trained_like, run, scheduler_free_env, skip  # noqa: E402

STEPS = 40
TIMEOUT_S = 4


class TwoNodes:
    """Namespaces `a` (10.x.y.1, the master) and `b` (10.x.y.2), named after this process."""

    def __init__(self):
        tag = os.getpid() % 100000
        self.names = [f"accel{tag}a", f"accel{tag}b"]
        self.links = [f"va{tag}", f"vb{tag}"]
        subnet = 64 + tag % 128
        self.addresses = [f"10.199.{subnet}.1", f"10.199.{subnet}.2"]
        self.made = []

    def ip(self, *argv, ns=None):
        prefix = ["ip", "netns", "exec", ns] if ns else []
        subprocess.run(prefix + ["ip", *argv], check=True, capture_output=True, text=True, timeout=20)

    def up(self):
        for name in self.names:
            self.ip("netns", "add", name)
            self.made.append(name)
        self.ip("link", "add", self.links[0], "type", "veth", "peer", "name", self.links[1])
        for name, link, address in zip(self.names, self.links, self.addresses):
            self.ip("link", "set", link, "netns", name)
            self.ip("addr", "add", f"{address}/24", "dev", link, ns=name)
            self.ip("link", "set", link, "up", ns=name)
            self.ip("link", "set", "lo", "up", ns=name)

    def cut(self):
        self.ip("link", "set", self.links[0], "down", ns=self.names[0])

    def down(self):
        for name in self.made:  # deleting a namespace deletes its end of the veth, and the pair
            subprocess.run(["ip", "netns", "delete", name], capture_output=True, timeout=20)

    def start(self, node, argv, env):
        return subprocess.Popen(["ip", "netns", "exec", self.names[node], *argv], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)


def launchers(nodes, accelrun, plan, out, extra=()):
    argv = lambda node: [accelrun, plan, "--output-dir", out, "--nnodes", "2", "--node-rank", str(node),
                         "--nproc-per-node", "1", "--master-addr", nodes.addresses[0], "--master-port", "29400",
                         "--rdzv-id", "netns-test", *extra]
    return [nodes.start(node, argv(node), scheduler_free_env()) for node in (0, 1)]


def stop_all(processes):
    for p in processes:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def main():
    accelc, accelrun, spec, workdir = map(os.path.abspath, sys.argv[1:5])
    if os.geteuid() != 0 or shutil.which("ip") is None:
        skip("network namespaces need root and iproute2's `ip`")
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    nodes = TwoNodes()
    try:
        try:
            nodes.up()
        except (subprocess.CalledProcessError, OSError) as why:
            skip(f"cannot make two network namespaces with a veth pair: {getattr(why, 'stderr', why)}")
        processes = []
        try:
            plan = os.path.join(workdir, "plan.json")
            run([accelc, "build", spec, "--set", f"train.steps={STEPS}", "-o", plan])
            reference = os.path.join(workdir, "local")
            run([accelrun, plan, "--output-dir", reference], env=scheduler_free_env())

            out = os.path.join(workdir, "two_nodes")
            processes = launchers(nodes, accelrun, plan, out)
            texts = [p.communicate(timeout=150)[0] for p in processes]
            for p, text in zip(processes, texts):
                sys.stdout.write(text)
                assert p.returncode == 0, f"a node's launcher exited {p.returncode}"
            assert_trained_like(reference, out, "two nodes")
            print("two nodes: bit-identical to the local run")

            long_plan = os.path.join(workdir, "long.json")
            run([accelc, "build", spec, "--set", "train.steps=1000000", "--set",
                 f"accelerator.init_process_group.timeout={TIMEOUT_S}s", "-o", long_plan])
            processes = launchers(nodes, accelrun, long_plan, os.path.join(workdir, "cut"))
            first = processes[0].stdout.readline()
            lines = [first]
            deadline = time.time() + 90
            while time.time() < deadline:
                line = processes[0].stdout.readline()
                lines.append(line)
                if line.startswith("step ") or not line:
                    break
            assert lines[-1].startswith("step "), "the two-node job never trained:\n" + "".join(lines)
            nodes.cut()
            cut_at = time.time()
            texts = ["".join(lines) + processes[0].communicate(timeout=TIMEOUT_S + 30)[0],
                     processes[1].communicate(timeout=TIMEOUT_S + 30)[0]]
            elapsed = time.time() - cut_at
            for p, text in zip(processes, texts):
                sys.stdout.write(text)
                assert p.returncode not in (0, None), "a launcher did not notice the cut link"
            assert elapsed < TIMEOUT_S + 5, f"the job took {elapsed:.1f} s to stop after the link was cut"
            print(f"link cut: both nodes stopped {elapsed:.2f} s after the cut (timeout {TIMEOUT_S} s)")
        finally:
            stop_all(processes)
    finally:
        nodes.down()


if __name__ == "__main__":
    main()
