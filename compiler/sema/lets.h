#ifndef ACCEL_COMPILER_SEMA_LETS_H_
#define ACCEL_COMPILER_SEMA_LETS_H_

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ast/ast.h"
#include "compiler/diagnostics/diagnostic.h"
#include "compiler/sema/check.h"
#include "compiler/sema/schema.h"
#include "compiler/sema/value.h"

// The `let` constants a spec's values may name: which are visible in which file of the
// composition, a name declared twice, a let that names itself, and a typed let's check against
// its own type. A let's value is read where it is used, as the type of the field it sets.
namespace accel::sema {

class Lets {
 public:
  // `schema` resolves a typed let's type; findings go to `diagnostics`. Both must outlive this.
  Lets(const Schema& schema, diag::DiagnosticEngine& diagnostics)
      : schema_(schema), diagnostics_(diagnostics) {}

  // Makes `bindings` nameable, each in its `visible_in` file. A name bound twice for one file
  // is reported (A2002) with a note at the first binding, which stands.
  void Declare(const std::vector<LetBinding>& bindings);

  // Takes over `outer`'s bindings and the expansions under way in it: a union's alternative is
  // tried on a fresh checker that is still inside them. Typed lets are checked afresh, so their
  // findings go to this one's diagnostics.
  void ContinueFrom(const Lets& outer);

  // The `let` a name in a value written in `file` refers to (`lr`, or `base.lr` from an aliased
  // import), or null. Lets are visible in the files of the composition, not in the stdlib's
  // defaults.
  const LetBinding* Named(const ast::Expr& expr, const source::SourceFile* file) const;

  // How a let's value is read: the caller's conversion of an expression to a type at a path.
  using Convert = std::function<std::optional<Value>(const ast::Expr& expr, const Type& type,
                                                     const source::SourceFile* file,
                                                     const std::string& path)>;

  // The value of `binding`, named by `use` in `file`, as a value of `type` at `path`, with the
  // use site as its provenance. Null when it does not fit, names itself (A2012), or its own
  // type refuses it; each is reported.
  std::optional<Value> Expand(const LetBinding& binding, const ast::Expr& use, const Type& type,
                              const source::SourceFile* file, const std::string& path,
                              const Convert& convert);

 private:
  bool TypeAccepts(const LetBinding& binding, const Convert& convert);

  const Schema& schema_;
  diag::DiagnosticEngine& diagnostics_;
  // Lets by the file whose values may name them and the name written there.
  std::map<std::pair<const source::SourceFile*, std::string>, LetBinding> bindings_;
  std::set<const ast::LetDecl*> expanding_;      // lets being expanded, to catch cycles
  std::map<const ast::LetDecl*, bool> checked_;  // typed lets already checked, and whether they fit
};

}  // namespace accel::sema

#endif  // ACCEL_COMPILER_SEMA_LETS_H_
