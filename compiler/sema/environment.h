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

}  // namespace accel::sema

#endif  // ACCEL_COMPILER_SEMA_ENVIRONMENT_H_
