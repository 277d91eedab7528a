#include "engine/expr.h"

#include <muParser.h>

#include <cctype>
#include <cmath>
#include <sstream>
#include <unordered_map>

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
// Python's %, for conditions written in Python (T1 files, engine/t1.h): the remainder takes the
// divisor's sign (-1 % 32 is 31; evo's own % is C's, -1).
double fn_pymod(double a, double b) {
  if (b == 0) throw mu::ParserError("pymod by zero");
  double r = std::fmod(a, b);
  if (r != 0 && (r < 0) != (b < 0)) r += b;
  return r;
}

// Python's bitwise operators on integers, for T1 conditions (`block_size_x & (block_size_x - 1)`).
long long whole(double a, const char* op) {
  if (a != std::floor(a) || std::fabs(a) > 9007199254740992.0) throw mu::ParserError(std::string(op) + " of a non-integer");
  return static_cast<long long>(a);
}
double fn_bitor(double a, double b) { return static_cast<double>(whole(a, "bitor") | whole(b, "bitor")); }
double fn_bitxor(double a, double b) { return static_cast<double>(whole(a, "bitxor") ^ whole(b, "bitxor")); }
double fn_bitand(double a, double b) { return static_cast<double>(whole(a, "bitand") & whole(b, "bitand")); }
double fn_shift(double a, double b, bool left) {
  const long long n = whole(b, "shift");
  if (n < 0 || n > 62) throw mu::ParserError("shift count out of range");
  const long long x = whole(a, "shift");
  return static_cast<double>(left ? x << n : x >> n);
}
double fn_shiftl(double a, double b) { return fn_shift(a, b, true); }
double fn_shiftr(double a, double b) { return fn_shift(a, b, false); }

void define_extras(mu::Parser& p) {
  p.DefineOprt("%", op_mod, mu::prMUL_DIV);
  p.DefineFun("ceil", fn_ceil);
  p.DefineFun("floor", fn_floor);
  p.DefineFun("cdiv", fn_cdiv);
  p.DefineFun("log2i", fn_log2i);
  p.DefineFun("pymod", fn_pymod);
  p.DefineFun("bitor", fn_bitor);
  p.DefineFun("bitxor", fn_bitxor);
  p.DefineFun("bitand", fn_bitand);
  p.DefineFun("shiftl", fn_shiftl);
  p.DefineFun("shiftr", fn_shiftr);
}

}  // namespace

struct Expr::Impl {
  mu::Parser parser;
  std::map<std::string, double> slots;  // muParser binds variables by address
  // The slots the expression reads: eval sets only these (a constraint names 2-4 of a space's
  // 30-40 variables; setting all of them was most of enumerating sdpa_fp8_wgmma's space).
  std::vector<std::pair<std::string, double*>> used_slots;
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
  for (const auto& name : used_) {
    auto it = impl_->slots.find(name);
    if (it == impl_->slots.end()) throw UserError("expression '" + text + "': unknown variable '" + name + "'");
    impl_->used_slots.emplace_back(name, &it->second);
  }
}

Expr::~Expr() = default;
Expr::Expr(Expr&&) noexcept = default;
Expr& Expr::operator=(Expr&&) noexcept = default;

double Expr::eval(const Vars& vars) const {
  for (auto& [name, slot] : impl_->used_slots) {
    auto it = vars.find(name);
    *slot = it == vars.end() ? 0.0 : it->second;
  }
  try {
    return impl_->parser.Eval();
  } catch (const mu::ParserError& e) {
    throw UserError("expression '" + text_ + "': " + e.GetMsg());
  }
}

double eval_expr(const std::string& text, const Vars& vars) {
  // Parsed once per (text, variable names) and thread: building a muParser parser and parsing
  // costs 50 us to 1 ms (sdpa's shared-memory formula), and GREEN evaluates launch geometry,
  // shapes and tensor-map boxes for every problem and trial of every candidate. A text that does
  // not parse is not kept, so it throws the same message every time.
  thread_local std::unordered_map<std::string, Expr> parsed;
  std::string key = text;
  key += '\x1f';
  for (const auto& [k, _] : vars) key += k, key += ',';
  auto it = parsed.find(key);
  if (it == parsed.end()) {
    std::vector<std::string> names;
    for (const auto& [k, _] : vars) names.push_back(k);
    Expr e(text, names);
    if (parsed.size() >= 4096) parsed.clear();  // a bound, not a policy: spaces use a few dozen
    it = parsed.emplace(std::move(key), std::move(e)).first;
  }
  return it->second.eval(vars);
}

std::string number_text(double x) {
  std::ostringstream o;
  o << x;
  return o.str();
}

