# lit configuration for Accel's file tests: each .accel or .test file carries RUN lines.
import os
import shutil
import subprocess
import sys
import lit.formats

config.name = "accel"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".accel", ".test", ".yaml", ".yml", ".json"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.accel_binary_dir, "tests", "lit")
config.excludes = ["lit.cfg.py", "lit.site.cfg.py.in", "Inputs", "json-inputs", "check_coverage.py", "extract_examples.py"]

bin_dir = os.path.join(config.accel_binary_dir, "bin")
# `lit --param accelc=build-fuzz/bin/accelc` runs the file tests against another build, e.g.
# the sanitizer build of scripts/fuzz.sh.
accelc = lit_config.params.get("accelc", os.path.join(bin_dir, "accelc"))
config.substitutions.append(("%accelc", os.path.abspath(accelc)))
config.substitutions.append(("%accelrun-worker", os.path.join(bin_dir, "accelrun-worker")))
config.substitutions.append(("%accelrun", os.path.join(bin_dir, "accelrun")))
config.substitutions.append(("%specs", os.path.join(config.accel_source_dir, "specs")))
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "Inputs")))
# Real published Accelerate configs: shared/ sits beside the repository (also in CI's clone).
corpus = os.path.abspath(os.path.join(config.accel_source_dir, "..", "shared", "reference", "accelerate-configs"))
config.substitutions.append(("%corpus", corpus))
config.substitutions.append(("%python", sys.executable))
# A sanitizer build's accelc links libstdc++ and libgcc as it likes: GCC loads the shared
# sanitizer runtimes (seen by ldd), clang links them in (seen by their symbols in the binary).
if os.path.exists(accelc) and shutil.which("ldd"):
    linked = subprocess.run(["ldd", accelc], capture_output=True, text=True).stdout
    with open(accelc, "rb") as binary:
        linked_in = binary.read()
    if "libasan" in linked or "libubsan" in linked or b"__asan_init" in linked_in or b"__ubsan_handle" in linked_in:
        config.available_features.add("sanitizer-runtime")
# The Neovim end-to-end test of `accelc lsp` needs nvim (scripts/setup.sh installs it).
if shutil.which("nvim"):
    config.available_features.add("nvim")
config.environment["PATH"] = os.pathsep.join([config.llvm_tools_dir, config.environment.get("PATH", "")])
# Diagnostics must not depend on the developer's environment or terminal.
config.environment["NO_COLOR"] = "1"
for name in list(os.environ):
    if name.startswith("ACCELERATE_"):
        config.environment.pop(name, None)
