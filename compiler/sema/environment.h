#ifndef ACCEL_COMPILER_SEMA_ENVIRONMENT_H_
#define ACCEL_COMPILER_SEMA_ENVIRONMENT_H_

#include <map>
#include <optional>
#include <string>

namespace accel::sema {

// Read access to environment variables, behind an interface so tests can fake it.
class Environment {
 public:
  virtual ~Environment() = default;
  // The value of `name`, or empty when it is not set.
  virtual std::optional<std::string> Get(const std::string& name) const = 0;
};

// The real process environment.
class ProcessEnvironment final : public Environment {
 public:
  std::optional<std::string> Get(const std::string& name) const override;
};

// A fixed set of variables, for tests and for `accelc --env-file`-style use.
class MapEnvironment final : public Environment {
 public:
  explicit MapEnvironment(std::map<std::string, std::string> values = {}) : values_(std::move(values)) {}
  std::optional<std::string> Get(const std::string& name) const override;

 private:
  std::map<std::string, std::string> values_;
};

// `text` with `${VAR}` and `${VAR:-default}` replaced by the variable's value from `environment`
// (the default where it is unset or empty); `$${` writes a literal `${`. Null when a variable
// without a default is unset or empty, whose name is then put in `unset`.
std::optional<std::string> Interpolate(const std::string& text, const Environment& environment,
                                       std::string& unset);

}  // namespace accel::sema

#endif  // ACCEL_COMPILER_SEMA_ENVIRONMENT_H_