namespace {

// Recursive descent over muParser's grammar as evo uses it, lowest precedence first:
// ?:, ||, &&, comparisons, + -, * / %, unary -, ^ (right-associative), primaries.
class CppWriter {
 public:
  CppWriter(const std::string& text, const std::function<std::string(const std::string&)>& var)
      : s_(text), var_(var) {}
  std::string run() {
    std::string e = ternary();
    skip();
    if (i_ != s_.size()) fail("unexpected '" + s_.substr(i_, 1) + "'");
    return e;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw UserError("expression '" + s_ + "': cannot be written as C++: " + why);
  }
  void skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool eat(const std::string& op) {
    skip();
    if (s_.compare(i_, op.size(), op) != 0) return false;
    i_ += op.size();
    return true;
  }
  static std::string truth(const std::string& e) { return "((" + e + ") ? 1.0 : 0.0)"; }
  std::string ternary() {
    std::string c = logic_or();
    if (!eat("?")) return c;
    std::string a = ternary();
    if (!eat(":")) fail("'?' without ':'");
    std::string b = ternary();
    return "((" + c + ") != 0.0 ? (" + a + ") : (" + b + "))";
  }
  std::string logic_or() {
    std::string l = logic_and();
    while (eat("||")) l = truth("(" + l + ") != 0.0 || (" + logic_and() + ") != 0.0");
    return l;
  }
  std::string logic_and() {
    std::string l = compare();
    while (eat("&&")) l = truth("(" + l + ") != 0.0 && (" + compare() + ") != 0.0");
    return l;
  }
  std::string compare() {
    std::string l = additive();
    for (;;) {
      std::string op;
      for (const char* o : {"==", "!=", "<=", ">=", "<", ">"})
        if (eat(o)) {
          op = o;
          break;
        }
      if (op.empty()) return l;
      l = truth("(" + l + ") " + op + " (" + additive() + ")");
    }
  }
  std::string additive() {
    std::string l = multiplicative();
    for (;;) {
      skip();
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) {
        const char op = s_[i_++];
        l = "(" + l + " " + op + " " + multiplicative() + ")";
      } else {
        return l;
      }
    }
  }
  std::string multiplicative() {
    std::string l = unary();
    for (;;) {
      skip();
      if (i_ < s_.size() && (s_[i_] == '*' || s_[i_] == '/')) {
        const char op = s_[i_++];
        l = "(" + l + " " + op + " " + unary() + ")";
      } else if (eat("%")) {
        l = "std::fmod(" + l + ", " + unary() + ")";
      } else {
        return l;
      }
    }
  }
  std::string unary() {  // muParser: -2^2 is -(2^2)
    if (eat("-")) return "(-" + unary() + ")";
    if (eat("+")) return unary();
    return power();
  }
  std::string power() {
    std::string b = primary();
    if (eat("^")) return "std::pow(" + b + ", " + unary() + ")";
    return b;
  }
  std::string primary() {
    skip();
    if (i_ >= s_.size()) fail("ends too early");
    const char c = s_[i_];
    if (c == '(') {
      ++i_;
      std::string e = ternary();
      if (!eat(")")) fail("missing ')'");
      return "(" + e + ")";
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      std::size_t used = 0;
      const double v = std::stod(s_.substr(i_), &used);
      i_ += used;
      return number_text(v) + (number_text(v).find_first_of(".e") == std::string::npos ? ".0" : "");
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      std::size_t j = i_;
      while (j < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[j])) || s_[j] == '_')) ++j;
      const std::string name = s_.substr(i_, j - i_);
      i_ = j;
      if (!eat("(")) return "double(" + var_(name) + ")";
      std::vector<std::string> args;
      if (!eat(")")) {
        do args.push_back(ternary());
        while (eat(","));
        if (!eat(")")) fail("missing ')' after the arguments of " + name);
      }
      auto want = [&](std::size_t n) {
        if (args.size() != n) fail(name + " takes " + std::to_string(n) + " argument(s)");
      };
      if (name == "min" || name == "max") {
        if (args.empty()) fail(name + " without arguments");
        std::string e = args[0];
        for (std::size_t k = 1; k < args.size(); ++k) e = "std::f" + name + "(" + e + ", " + args[k] + ")";
        return e;
      }
      if (name == "cdiv") return want(2), "std::ceil((" + args[0] + ") / (" + args[1] + "))";
      if (name == "log2i") return want(1), "std::floor(std::log2(" + args[0] + "))";
      if (name == "pymod")  // a - b * floor(a / b): Python's remainder, the divisor's sign
        return want(2), "((" + args[0] + ") - (" + args[1] + ") * std::floor((" + args[0] + ") / (" + args[1] + ")))";
      if (name == "abs") return want(1), "std::fabs(" + args[0] + ")";
      for (const auto& [fn, op] : {std::pair<const char*, const char*>{"bitor", "|"}, {"bitxor", "^"}, {"bitand", "&"},
                                   {"shiftl", "<<"}, {"shiftr", ">>"}})
        if (name == fn)
          return want(2), "static_cast<double>(static_cast<long long>(" + args[0] + ") " + op + " static_cast<long long>(" +
                              args[1] + "))";
      for (const char* f : {"ceil", "floor", "sqrt", "exp", "log2", "log10", "sin", "cos", "tan"})
        if (name == f) return want(1), "std::" + name + "(" + args[0] + ")";
      if (name == "ln") return want(1), "std::log(" + args[0] + ")";
      fail("function " + name + " has no C++ form here");
    }
    fail("unexpected '" + std::string(1, c) + "'");
  }

  const std::string& s_;
  const std::function<std::string(const std::string&)>& var_;
  std::size_t i_ = 0;
};

}  // namespace

std::string expression_to_cpp(const std::string& text, const std::function<std::string(const std::string&)>& var) {
  return CppWriter(text, var).run();
}

}  // namespace evo
