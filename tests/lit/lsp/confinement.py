"""The editor reads a file a config names under the same policy as `accelc check`: a config is
untrusted (a pull request can name any path), so a system file is refused by its kind without a
byte of it shown, and nothing outside the open file's repository is read. Each step asserts what
the server published; every wait has a timeout.

usage: confinement.py ACCELC WORKDIR
"""
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(__file__))
from lsp_client import Client  # noqa: E402

accelc, workdir = sys.argv[1], sys.argv[2]
shutil.rmtree(workdir, ignore_errors=True)
repo = os.path.join(workdir, "repo")
elsewhere = os.path.join(workdir, "elsewhere")
for folder in (os.path.join(repo, ".git"), os.path.join(repo, "sub"), elsewhere):
    os.makedirs(folder)
SECRET = "hunter2-for-the-lsp-test"
env = dict(os.environ, XDG_CACHE_HOME=os.path.join(workdir, "cache"), SECRET_FOR_THE_TEST=SECRET)

LAUNCH = ("compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\nnum_processes: 4\n"
          "deepspeed_config:\n  deepspeed_config_file: %s\n")
# A JSON whose batch sizes do not multiply out: read, it would be an error (A3006).
with open(os.path.join(elsewhere, "ds.json"), "w") as f:
    f.write('{"train_batch_size": 64, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2,'
            ' "zero_optimization": {"stage": 2}}\n')
os.symlink(os.path.join(elsewhere, "ds.json"), os.path.join(repo, "sub", "linked.json"))

client = Client(accelc, env)
client.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
client.notify("initialized", {})


def open_config(name, text):
    path = os.path.join(repo, name)
    uri = "file://" + path
    client.notify("textDocument/didOpen",
                  {"textDocument": {"uri": uri, "languageId": "yaml", "version": 1, "text": text}})
    return client.diagnostics(uri, 1)


# The server's own environment, under /proc: refused by where it lies, nothing of it shown.
found = open_config("environ.yaml", LAUNCH % "/proc/self/environ")
codes = [d["code"] for d in found]
assert codes == ["A3015"], found
assert SECRET not in repr(found), found
assert found[0]["severity"] == 1 and found[0]["range"]["start"] == {"line": 4, "character": 25}, found
print("system file: %s, nothing of it shown" % codes[0])

# Through a symlink out of the repository: not read at all, said as a warning.
found = open_config("sub/outside.yaml", LAUNCH % "linked.json")
codes = [d["code"] for d in found]
assert codes == ["A3016"], found
assert found[0]["severity"] == 2, found
print("outside the repository: %s (warning), unread" % codes[0])

client.request("shutdown")
client.notify("exit")
print("exit: %d" % client.finish())
