// The Python expressions T1 files are written in (engine/python_expr.h): each construct evaluated
// as Python does, and written for muParser so that every configuration gets the same number.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "engine/error.h"
#include "engine/expr.h"
#include "engine/python_expr.h"

namespace evo {
namespace {

py::Value run(const std::string& text, const py::Env& env = {}) { return py::evaluate(py::parse(text), env); }

double number(const std::string& text, const py::Env& env = {}) {
  const py::Value v = run(text, env);
  EXPECT_FALSE(v.is_list) << text;
  return v.number;
}

std::vector<double> numbers(const std::string& text, const py::Env& env = {}) {
  const py::Value v = run(text, env);
  EXPECT_TRUE(v.is_list) << text;
  std::vector<double> out;
  for (const auto& x : v.items) out.push_back(x.number);
  return out;
}

std::string error_of(const std::string& text, const py::Translation* tr = nullptr) {
  try {
    auto t = py::parse(text);
    if (tr) py::to_muparser(t, *tr);
    else py::evaluate(t, {});
  } catch (const py::PyError& e) {
    return e.what();
  }
  return "";
}

TEST(PythonExpr, ValuesListsRangesAndComprehensions) {
  EXPECT_EQ(numbers("[16, 32, 48]"), (std::vector<double>{16, 32, 48}));
  EXPECT_EQ(numbers("[2**i for i in range(0, 6)]"), (std::vector<double>{1, 2, 4, 8, 16, 32}));
  EXPECT_EQ(numbers("[1, 2, 4, 8, 16] + list(range(32, 128+1, 32))"), (std::vector<double>{1, 2, 4, 8, 16, 32, 64, 96, 128}));
  EXPECT_EQ(numbers("[16*i for i in range(1,5)]"), (std::vector<double>{16, 32, 48, 64}));
  EXPECT_EQ(numbers("[i for i in range(3,12,2) if i % 3 != 0]"), (std::vector<double>{5, 7, 11}));
  EXPECT_EQ(numbers("list(range(5, 0, -2))"), (std::vector<double>{5, 3, 1}));
  EXPECT_EQ(numbers("[0, 1] * 2"), (std::vector<double>{0, 1, 0, 1}));
  EXPECT_EQ(numbers("[]"), std::vector<double>{});
  // A list of ints stays ints; true division makes floats, as in Python.
  for (const auto& x : run("[i * 2 for i in range(3)]").items) EXPECT_TRUE(x.is_int);
  for (const auto& x : run("[i / 2 for i in range(3)]").items) EXPECT_FALSE(x.is_int);
}

TEST(PythonExpr, FloorDivisionAndModuloFollowPythonWithNegatives) {
  EXPECT_EQ(number("7 // 2"), 3);
  EXPECT_EQ(number("-7 // 2"), -4);  // rounded down, not toward zero as C does
  EXPECT_EQ(number("7 // -2"), -4);
  EXPECT_EQ(number("-7 % 3"), 2);    // the divisor's sign
  EXPECT_EQ(number("7 % -3"), -2);
  EXPECT_EQ(number("-8 % 4"), 0);
  EXPECT_EQ(number("7.5 // 2"), 3);
  EXPECT_FALSE(run("7.5 // 2").is_int);
  EXPECT_EQ(number("7 / 2"), 3.5);
  EXPECT_FALSE(run("4 / 2").is_int);
  EXPECT_NE(error_of("1 // 0").find("division by zero"), std::string::npos);
  EXPECT_NE(error_of("1 % 0").find("modulo by zero"), std::string::npos);
}

TEST(PythonExpr, PowerBindsTighterThanUnaryMinusOnItsLeft) {
  EXPECT_EQ(number("-2**2"), -4);
  EXPECT_EQ(number("2**-1"), 0.5);
  EXPECT_FALSE(run("2**-1").is_int);
  EXPECT_EQ(number("2**3**2"), 512);  // right-associative
  EXPECT_EQ(number("(-2)**2"), 4);
}

TEST(PythonExpr, ChainedComparisonsBooleansAndTernaries) {
  const py::Env env{{"a", py::Value::integer(3)}, {"b", py::Value::integer(5)}};
  EXPECT_EQ(number("1 < a <= 3", env), 1);
  EXPECT_EQ(number("1 < a < 3", env), 0);
  EXPECT_EQ(number("a < b > 4", env), 1);  // (a < b) and (b > 4), not (a < b) > 4
  EXPECT_EQ(number("a < b > 5", env), 0);
  EXPECT_EQ(number("0 or 5"), 5);  // Python's value, not a truth value
  EXPECT_EQ(number("3 and 0"), 0);
  EXPECT_EQ(number("3 and 7"), 7);
  EXPECT_EQ(number("not 0"), 1);
  EXPECT_EQ(number("not a", env), 0);
  EXPECT_EQ(number("10 if a > 2 else 20", env), 10);
  EXPECT_EQ(number("10 if a > 4 else 20 if b > 4 else 30", env), 20);
  EXPECT_EQ(number("a in [1, 3, 5]", env), 1);
  EXPECT_EQ(number("a not in [1, 3, 5]", env), 0);
  EXPECT_EQ(number("True + True"), 2);
}

TEST(PythonExpr, MaxOfAParameterIsTheLargestOfItsValues) {
  const py::Env env{{"filter_width", py::Value::list({py::Value::integer(3), py::Value::integer(15), py::Value::integer(7)})},
                    {"ProblemSize", py::Value::list({py::Value::integer(4096), py::Value::integer(2048)})}};
  EXPECT_EQ(number("(ProblemSize[0]+max(filter_width)-1) * (ProblemSize[1]+max(filter_width)-1)", env),
            (4096 + 14) * (2048 + 14));
  EXPECT_EQ(number("min(filter_width) * max(2, 9, 4)", env), 27);
  EXPECT_EQ(number("ProblemSize[-1]", env), 2048);
  EXPECT_EQ(number("len(filter_width) + sum([1, 2]) + abs(-4) + int(-2.7) + float(3)", env), 3 + 3 + 4 - 2 + 3);
}

TEST(PythonExpr, UnsupportedConstructsAreNamed) {
  EXPECT_NE(error_of("a @ 1").find("operator '@' is not supported"), std::string::npos);
  EXPECT_NE(error_of("1.5 & 1").find("operator '&' takes integers"), std::string::npos);
  EXPECT_NE(error_of("~1.5").find("operator '~' takes an integer"), std::string::npos);
  EXPECT_NE(error_of("'a'").find("string"), std::string::npos);
  EXPECT_NE(error_of("round(2.5)").find("function 'round' is not supported"), std::string::npos);
  EXPECT_NE(error_of("a is 1").find("'is' is not supported"), std::string::npos);
  EXPECT_NE(error_of("x[1:2]").find("slices are not supported"), std::string::npos);
  EXPECT_NE(error_of("(1, 2) + 1").find("a list where a number is needed"), std::string::npos);
  EXPECT_NE(error_of("1 +").find("ends too early"), std::string::npos);
  EXPECT_NE(error_of("1 if 2").find("'if' without 'else'"), std::string::npos);
  EXPECT_NE(error_of("(1 + 2").find("expected ')'"), std::string::npos);
  EXPECT_NE(error_of("1 2").find("unexpected '2' at column 3"), std::string::npos);
}

// The translation is checked against Python's own answer, configuration by configuration: for
// every condition and every assignment (negative values included, where C's % and / differ from
// Python's), muParser must give the number evaluate() gives.
TEST(PythonExpr, MuParserTranslationGivesPythonsAnswerForEveryAssignment) {
  py::Translation tr;
  tr.tunables = {{"a", {-7, -3, -1, 0, 1, 2, 5, 32}}, {"b", {-4, -3, 1, 2, 3, 16}}, {"c", {0, 1, 2}}};
  tr.problem_dims = 2;
  const std::vector<std::string> conditions{
      "a // b",
      "a % b",
      "-a % b + a // -b",
      "a ** 2 - b ** 2",
      "-2 ** c",
      "a < b <= c",
      "a <= b < c != 1",
      "a == 0 or b % 32 != 0",
      "not (a == 1 and b == 2 and c == 1)",
      "(a or b) + (c and a)",
      "not a",
      "a if b > 0 else c",
      "a in [1, 2, 5] and b not in [3, 16]",
      "max(a, b, c) - min(a, b)",
      "max(a) + min(b)",
      "abs(a) * int(b / 3) + float(c)",
      "ProblemSize[0] // (a * a + 1) + ProblemSize[1] % (b * b + 1)",
      "a / (b * b) >= 0.25",
      "a & 3",
      "(a | b) ^ c",
      "a << c",
      "b >> c",
      "~a & 7",
      "b & (b - 1) == 0",
      "a in range(-3, 3) or b in (1, 16)",
      "c in [2 ** i for i in range(2)] and a not in (-7,)",
      "len([1, 2, 3]) + a",
      "use_padding_like == 0" /* an unknown name must fail, checked below */,
  };
  const double ps0 = 4096, ps1 = 4110;
  for (const std::string& text : conditions) {
    const py::Tree tree = py::parse(text);
    if (text.find("use_padding_like") != std::string::npos) {
      EXPECT_THROW(py::to_muparser(tree, tr), py::PyError);
      continue;
    }
    const std::string written = py::to_muparser(tree, tr);
    for (double a : tr.tunables["a"])
      for (double b : tr.tunables["b"])
        for (double c : tr.tunables["c"]) {
          // max(NAME) in a condition means the parameter's values, as in a Size.
          py::Env env{{"a", py::Value::integer(a)}, {"b", py::Value::integer(b)}, {"c", py::Value::integer(c)},
                      {"ProblemSize", py::Value::list({py::Value::integer(ps0), py::Value::integer(ps1)})}};
          py::Value want;
          if (text == "max(a) + min(b)") want = py::Value::integer(32 + -4);
          else want = py::evaluate(tree, env);
          const Vars vars{{"a", a}, {"b", b}, {"c", c}, {"ProblemSize_0", ps0}, {"ProblemSize_1", ps1}};
          EXPECT_DOUBLE_EQ(eval_expr(written, vars), want.number)
              << text << " as " << written << " at a=" << a << " b=" << b << " c=" << c;
        }
  }
}

TEST(PythonExpr, TranslationRefusesWhatIsNotANumberOfTheConfiguration) {
  py::Translation tr;
  tr.tunables = {{"a", {1, 2}}};
  tr.problem_dims = 1;
  EXPECT_NE(error_of("ProblemSize[1] > a", &tr).find("the problem size has 1 dimension(s)"), std::string::npos);
  EXPECT_NE(error_of("ProblemSize > a", &tr).find("needs an index"), std::string::npos);
  EXPECT_NE(error_of("[1, 2] == a", &tr).find("a list is not a number"), std::string::npos);
  EXPECT_NE(error_of("a in range(a)", &tr).find("needs a list: written out ([1, 2, 4]) or made of constants"), std::string::npos);
  EXPECT_NE(error_of("len([a])", &tr).find("function 'len' is not supported here"), std::string::npos);
  EXPECT_NE(error_of("bogus > 1", &tr).find("unknown name 'bogus' (not a tuning parameter)"), std::string::npos);
}

}  // namespace
}  // namespace evo
