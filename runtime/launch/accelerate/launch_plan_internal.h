#ifndef ACCEL_RUNTIME_LAUNCH_ACCELERATE_LAUNCH_PLAN_INTERNAL_H_
#define ACCEL_RUNTIME_LAUNCH_ACCELERATE_LAUNCH_PLAN_INTERNAL_H_

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "llvm/Support/Error.h"
#include "runtime/launch/accelerate/launch_flags.h"
#include "runtime/launch/accelerate/launch_plan.h"
#include "runtime/launch/accelerate/python_value.h"

// What the steps of PlanScriptLaunch share: the config merged into the command line
// (launch_config.cpp), the variables each feature sets (launch_env.cpp) and the launchers that
// use both (launch_plan.cpp). Python's small conversions are here, as Accelerate applies them.
// Not for other folders.
namespace accel::rt::launch::accelerate {

inline llvm::Error Fail(const std::string& message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

// Python's int() of a value that is already a number (bools are ints in Python).
inline std::optional<int64_t> AsInt(const PyValue& value) {
  if (const auto* i = std::get_if<int64_t>(&value.value)) return *i;
  if (const auto* b = std::get_if<bool>(&value.value)) return *b ? 1 : 0;
  if (const std::string* s = value.String()) {
    try {
      size_t used = 0;
      long long parsed = std::stoll(*s, &used);
      if (used == s->size()) return parsed;
    } catch (...) {
    }
  }
  return std::nullopt;
}

inline std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

inline std::string Upper(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::toupper(c); });
  return text;
}

inline const PyValue* Lookup(const PyDict& dict, const std::string& key) {
  for (const auto& [name, value] : dict)
    if (name == key) return &value;
  return nullptr;
}

inline bool IsText(const PyValue& value, const char* text) {
  const std::string* s = value.String();
  return s && *s == text;
}

inline bool Flag(const LaunchNamespace& ns, const char* name) { return Truthy(ns.Get(name)); }

// The command line after `_validate_launch_command`: the config file merged in, Accelerate's
// defaults filled in, and what it warned about on the way.
struct Validated {
  LaunchNamespace ns;
  std::optional<PyDict> defaults;
  bool mp_from_config = false;
  std::vector<std::string> warnings;
};

// `_validate_launch_command`: the command line `ns` with the config file merged in. Fails where
// Accelerate raises (an unknown key, two launch modes, too few processes or GPU ids).
llvm::Expected<Validated> Validate(LaunchNamespace ns, const std::optional<ConfigFile>& file,
                                   const Host& host);

// The variables each of Accelerate's features adds to `env` (prepare_*_env's shared parts).
// CUDA_VISIBLE_DEVICES from `gpu_ids` (Accelerate picks another variable for XPU, NPU and the
// other accelerators, whose torch extensions accelrun cannot ask about).
void SetVisibleDevices(const LaunchNamespace& ns, std::map<std::string, std::string>& env);
// ACCELERATE_MIXED_PRECISION and, for fp8, every fp8_ setting; fails on an unknown mode.
llvm::Error SetMixedPrecision(const LaunchNamespace& ns, std::map<std::string, std::string>& env);
// ACCELERATE_DYNAMO_*; fails on an unknown backend.
llvm::Error SetDynamo(const LaunchNamespace& ns, std::map<std::string, std::string>& env);
// ACCELERATE_USE_PARALLELISM_CONFIG and PARALLELISM_CONFIG_*, with --use_parallelism_config.
void SetParallelismConfig(const LaunchNamespace& ns, std::map<std::string, std::string>& env);
// ACCELERATE_USE_FSDP and FSDP_*.
void SetFsdp(const LaunchNamespace& ns, std::map<std::string, std::string>& env);
// ACCELERATE_USE_MEGATRON_LM and MEGATRON_LM_*.
void SetMegatron(const LaunchNamespace& ns, std::map<std::string, std::string>& env);

}  // namespace accel::rt::launch::accelerate

#endif  // ACCEL_RUNTIME_LAUNCH_ACCELERATE_LAUNCH_PLAN_INTERNAL_H_
