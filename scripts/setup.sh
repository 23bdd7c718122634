#!/usr/bin/env bash
# Installs every Debian 12 package that Accel's build, tests and benchmarks need.
# Idempotent and non-interactive: safe to run on a fresh machine and on one already set up.
set -euo pipefail

packages=(
  # toolchain
  g++ cmake ninja-build lld ccache pkg-config
  # grammar: the ANTLR tool (4.7.2, Java) generates the parser at build time; runtime 4.9
  antlr4 libantlr4-runtime-dev
  # compiler support libraries
  llvm-14-dev libfmt-dev libyaml-cpp-dev
  # runtime: Gloo's headers for ProcessGroupGloo (the torch wheel compiles Gloo in but ships no
  # headers for it); LibTorch itself, with its BLAS linked in, comes from PyPI, below
  libgloo-dev
  # the Python environment that holds the pinned torch wheel (python/requirements.txt)
  python3-venv
  # tests and benchmarks
  # (lit ships inside llvm-14-tools as /usr/lib/llvm-14/build/utils/lit/lit.py and needs python3)
  libgtest-dev libgmock-dev libbenchmark-dev llvm-14-tools python3
  # docs tests: PyYAML reads the corpus for the JSON Schema check; headless Chromium runs the
  # search of the generated reference.html, and renders `accelrun report`'s page (e2e_report)
  python3-yaml chromium
  # checkpoints: an independent safetensors reader (numpy) in the interop test; libcrypto's
  # SHA-256 for checkpoint manifests (about 4x LLVM's)
  python3-numpy libssl-dev
  # accelc lsp: Neovim's built-in LSP client drives the editor end-to-end test
  neovim
  # bench/check_throughput.py and bench/first_step.py: what Accelerate, imported from a source
  # checkout, needs besides torch and PyYAML (Debian's, for /usr/bin/python3)
  python3-packaging python3-psutil
  # launcher tests under real schedulers (tests/e2e/real_*_test.py start their own daemons;
  # nothing here starts one): a one-node Slurm cluster with munge authentication, and the two
  # MPI implementations whose launchers Debian ships
  slurm-wlm munge openmpi-bin mpich
  # the two-namespace multi-node test (ip netns, veth) and the fsync-order test (strace)
  iproute2 strace
  # `accelc init` driven in a real terminal, as a person answers it
  tmux
  # GNU time: a process's own peak memory, for bench/reader_memory.py
  time
)

# `--fuzz` adds clang and its sanitizer and libFuzzer runtimes (scripts/fuzz.sh).
if [[ "${1:-}" == "--fuzz" ]]; then
  packages+=(clang-14 libclang-rt-14-dev)
fi

# The VS Code package's tests (editors/vscode, ctest label `editors`) run on Node.js 18+ and npm.
# Only where there is no npm yet: a Node.js installed another way (NodeSource's `nodejs` bundles
# npm and conflicts with Debian's) is kept rather than replaced by Debian's older one.
if ! command -v npm >/dev/null 2>&1; then
  packages+=(nodejs npm)
fi

sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all ${#packages[@]} packages present"
fi

# LibTorch, and PyTorch for the tests' reference loops: the pinned wheels of python/requirements.txt
# in one virtual environment. It lives in the user's cache, named by the requirements' hash, so
# every checkout (CI's fresh clones too) shares one 5 GB install; the checkout links it as .venv,
# where CMake looks. ACCEL_PYTHON_ENV puts it elsewhere.
requirements="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/python/requirements.txt"
root="$(dirname "$(dirname "$requirements")")"
pins_hash=$(sha256sum "$requirements" | cut -c1-12)
python_env="${ACCEL_PYTHON_ENV:-${XDG_CACHE_HOME:-$HOME/.cache}/accel/python-$pins_hash}"
if ! cmp -s "$requirements" "$python_env/accel-requirements.txt"; then
  echo "setup: installing python/requirements.txt into $python_env (torch with CUDA: about 5 GB)"
  /usr/bin/python3 -m venv "$python_env"
  "$python_env/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
  cp "$requirements" "$python_env/accel-requirements.txt"
else
  echo "setup: python/requirements.txt already installed in $python_env"
fi
ln -sfn "$python_env" "$root/.venv"
