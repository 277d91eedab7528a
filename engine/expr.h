// Expressions over knobs and problem sizes (constraints, shapes, launch geometry), evaluated by
// muParser. Beyond muParser's built-ins evo defines: `%` (C's remainder: the dividend's sign),
// ceil, floor, cdiv(a, b) = ceil(a / b), log2i(x), pymod(a, b) (Python's %: the divisor's sign,
// for conditions read from T1 files). Comparisons and && || yield 1 or 0; `a ? b : c` works.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace evo {

using Vars = std::map<std::string, double>;

// A parsed expression, reusable with different variable values (cheap to evaluate).
class Expr {
 public:
  // Throws UserError("<expression>: <muParser message>") if it does not parse or names a
  // variable not in `known`.
  Expr(const std::string& text, const std::vector<std::string>& known);
  ~Expr();
  Expr(Expr&&) noexcept;
  Expr& operator=(Expr&&) noexcept;

  double eval(const Vars& vars) const;  // every known variable must be in vars
  const std::string& text() const { return text_; }
  const std::vector<std::string>& used_vars() const { return used_; }

 private:
  struct Impl;
  std::string text_;
  std::vector<std::string> used_;
  std::unique_ptr<Impl> impl_;
};

// One-shot evaluation; variables are whatever `vars` holds.
double eval_expr(const std::string& text, const Vars& vars);

// The expression as C++ (double arithmetic, fully parenthesised), for generated headers such as
// `evo export --dispatch`'s: `%` becomes std::fmod, `^` std::pow, cdiv/log2i/ceil/floor/min/max/
// sqrt/abs/pymod their <cmath> forms, comparisons and && || yield 1.0 or 0.0 as in muParser. `var` gives
// each identifier's C++ text. Throws UserError naming the expression for anything else.
std::string expression_to_cpp(const std::string& text, const std::function<std::string(const std::string&)>& var);

// A value as messages and expression text show it: "2.5", "512", "1e+20" (shortest of %g's kind).
std::string number_text(double x);

}  // namespace evo
