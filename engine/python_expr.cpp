// A recursive-descent parser for Python's expression grammar (the Python 3 reference, section 6,
// "Expressions"), lowest precedence first: conditional expression, or, and, not, comparisons,
// | ^ & << >> (refused), + -, * / // %, unary - +, **, then calls, subscripts and atoms.
#include "engine/python_expr.h"

#include <algorithm>
#include <charconv>
#include <cctype>
#include <cmath>
#include <optional>
#include <set>

namespace evo::py {

enum class Kind { Number, Name, List, ListComp, Call, Subscript, Unary, Binary, Compare, And, Or, Not, IfElse };

struct Node {
  Kind kind = Kind::Number;
  Value number;                  // Number
  std::string name;              // Name, Call (the function), ListComp (the loop variable)
  std::string op;                // Unary, Binary; Compare: ops[i] between operands i and i+1
  std::vector<std::string> ops;  // Compare
  std::vector<Tree> kids;        // operands, list items, call arguments; ListComp: item, iterable, conditions...
};

namespace {

Tree make(Kind k, std::vector<Tree> kids = {}, std::string name = {}, std::string op = {}) {
  auto n = std::make_shared<Node>();
  n->kind = k;
  n->kids = std::move(kids);
  n->name = std::move(name);
  n->op = std::move(op);
  return n;
}

struct Token {
  enum Type { Number, Name, Op, End } type = End;
  std::string text;
  std::size_t at = 0;
};

// Two-character operators first, so "//" is not read as two "/".
const char* const kOps[] = {"**", "//", "<=", ">=", "==", "!=", "<<", ">>", "+", "-", "*", "/", "%", "<", ">",
                            "(",  ")",  "[",  "]",  ",",  ":",  "~",  "&",  "|", "^", ".", "@", "="};

std::vector<Token> tokenize(const std::string& s) {
  std::vector<Token> out;
  std::size_t i = 0;
  while (true) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (i >= s.size()) break;
    const char c = s[i];
    Token t;
    t.at = i;
    if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      std::size_t j = i;
      if (c == '0' && j + 1 < s.size() && (s[j + 1] == 'x' || s[j + 1] == 'X')) {
        j += 2;
        while (j < s.size() && (std::isxdigit(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      } else {
        while (j < s.size() && (std::isdigit(static_cast<unsigned char>(s[j])) || s[j] == '.' || s[j] == '_')) ++j;
        if (j < s.size() && (s[j] == 'e' || s[j] == 'E')) {
          std::size_t k = j + 1;
          if (k < s.size() && (s[k] == '+' || s[k] == '-')) ++k;
          if (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k]))) {
            j = k;
            while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
          }
        }
      }
      t.type = Token::Number;
      t.text = s.substr(i, j - i);
      i = j;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      std::size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      t.type = Token::Name;
      t.text = s.substr(i, j - i);
      i = j;
    } else if (c == '"' || c == '\'') {
      throw PyError("a string (at column " + std::to_string(i + 1) + ") is not supported: evo's knobs are numbers");
    } else {
      for (const char* op : kOps)
        if (s.compare(i, std::char_traits<char>::length(op), op) == 0) {
          t.type = Token::Op;
          t.text = op;
          break;
        }
      if (t.type != Token::Op) throw PyError("unexpected '" + std::string(1, c) + "' at column " + std::to_string(i + 1));
      i += t.text.size();
    }
    out.push_back(std::move(t));
  }
  out.push_back(Token{Token::End, "", s.size()});
  return out;
}

Value parse_number(const std::string& text) {
  std::string digits;
  for (char c : text)
    if (c != '_') digits += c;
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X'))
    return Value::integer(static_cast<double>(std::stoull(digits.substr(2), nullptr, 16)));
  const bool real = digits.find_first_of(".eE") != std::string::npos;
  double v = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || end != digits.data() + digits.size()) throw PyError("'" + text + "' is not a number");
  return real ? Value::real(v) : Value::integer(v);
}

class Parser {
 public:
  explicit Parser(const std::string& text) : toks_(tokenize(text)) {}

