#!/usr/bin/env bash
# Builds a fuzz target with clang, libFuzzer, ASan and UBSan (compiler only, no LibTorch)
# into build-fuzz/, then fuzzes from the committed seed corpus.
#   scripts/fuzz.sh                 # the parser, 1,000,000 runs
#   scripts/fuzz.sh -runs=100000    # any libFuzzer flags
#   FUZZ_TARGET=config_fuzzer scripts/fuzz.sh   # the YAML/JSON config reader
#   FUZZ_TARGET=safetensors_fuzzer scripts/fuzz.sh   # the safetensors reader
#   FUZZ_TARGET=lsp_fuzzer scripts/fuzz.sh   # accelc lsp: its transport and its features
#   FUZZ_TARGET=torch_pickle_fuzzer scripts/fuzz.sh   # the torch.save reader of import-state
#   FUZZ_TARGET=plan_fuzzer scripts/fuzz.sh   # the plan reader every worker starts with
#   FUZZ_TARGET=manifest_fuzzer scripts/fuzz.sh   # the checkpoint manifest
#   FUZZ_TARGET=csv_fuzzer scripts/fuzz.sh   # the CSV dataset reader
#   FUZZ_TARGET=train_state_fuzzer scripts/fuzz.sh   # a checkpoint's trainer_state.json and its neighbours
#   scripts/fuzz.sh --smoke         # CI: every target, 3,000 inputs each from its seeds, seed 1
# Crashes land in build-fuzz/crashes/; turn each into a file test under tests/lit.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build-fuzz"
"$root/scripts/setup.sh" --fuzz
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_CXX_STANDARD=17 \
    -DACCEL_BUILD_RUNTIME=OFF -DACCEL_BUILD_TESTS=OFF -DACCEL_BUILD_BENCH=OFF -DACCEL_BUILD_FUZZ=ON \
    "-DCMAKE_CXX_FLAGS=-fsanitize=address,undefined -fsanitize=fuzzer-no-link -fno-sanitize-recover=undefined -fno-omit-frame-pointer" \
    "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined"
fi
# The committed seeds and the dictionary of a target.
seeds_of() {
  case "$1" in
    config_fuzzer) seeds="$root/tests/fuzz/config-corpus" dict="$root/tests/fuzz/config.dict" ;;
    lsp_fuzzer) seeds="$root/tests/fuzz/lsp-corpus" dict="$root/tests/fuzz/accel.dict" ;;
    safetensors_fuzzer)
      seeds="$root/tests/fuzz/safetensors-corpus" dict="$root/tests/fuzz/safetensors.dict" ;;
    plan_fuzzer) seeds="$root/tests/fuzz/plan-corpus" dict="$root/tests/fuzz/config.dict" ;;
    csv_fuzzer) seeds="$root/tests/fuzz/csv-corpus" dict="$root/tests/fuzz/csv.dict" ;;
    manifest_fuzzer) seeds="$root/tests/fuzz/manifest-corpus" dict="$root/tests/fuzz/config.dict" ;;
    train_state_fuzzer)
      seeds="$root/tests/fuzz/train-state-corpus" dict="$root/tests/fuzz/train_state.dict" ;;
    torch_pickle_fuzzer)
      seeds="$root/tests/fuzz/torch-pickle-corpus" dict="$root/tests/fuzz/torch_pickle.dict" ;;
    *) seeds="$root/tests/fuzz/corpus" dict="$root/tests/fuzz/accel.dict" ;;
  esac
}

mkdir -p "$build/crashes"
if [[ ${1:-} == --smoke ]]; then
  # CI's short run: every target from its seeds alone, with a fixed seed, so that a run is the
  # same inputs every time and a failure reproduces; the grown corpora are left alone.
  # Every target tests/fuzz/CMakeLists.txt declares, as the configure step (rerun here, so that
  # the list is current) writes them.
  cmake "$build" >/dev/null
  mapfile -t targets <"$build/fuzz-targets.txt"
  cmake --build "$build" --target "${targets[@]}"
  for target in "${targets[@]}"; do
    seeds_of "$target"
    corpus="$(mktemp -d)"
    trap 'rm -rf "$corpus"' EXIT
    started=$SECONDS
    if ! "$build/bin/$target" "$corpus" "$seeds" -dict="$dict" -max_len=4096 -timeout=10 \
      -rss_limit_mb=4096 -seed=1 -runs="${FUZZ_SMOKE_RUNS:-3000}" -artifact_prefix="$build/crashes/" \
      >"$build/smoke-$target.log" 2>&1; then
      tail -40 "$build/smoke-$target.log" >&2
      echo "fuzz smoke: $target failed; the input is in $build/crashes/" >&2
      rm -rf "$corpus"
      exit 1
    fi
    rm -rf "$corpus"
    echo "fuzz smoke: $target, ${FUZZ_SMOKE_RUNS:-3000} inputs, no failure ($((SECONDS - started)) s)"
  done
  exit 0
fi

target="${FUZZ_TARGET:-parse_fuzzer}"
cmake --build "$build" --target "$target"
args=("$@")
[[ ${#args[@]} -eq 0 ]] && args=(-runs=1000000)
seeds_of "$target"
mkdir -p "$build/corpus-$target"
exec "$build/bin/$target" "$build/corpus-$target" "$seeds" \
  -dict="$dict" -max_len=4096 -timeout=10 -rss_limit_mb=4096 \
  -artifact_prefix="$build/crashes/" -print_final_stats=1 "${args[@]}"
