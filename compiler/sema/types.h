#ifndef ACCEL_COMPILER_SEMA_TYPES_H_
#define ACCEL_COMPILER_SEMA_TYPES_H_

#include <string>
#include <vector>

namespace accel::sema {

// A resolved schema type.
struct Type {
  enum class Kind {
    Bool,
    Int,
    Float,
    String,
    Path,
    Host,  // a host name or IP address (scalars::WhyNotAHost)
    Duration,
    Bytes,
    Enum,
    Record,
    List,
    Map,
    Optional,
    Union
  };
  Kind kind = Kind::Bool;
  std::string name;        // enum or record name
  std::vector<Type> args;  // list element; map key and value; optional inner; union alternatives

  // How the type reads in messages: `int`, `list<int>`, `SGD | AdamW`, `int?`.
  std::string Describe() const;
};

}  // namespace accel::sema

#endif  // ACCEL_COMPILER_SEMA_TYPES_H_