  Tree run() {
    Tree t = test();
    if (peek().type != Token::End) fail("unexpected '" + peek().text + "'");
    return t;
  }

 private:
  const Token& peek() const { return toks_[i_]; }
  [[noreturn]] void fail(const std::string& why) const {
    throw PyError(why + " at column " + std::to_string(peek().at + 1));
  }
  bool is_op(const char* op) const { return peek().type == Token::Op && peek().text == op; }
  bool is_word(const char* w) const { return peek().type == Token::Name && peek().text == w; }
  bool eat_op(const char* op) {
    if (!is_op(op)) return false;
    ++i_;
    return true;
  }
  bool eat_word(const char* w) {
    if (!is_word(w)) return false;
    ++i_;
    return true;
  }
  void expect(const char* op) {
    if (!eat_op(op)) fail(std::string("expected '") + op + "'");
  }

  // test: or_test ['if' or_test 'else' test]
  Tree test() {
    Tree a = or_test();
    if (!eat_word("if")) return a;
    Tree c = or_test();
    if (!eat_word("else")) fail("'if' without 'else'");
    return make(Kind::IfElse, {c, a, test()});
  }
  Tree or_test() {
    Tree l = and_test();
    while (eat_word("or")) l = make(Kind::Or, {l, and_test()});
    return l;
  }
  Tree and_test() {
    Tree l = not_test();
    while (eat_word("and")) l = make(Kind::And, {l, not_test()});
    return l;
  }
  Tree not_test() {
    if (eat_word("not")) return make(Kind::Not, {not_test()});
    return comparison();
  }
  Tree comparison() {
    Tree first = bitwise();
    std::vector<Tree> operands{first};
    std::vector<std::string> ops;
    for (;;) {
      std::string op;
      for (const char* o : {"<", ">", "==", ">=", "<=", "!="})
        if (is_op(o)) op = o;
      if (!op.empty()) {
        ++i_;
      } else if (is_word("in")) {
        ++i_;
        op = "in";
      } else if (is_word("not") && toks_[i_ + 1].type == Token::Name && toks_[i_ + 1].text == "in") {
        i_ += 2;
        op = "not in";
      } else if (is_word("is")) {
        fail("'is' is not supported (compare numbers with ==)");
      } else {
        break;
      }
      ops.push_back(op);
      operands.push_back(bitwise());
    }
    if (ops.empty()) return first;
    Tree n = make(Kind::Compare, operands);
    std::const_pointer_cast<Node>(n)->ops = ops;
    return n;
  }
  // | ^ & << >> sit between comparisons and arithmetic in Python, | loosest, shifts tightest (a
  // power-of-two condition `b & (b - 1) == 0` is `(b & (b - 1)) == 0`, as in Python).
  Tree bitwise() { return bit_level(0); }
  Tree bit_level(int level) {
    static const std::vector<std::vector<const char*>> kLevels = {{"|"}, {"^"}, {"&"}, {"<<", ">>"}};
    if (level == static_cast<int>(kLevels.size())) return arith();
    Tree l = bit_level(level + 1);
    for (;;) {
      std::string op;
      for (const char* o : kLevels[static_cast<std::size_t>(level)])
        if (is_op(o)) op = o;
      if (op.empty()) return l;
      ++i_;
      l = make(Kind::Binary, {l, bit_level(level + 1)}, {}, op);
    }
  }
  Tree arith() {
    Tree l = term();
    for (;;) {
      if (eat_op("+")) l = make(Kind::Binary, {l, term()}, {}, "+");
      else if (eat_op("-")) l = make(Kind::Binary, {l, term()}, {}, "-");
      else return l;
    }
  }
  Tree term() {
    Tree l = factor();
    for (;;) {
      std::string op;
      for (const char* o : {"*", "/", "//", "%"})
        if (is_op(o)) op = o;
      if (is_op("@")) fail("operator '@' is not supported");
      if (op.empty()) return l;
      ++i_;
      l = make(Kind::Binary, {l, factor()}, {}, op);
    }
  }
  Tree factor() {
    if (eat_op("-")) return make(Kind::Unary, {factor()}, {}, "-");
    if (eat_op("+")) return make(Kind::Unary, {factor()}, {}, "+");
    if (eat_op("~")) return make(Kind::Unary, {factor()}, {}, "~");
    return power();
  }
  // power: primary ['**' factor]: right-associative, and -2**2 is -(2**2).
  Tree power() {
    Tree b = primary();
    if (eat_op("**")) return make(Kind::Binary, {b, factor()}, {}, "**");
    return b;
  }
  Tree primary() {
    Tree a = atom();
    for (;;) {
      if (eat_op("(")) {
        if (a->kind != Kind::Name) fail("only a named function can be called");
        std::vector<Tree> args;
        if (!eat_op(")")) {
          do {
            if (is_op(")")) break;  // a trailing comma
            args.push_back(test());
            if (eat_op("=")) fail("keyword arguments are not supported");
          } while (eat_op(","));
          expect(")");
        }
        a = make(Kind::Call, std::move(args), a->name);
      } else if (eat_op("[")) {
        Tree index = test();
        if (is_op(":")) fail("slices are not supported");
        expect("]");
        a = make(Kind::Subscript, {a, index});
      } else if (is_op(".")) {
        fail("attributes ('.') are not supported");
      } else {
        return a;
      }
    }
  }
  Tree atom() {
    const Token t = peek();
    if (t.type == Token::Number) {
      ++i_;
      Tree n = make(Kind::Number);
      std::const_pointer_cast<Node>(n)->number = parse_number(t.text);
      return n;
    }
    if (t.type == Token::Name) {
      for (const char* kw : {"and", "or", "not", "if", "else", "for", "in", "is", "lambda"})
        if (t.text == kw) fail("unexpected '" + t.text + "'");
      ++i_;
      if (t.text == "True" || t.text == "False") {
        Tree n = make(Kind::Number);
        std::const_pointer_cast<Node>(n)->number = Value::integer(t.text == "True");
        return n;
      }
      if (t.text == "None") fail("None is not supported");
      return make(Kind::Name, {}, t.text);
    }
    if (eat_op("(")) {
      Tree e = test();
      if (!eat_op(",")) {
        expect(")");
        return e;
      }
      // A tuple, (32, 64) or (1,): to a condition or a Values list it is the list of its items.
      std::vector<Tree> items{e};
      while (!is_op(")")) {
        items.push_back(test());
        if (!eat_op(",")) break;
      }
      expect(")");
      return make(Kind::List, std::move(items));
    }
    if (eat_op("[")) {
      std::vector<Tree> items;
      if (eat_op("]")) return make(Kind::List);
      Tree first = test();
      if (eat_word("for")) {  // [item for var in iterable if cond ...]
        if (peek().type != Token::Name) fail("expected a loop variable after 'for'");
        const std::string var = peek().text;
        ++i_;
        if (!eat_word("in")) fail("expected 'in'");
        std::vector<Tree> kids{first, or_test()};
        while (eat_word("if")) kids.push_back(or_test());
        if (is_word("for")) fail("nested 'for' in a list comprehension is not supported");
        expect("]");
        return make(Kind::ListComp, std::move(kids), var);
      }
      items.push_back(first);
      while (eat_op(",")) {
        if (is_op("]")) break;
        items.push_back(test());
      }
      expect("]");
      return make(Kind::List, std::move(items));
    }
    if (t.type == Token::End) fail("the expression ends too early");
    fail("unexpected '" + t.text + "'");
  }

