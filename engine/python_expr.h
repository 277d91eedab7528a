// The part of Python's expression grammar that T1 tuning files are written in (engine/t1.h):
// a tuning parameter's Values ("[2**i for i in range(6)]"), an argument's Size
// ("(ProblemSize[0]+max(filter_width)-1) * ..."), launch sizes and Conditions
// ("use_padding==0 or block_size_x % 32 != 0"). A text is parsed once into a tree, then either
// evaluated with Python's meaning (lists, ranges, comprehensions) or written as an evo constraint
// expression for muParser (engine/expr.h) that gives the same number for every configuration.
//
// Supported: int, float, True/False literals; names; ProblemSize[i]; + - * / // % ** and unary
// - +; comparisons, chained (a < b <= c), `in` / `not in` a list; and, or, not; x if c else y;
// list displays, list comprehensions (for ... in ... [if ...]), list + list; range, list, len,
// sum, max, min, abs, int, float. Anything else (bitwise operators, strings, other functions) is
// a PyError naming it: a T1 construct evo cannot honour is refused, never approximated.
#pragma once
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace evo::py {

// A text that does not parse, or a construct evo does not support; what() says which and where.
struct PyError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Node;  // the parsed tree (engine/python_expr.cpp)
using Tree = std::shared_ptr<const Node>;

Tree parse(const std::string& text);

// A Python value: a number (an int or a float: `/` gives floats, `//` on ints gives ints, as in
// Python) or a list of numbers. Booleans are the ints 0 and 1, as Python's bool is an int.
struct Value {
  bool is_list = false;
  bool is_int = true;  // a number: int (or bool) rather than float
  double number = 0;
  std::vector<Value> items;  // a list
  static Value integer(double x) { return {false, true, x, {}}; }
  static Value real(double x) { return {false, false, x, {}}; }
  static Value list(std::vector<Value> v) { return {true, true, 0, std::move(v)}; }
};
using Env = std::map<std::string, Value>;

// Python's own answer, names bound by `env` (a tuning parameter bound to its list of values is how
// Kernel Tuner evaluates an argument's Size: max(filter_width) is the largest value).
Value evaluate(const Tree& t, const Env& env);

// What the names of a condition or a launch size stand for when written for muParser: each
// tunable is one variable (its value in the configuration), with its values for max(NAME) and
// min(NAME), which are constants; ProblemSize[i] is the variable `ProblemSize_i` (i < problem_dims).
struct Translation {
  std::map<std::string, std::vector<double>> tunables;
  int problem_dims = 0;
};

// The same number as Python gives, as a fully parenthesised muParser expression: `//` is
// floor(a / b), `%` is pymod(a, b) (the result has the divisor's sign), `**` is ^, a chained
// comparison is a conjunction, `not x` is (x) == 0, and/or keep Python's value where it is not
// 0 or 1 (`a or b` is a != 0 ? a : b).
std::string to_muparser(const Tree& t, const Translation& tr);

}  // namespace evo::py
