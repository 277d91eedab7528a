#include "engine/expr.h"

#include <muParser.h>

#include <cmath>
#include <sstream>

#include "engine/error.h"

namespace evo {
namespace {

double op_mod(double a, double b) {
  if (b == 0) throw mu::ParserError("modulo by zero");
  return std::fmod(a, b);
}
double fn_ceil(double a) { return std::ceil(a); }
double fn_floor(double a) { return std::floor(a); }
double fn_cdiv(double a, double b) {
  if (b == 0) throw mu::ParserError("cdiv by zero");
  return std::ceil(a / b);
}
double fn_log2i(double a) { return std::floor(std::log2(a)); }

void define_extras(mu::Parser& p) {
  p.DefineOprt("%", op_mod, mu::prMUL_DIV);
  p.DefineFun("ceil", fn_ceil);
  p.DefineFun("floor", fn_floor);
  p.DefineFun("cdiv", fn_cdiv);
  p.DefineFun("log2i", fn_log2i);
}

}  // namespace

struct Expr::Impl {
  mu::Parser parser;
  std::map<std::string, double> slots;  // muParser binds variables by address
};

Expr::Expr(const std::string& text, const std::vector<std::string>& known)
    : text_(text), impl_(std::make_unique<Impl>()) {
  try {
    define_extras(impl_->parser);
    for (const auto& name : known) impl_->slots[name] = 0.0;
    for (auto& [name, slot] : impl_->slots) impl_->parser.DefineVar(name, &slot);
    impl_->parser.SetExpr(text);
    // GetUsedVar parses the whole expression (syntax errors surface here) and lists every
    // identifier it meets, defined or not.
    for (const auto& [name, _] : impl_->parser.GetUsedVar()) used_.push_back(name);
  } catch (const mu::ParserError& e) {
    throw UserError("expression '" + text + "': " + e.GetMsg());
  }
  for (const auto& name : used_)
    if (!impl_->slots.count(name)) throw UserError("expression '" + text + "': unknown variable '" + name + "'");
}

Expr::~Expr() = default;
Expr::Expr(Expr&&) noexcept = default;
Expr& Expr::operator=(Expr&&) noexcept = default;

double Expr::eval(const Vars& vars) const {
  for (auto& [name, slot] : impl_->slots) {
    auto it = vars.find(name);
    slot = it == vars.end() ? 0.0 : it->second;
  }
  try {
    return impl_->parser.Eval();
  } catch (const mu::ParserError& e) {
    throw UserError("expression '" + text_ + "': " + e.GetMsg());
  }
}

double eval_expr(const std::string& text, const Vars& vars) {
  std::vector<std::string> names;
  for (const auto& [k, _] : vars) names.push_back(k);
  return Expr(text, names).eval(vars);
}

std::string number_text(double x) {
  std::ostringstream o;
  o << x;
  return o.str();
}

}  // namespace evo