  std::vector<Token> toks_;
  std::size_t i_ = 0;
};

// ---- evaluation, with Python's meaning ----

double num(const Value& v, const char* what) {
  if (v.is_list) throw PyError(std::string(what) + ": a list where a number is needed");
  return v.number;
}

// Python's % and //: the remainder takes the divisor's sign, and the quotient is rounded down.
double python_mod(double a, double b) {
  if (b == 0) throw PyError("modulo by zero");
  double r = std::fmod(a, b);
  if (r != 0 && (r < 0) != (b < 0)) r += b;
  return r;
}

bool truthy(const Value& v) { return v.is_list ? !v.items.empty() : v.number != 0; }

std::vector<Value> iterate(const Value& v, const char* what) {
  if (!v.is_list) throw PyError(std::string(what) + ": a number is not iterable");
  return v.items;
}

Value arithmetic(const std::string& op, const Value& a, const Value& b) {
  if (op == "+" && a.is_list && b.is_list) {
    std::vector<Value> out = a.items;
    out.insert(out.end(), b.items.begin(), b.items.end());
    return Value::list(std::move(out));
  }
  if (op == "*" && (a.is_list != b.is_list)) {  // list * n repeats it
    const Value& l = a.is_list ? a : b;
    const Value& n = a.is_list ? b : a;
    if (!n.is_int) throw PyError("a list can only be repeated a whole number of times");
    std::vector<Value> out;
    for (double k = 0; k < n.number; ++k) out.insert(out.end(), l.items.begin(), l.items.end());
    return Value::list(std::move(out));
  }
  const double x = num(a, op.c_str()), y = num(b, op.c_str());
  const bool ints = a.is_int && b.is_int;
  if (op == "|" || op == "^" || op == "&" || op == "<<" || op == ">>") {
    if (!ints) throw PyError("operator '" + op + "' takes integers");
    const auto i = static_cast<long long>(x), j = static_cast<long long>(y);
    if ((op == "<<" || op == ">>") && (j < 0 || j > 62)) throw PyError("shift count " + std::to_string(j) + " out of range");
    const long long r = op == "|" ? (i | j) : op == "^" ? (i ^ j) : op == "&" ? (i & j) : op == "<<" ? (i << j) : (i >> j);
    return Value::integer(static_cast<double>(r));
  }
  if (op == "+") return {false, ints, x + y, {}};
  if (op == "-") return {false, ints, x - y, {}};
  if (op == "*") return {false, ints, x * y, {}};
  if (op == "/") {
    if (y == 0) throw PyError("division by zero");
    return Value::real(x / y);
  }
  if (op == "//") {
    if (y == 0) throw PyError("division by zero");
    return {false, ints, std::floor(x / y), {}};
  }
  if (op == "%") return {false, ints, python_mod(x, y), {}};
  // **: an int to a negative int power is a float in Python.
  return {false, ints && y >= 0, std::pow(x, y), {}};
}

