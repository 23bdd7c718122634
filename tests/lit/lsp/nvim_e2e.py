"""Neovim's built-in LSP client against `accelc lsp`, headless: open a spec with a typo, wait
for the diagnostic, apply the code action, write the file; then check the file on disk.
lit runs it only where nvim is installed (scripts/setup.sh installs it).

usage: nvim_e2e.py ACCELC WORKDIR
"""
import os
import shutil
import subprocess
import sys

accelc, workdir = os.path.abspath(sys.argv[1]), sys.argv[2]
nvim = shutil.which("nvim")
here = os.path.dirname(os.path.abspath(__file__))
shutil.rmtree(workdir, ignore_errors=True)
os.makedirs(workdir)
spec = os.path.join(workdir, "typo.accel")
with open(spec, "w") as f:
    f.write(open(os.path.join(here, "Inputs", "typo.accel.in")).read())
report = os.path.join(workdir, "report.txt")
# Neovim keeps state (shada, logs) under the XDG folders: all of it inside the test's folder.
env = dict(os.environ, ACCELC=accelc, ACCEL_SPEC=spec, ACCEL_NVIM_REPORT=report,
           ACCEL_NVIM_PLUGIN=os.path.join(here, "..", "..", "..", "editors", "nvim", "accel.lua"))
for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
    env[name] = os.path.join(workdir, name.lower())
try:
    run = subprocess.run([nvim, "--headless", "--clean", "-n", "-c", "luafile " + os.path.join(here, "nvim_e2e.lua")],
                         env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
except subprocess.TimeoutExpired:
    sys.exit("nvim did not finish within 60 s; report so far:\n" + (open(report).read() if os.path.exists(report) else ""))
print(open(report).read(), end="")
assert run.returncode == 0, (run.returncode, run.stderr)
text = open(spec).read()
assert "mixed_precision = bf16" in text and "mixed_precison" not in text, text
print("file on disk: fixed")