bool compare(const std::string& op, const Value& a, const Value& b) {
  if (op == "in" || op == "not in") {
    bool found = false;
    for (const Value& e : iterate(b, op.c_str())) found |= !e.is_list && e.number == num(a, op.c_str());
    return op == "in" ? found : !found;
  }
  const double x = num(a, op.c_str()), y = num(b, op.c_str());
  if (op == "<") return x < y;
  if (op == ">") return x > y;
  if (op == "<=") return x <= y;
  if (op == ">=") return x >= y;
  if (op == "==") return x == y;
  return x != y;
}

Value call(const std::string& f, const std::vector<Value>& args) {
  auto want = [&](std::size_t lo, std::size_t hi) {
    if (args.size() < lo || args.size() > hi)
      throw PyError(f + "() takes " + (lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi)) +
                    " argument(s), " + std::to_string(args.size()) + " given");
  };
  if (f == "range") {
    want(1, 3);
    for (const Value& a : args)
      if (a.is_list || !a.is_int) throw PyError("range() takes integers");
    const double start = args.size() > 1 ? args[0].number : 0;
    const double stop = args.size() > 1 ? args[1].number : args[0].number;
    const double step = args.size() > 2 ? args[2].number : 1;
    if (step == 0) throw PyError("range() step must not be zero");
    if (std::fabs((stop - start) / step) > 1e7) throw PyError("range() of more than 10 million values");
    std::vector<Value> out;
    for (double x = start; step > 0 ? x < stop : x > stop; x += step) out.push_back(Value::integer(x));
    return Value::list(std::move(out));
  }
  if (f == "list") return want(1, 1), Value::list(iterate(args[0], "list()"));
  if (f == "len") return want(1, 1), Value::integer(static_cast<double>(iterate(args[0], "len()").size()));
  if (f == "sum") {
    want(1, 1);
    Value total = Value::integer(0);
    for (const Value& e : iterate(args[0], "sum()")) total = arithmetic("+", total, e);
    return total;
  }
  if (f == "max" || f == "min") {
    if (args.empty()) throw PyError(f + "() needs an argument");
    std::vector<Value> xs = args.size() == 1 ? iterate(args[0], (f + "() of one argument").c_str()) : args;
    if (xs.empty()) throw PyError(f + "() of an empty list");
    Value best = xs[0];
    for (const Value& x : xs)
      if (f == "max" ? num(x, "max()") > num(best, "max()") : num(x, "min()") < num(best, "min()")) best = x;
    return best;
  }
  if (f == "abs") return want(1, 1), Value{false, args[0].is_int, std::fabs(num(args[0], "abs()")), {}};
  if (f == "int") return want(1, 1), Value::integer(std::trunc(num(args[0], "int()")));
  if (f == "float") return want(1, 1), Value::real(num(args[0], "float()"));
  throw PyError("function '" + f + "' is not supported (abs, float, int, len, list, max, min, range, sum)");
}

Value eval(const Node& n, const Env& env) {
  switch (n.kind) {
    case Kind::Number: return n.number;
    case Kind::Name: {
      auto it = env.find(n.name);
      if (it == env.end()) throw PyError("unknown name '" + n.name + "'");
      return it->second;
    }
    case Kind::List: {
      std::vector<Value> items;
      for (const Tree& k : n.kids) items.push_back(eval(*k, env));
      return Value::list(std::move(items));
    }
    case Kind::ListComp: {
      std::vector<Value> out;
      Env inner = env;
      for (const Value& x : iterate(eval(*n.kids[1], env), "a list comprehension")) {
        inner[n.name] = x;
        bool keep = true;
        for (std::size_t c = 2; c < n.kids.size() && keep; ++c) keep = truthy(eval(*n.kids[c], inner));
        if (keep) out.push_back(eval(*n.kids[0], inner));
      }
      return Value::list(std::move(out));
    }
    case Kind::Call: {
      std::vector<Value> args;
      for (const Tree& k : n.kids) args.push_back(eval(*k, env));
      return call(n.name, args);
    }
    case Kind::Subscript: {
      const std::vector<Value> items = iterate(eval(*n.kids[0], env), "a subscript");
      const Value i = eval(*n.kids[1], env);
      if (i.is_list || !i.is_int) throw PyError("a list index must be an integer");
      const double at = i.number < 0 ? i.number + static_cast<double>(items.size()) : i.number;
      if (at < 0 || at >= static_cast<double>(items.size()))
        throw PyError("index " + std::to_string(static_cast<long long>(i.number)) + " out of range (" +
                      std::to_string(items.size()) + " items)");
      return items[static_cast<std::size_t>(at)];
    }
    case Kind::Unary: {
      Value v = eval(*n.kids[0], env);
      if (n.op == "-") {
        v.number = -num(v, "unary -");
      } else if (n.op == "~") {
        if (!v.is_int || v.is_list) throw PyError("operator '~' takes an integer");
        v.number = -v.number - 1;
      } else {
        num(v, "unary +");
      }
      return v;
    }
    case Kind::Binary: return arithmetic(n.op, eval(*n.kids[0], env), eval(*n.kids[1], env));
    case Kind::Compare: {
      Value left = eval(*n.kids[0], env);
      for (std::size_t i = 0; i < n.ops.size(); ++i) {
        Value right = eval(*n.kids[i + 1], env);
        if (!compare(n.ops[i], left, right)) return Value::integer(0);
        left = std::move(right);
      }
      return Value::integer(1);
    }
    case Kind::And: {
      Value a = eval(*n.kids[0], env);
      return truthy(a) ? eval(*n.kids[1], env) : a;
    }
    case Kind::Or: {
      Value a = eval(*n.kids[0], env);
      return truthy(a) ? a : eval(*n.kids[1], env);
    }
    case Kind::Not: return Value::integer(!truthy(eval(*n.kids[0], env)));
    case Kind::IfElse: return truthy(eval(*n.kids[0], env)) ? eval(*n.kids[1], env) : eval(*n.kids[2], env);
  }
  throw PyError("internal: unknown node");
}

// ---- translation to muParser ----

// The shortest text that reads back as the same double, so no literal loses precision.
std::string literal(double x) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, end);
}

struct Written {
  std::string text;
  bool boolean = false;  // always 0 or 1 (a comparison, not, True), so && and || keep its value
};

class Writer {
 public:
  explicit Writer(const Translation& tr) : tr_(tr) {}

  Written write(const Node& n) const {
    switch (n.kind) {
      case Kind::Number:
        if (n.number.number < 0) return {"(" + literal(n.number.number) + ")", false};
        return {literal(n.number.number), false};
      case Kind::Name:
        if (tr_.tunables.count(n.name)) return {n.name, false};
        if (n.name == "ProblemSize") throw PyError("ProblemSize needs an index here (ProblemSize[0])");
        throw PyError("unknown name '" + n.name + "' (not a tuning parameter)");
      case Kind::Subscript: {
        const Node& base = *n.kids[0];
        const Node& index = *n.kids[1];
        if (base.kind != Kind::Name || base.name != "ProblemSize")
          throw PyError("only ProblemSize[i] can be subscripted here");
        if (index.kind != Kind::Number || !index.number.is_int || index.number.number < 0 ||
            index.number.number >= tr_.problem_dims)
          throw PyError("ProblemSize[" + literal(index.number.number) + "]: the problem size has " +
                        std::to_string(tr_.problem_dims) + " dimension(s)");
        return {"ProblemSize_" + literal(index.number.number), false};
      }
      case Kind::Unary: {
        const Written x = write(*n.kids[0]);
        if (n.op == "~") return {"(-" + x.text + " - 1)", false};
        return n.op == "-" ? Written{"(-" + x.text + ")", false} : x;
      }
      case Kind::Binary: {
        const std::string a = write(*n.kids[0]).text, b = write(*n.kids[1]).text;
        if (n.op == "//") return {"floor(" + a + " / " + b + ")", false};
        if (n.op == "%") return {"pymod(" + a + ", " + b + ")", false};
        if (n.op == "**") return {"(" + a + " ^ " + b + ")", false};
        for (const auto& [py_op, fn] : {std::pair<const char*, const char*>{"|", "bitor"}, {"^", "bitxor"}, {"&", "bitand"},
                                        {"<<", "shiftl"}, {">>", "shiftr"}})
          if (n.op == py_op) return {std::string(fn) + "(" + a + ", " + b + ")", false};
        return {"(" + a + " " + n.op + " " + b + ")", false};
      }
      case Kind::Compare: {
        std::string out;
        for (std::size_t i = 0; i < n.ops.size(); ++i) {
          const std::string part = comparison(n.ops[i], *n.kids[i], *n.kids[i + 1]);
          out = out.empty() ? part : "(" + out + " && " + part + ")";
        }
        return {out, true};
      }
      case Kind::Not: return {"(" + write(*n.kids[0]).text + " == 0)", true};
      case Kind::And:
      case Kind::Or: {
        const Written a = write(*n.kids[0]), b = write(*n.kids[1]);
        const bool is_and = n.kind == Kind::And;
        if (a.boolean && b.boolean) return {"(" + a.text + (is_and ? " && " : " || ") + b.text + ")", true};
        // Python's value: `a and b` is a when a is false, else b; `a or b` is a when a is true, else b.
        return {"(" + a.text + (is_and ? " == 0" : " != 0") + " ? " + a.text + " : " + b.text + ")", false};
      }
      case Kind::IfElse: {
        const Written c = write(*n.kids[0]), a = write(*n.kids[1]), b = write(*n.kids[2]);
        return {"(" + c.text + " ? " + a.text + " : " + b.text + ")", a.boolean && b.boolean};
      }
      case Kind::Call: return call_text(n);
      case Kind::List:
      case Kind::ListComp: throw PyError("a list is not a number: only `x in [...]` takes a list here");
    }
    throw PyError("internal: unknown node");
  }

 private:
  std::string comparison(const std::string& op, const Node& l, const Node& r) const {
    const std::string a = write(l).text;
    if (op == "in" || op == "not in") {
      std::vector<std::string> items;
      if (r.kind == Kind::List) {
        for (const Tree& e : r.kids) items.push_back(write(*e).text);
      } else if (const std::optional<Value> v = constant(r); v && v->is_list) {  // range(1, 9), [2**i for i in ...]
        for (const Value& e : v->items) {
          if (e.is_list) throw PyError("'" + op + "' of a list of lists");
          items.push_back(literal(e.number));
        }
      } else {
        throw PyError("'" + op + "' needs a list: written out ([1, 2, 4]) or made of constants (range(1, 9))");
      }
      std::string any;
      for (const std::string& e : items) any += (any.empty() ? "" : " || ") + ("(" + a + " == " + e + ")");
      if (any.empty()) any = "0";
      return op == "in" ? "(" + any + ")" : "((" + any + ") == 0)";
    }
    return "(" + a + " " + op + " " + write(r).text + ")";
  }

  Written call_text(const Node& n) const {
    const std::string& f = n.name;
    auto one = [&]() -> const Node& {
      if (n.kids.size() != 1) throw PyError(f + "() takes 1 argument here");
      return *n.kids[0];
    };
    if (f == "max" || f == "min") {
      if (n.kids.size() == 1) {
        const Node& a = *n.kids[0];
        // max(NAME) of a tuning parameter: the largest of its values, a constant (as Kernel Tuner
        // binds a parameter to its list when it evaluates an argument's Size).
        if (a.kind == Kind::Name && tr_.tunables.count(a.name)) {
          const auto& v = tr_.tunables.at(a.name);
          return {literal(f == "max" ? *std::max_element(v.begin(), v.end()) : *std::min_element(v.begin(), v.end())),
                  false};
        }
        if (a.kind != Kind::List || a.kids.empty())
          throw PyError(f + "() of one argument takes a tuning parameter or a list written out");
        return call_of(f, a.kids);
      }
      if (n.kids.empty()) throw PyError(f + "() needs an argument");
      return call_of(f, n.kids);
    }
    if (f == "abs") return {"abs(" + write(one()).text + ")", false};
    if (f == "float") return {write(one()).text, false};
    if (f == "int") {  // toward zero
      const std::string x = write(one()).text;
      return {"(" + x + " < 0 ? ceil(" + x + ") : floor(" + x + "))", false};
    }
    // Anything else of constants alone (len([1, 2]), sum(range(4))) is its value.
    if (const std::optional<Value> v = constant(n); v && !v->is_list) return {literal(v->number), false};
    throw PyError("function '" + f + "' is not supported here (abs, float, int, max, min; others of constants alone)");
  }
  // The value of an expression that names no tuning parameter or size, else nullopt.
  static std::optional<Value> constant(const Node& n) {
    try {
      return eval(n, {});
    } catch (const PyError&) {
      return std::nullopt;
    }
  }
  Written call_of(const std::string& f, const std::vector<Tree>& args) const {
    if (args.size() == 1) return write(*args[0]);
    std::string out = f + "(";
    for (std::size_t i = 0; i < args.size(); ++i) out += (i ? ", " : "") + write(*args[i]).text;
    return {out + ")", false};
  }

  const Translation& tr_;
};

}  // namespace

Tree parse(const std::string& text) { return Parser(text).run(); }

Value evaluate(const Tree& t, const Env& env) { return eval(*t, env); }

std::string to_muparser(const Tree& t, const Translation& tr) { return Writer(tr).write(*t).text; }

}  // namespace evo::py
