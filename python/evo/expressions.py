"""Kernel Tuner's Python expressions (restrictions, grid divisors, problem sizes, shared memory
sizes) written as evo's expressions (muParser, docs/profiles.md), through Python's own parser.

Only what muParser can say with the same meaning is translated; anything else is a ValueError
naming where the expression came from, so that no restriction is silently changed:

    a // b          floor(a / b)
    a % b           a % b where both sides are never negative, else a - b * floor(a / b)
                    (Python's % takes the sign of b; evo's, C's fmod, that of a)
    a ** b          a ^ b
    and, or, not    &&, ||, x == 0 (truth values only: Python's `a or b` is a or b itself)
    a < b < c       a < b && b < c
    x in (1, 2)     x == 1 || x == 2
    a if c else b   c ? a : b
    max, min, abs   max, min, abs
"""
import ast
import math

# muParser's precedence levels (muParserDef.h), lowest first; a ternary is below all of them.
_TERNARY, _OR, _AND, _CMP, _ADD, _MUL, _UNARY, _POW, _ATOM = 0, 1, 2, 4, 5, 6, 6.5, 7, 9

_CMP_OPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
_FUNCTIONS = {"max": "max", "min": "min", "abs": "abs"}


class _Untranslatable(Exception):
    """Raised inside the translation; turned into one ValueError naming the expression."""


def _paren(text_level, at_least):
    text, level = text_level
    return text if level >= at_least else "(" + text + ")"


def _after(text_level, at_least):
    """An operand after an operator: a leading minus there is parenthesised too (`a - (-b)`)."""
    return "(" + text_level[0] + ")" if text_level[1] == _UNARY else _paren(text_level, at_least)


class _Translator:
    def __init__(self, names, values):
        self.names = names          # the names an expression may use
        self.values = values        # name -> the values it takes (to know what can be negative or 0)
        self.divisors = []          # divisors that may be 0, each once: Python raises there

    def never_zero(self, node):
        if isinstance(node, ast.Constant):
            return node.value != 0
        if isinstance(node, ast.Name):
            return 0 not in self.values.get(node.id, [0])
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Pow)):
            return self.never_zero(node.left) and (isinstance(node.op, ast.Pow) or self.never_zero(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            return self.never_zero(node.operand)
        return False

    def divisor(self, node):
        text = self.value(node, False)
        if not self.never_zero(node) and text not in self.divisors:
            self.divisors.append(text)
        return text

    # -- what a node is ---------------------------------------------------------------------------

    def never_negative(self, node):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return node.value >= 0
        if isinstance(node, ast.Constant) and isinstance(node.value, bool):
            return True
        if isinstance(node, ast.Name):
            return all(v >= 0 for v in self.values.get(node.id, [-1]))
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)):
            return self.never_negative(node.left) and self.never_negative(node.right)
        if isinstance(node, (ast.Compare, ast.BoolOp)) or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
            return self.is_truth(node)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id == "abs":
                return True
            if node.func.id in ("max", "min"):
                agree = [self.never_negative(a) for a in node.args]
                return any(agree) if node.func.id == "max" else all(agree)
        return False

    def is_truth(self, node):
        """A node whose value is True or False (so `and`/`or` over it mean what && and || mean)."""
        if isinstance(node, ast.Compare):
            return True
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return True
        if isinstance(node, ast.Constant) and isinstance(node.value, bool):
            return True
        if isinstance(node, ast.BoolOp):
            return all(self.is_truth(v) for v in node.values)
        return False

    def is_integral(self, node):
        """Whether Python computes an int here (Kernel Tuner's int(eval(...)) then changes nothing)."""
        if isinstance(node, ast.Constant):
            return isinstance(node.value, int)
        if isinstance(node, ast.Name):
            return True
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)):
            return self.is_integral(node.left) and self.is_integral(node.right)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            return self.is_integral(node.left) and self.is_integral(node.right) and self.never_negative(node.right)
        if isinstance(node, ast.UnaryOp):
            return self.is_integral(node.operand)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS:
            return all(self.is_integral(a) for a in node.args)
        return False

    # -- translation: (text, precedence level) -----------------------------------------------------

    def value(self, node, truth):
        """`truth`: only the node's truth is used (a restriction, an operand of and/or/not, a test)."""
        if isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, bool):
                return ("1" if v else "0"), _ATOM
            if isinstance(v, int):
                return str(v), _ATOM
            if isinstance(v, float) and math.isfinite(v):
                return repr(v), _ATOM
            raise _Untranslatable(f"the constant {v!r} is not a finite number")
        if isinstance(node, ast.Name):
            if node.id not in self.names:
                raise _Untranslatable(f"{node.id} is not a tunable parameter")
            return node.id, _ATOM
        if isinstance(node, ast.BoolOp):
            if not truth and not all(self.is_truth(v) for v in node.values):
                raise _Untranslatable("`and`/`or` whose value (not only its truth) is used")
            op, level = ("&&", _AND) if isinstance(node.op, ast.And) else ("||", _OR)
            parts = [_paren(self.value(v, True), level + 0.5 if level == _OR else level) for v in node.values]
            return f" {op} ".join(parts), level
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.Not):
                return _paren(self.value(node.operand, True), _CMP + 0.5) + " == 0", _CMP
            if isinstance(node.op, ast.USub):
                return "-" + _paren(self.value(node.operand, False), _POW), _UNARY
            if isinstance(node.op, ast.UAdd):
                return self.value(node.operand, False)
            raise _Untranslatable("the bitwise operator ~")
        if isinstance(node, ast.BinOp):
            return self.binop(node)
        if isinstance(node, ast.Compare):
            return self.compare(node)
        if isinstance(node, ast.IfExp):
            test = _paren(self.value(node.test, True), _OR)
            body = _paren(self.value(node.body, truth), _OR)
            orelse = _paren(self.value(node.orelse, truth), _OR)
            return f"{test} ? {body} : {orelse}", _TERNARY
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCTIONS:
                raise _Untranslatable(f"the call {ast.unparse(node.func)}() (evo has max, min and abs)")
            if node.keywords or not node.args or (node.func.id == "abs" and len(node.args) != 1):
                raise _Untranslatable(f"{node.func.id}() with these arguments")
            if len(node.args) == 1 and node.func.id != "abs":
                raise _Untranslatable(f"{node.func.id}() of one argument (an iterable in Python)")
            args = ", ".join(self.value(a, False)[0] for a in node.args)
            return f"{_FUNCTIONS[node.func.id]}({args})", _ATOM
        raise _Untranslatable(f"{type(node).__name__} `{ast.unparse(node)}`")

    def binop(self, node):
        op = node.op
        if isinstance(op, (ast.Add, ast.Sub)):
            sign = "+" if isinstance(op, ast.Add) else "-"
            return f"{_paren(self.value(node.left, False), _ADD)} {sign} {_after(self.value(node.right, False), _MUL)}", _ADD
        if isinstance(op, (ast.Mult, ast.Div)):
            sign = "*" if isinstance(op, ast.Mult) else "/"
            right = self.divisor(node.right) if sign == "/" else self.value(node.right, False)
            return f"{_paren(self.value(node.left, False), _MUL)} {sign} {_after(right, _POW)}", _MUL
        if isinstance(op, ast.FloorDiv):
            return f"floor({self.value(node.left, False)[0]} / {_after(self.divisor(node.right), _POW)})", _ATOM
        if isinstance(op, ast.Mod):
            left, right = self.value(node.left, False), self.divisor(node.right)
            # evo's % (fmod) stops the whole expression on a zero divisor; floor() of an infinity does not.
            if self.never_negative(node.left) and self.never_negative(node.right) and self.never_zero(node.right):
                return f"{_paren(left, _MUL)} % {_after(right, _POW)}", _MUL
            a, b = _paren(left, _ATOM), _paren(right, _ATOM)
            return f"{a} - {b} * floor({a} / {b})", _ADD
        if isinstance(op, ast.Pow):
            return f"{_paren(self.value(node.left, False), _ATOM)}^{_paren(self.value(node.right, False), _ATOM)}", _POW
        names = {ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>", ast.MatMult: "@"}
        raise _Untranslatable(f"the operator {names.get(type(op), type(op).__name__)} (evo's expressions have no bitwise operators)")

    def compare(self, node):
        parts = []
        left = node.left
        for op, right in zip(node.ops, node.comparators):
            if isinstance(op, (ast.In, ast.NotIn)):
                if not isinstance(right, (ast.Tuple, ast.List, ast.Set)) or not right.elts:
                    raise _Untranslatable("`in` over anything but a literal list of values")
                eq, join, level = ("==", " || ", _OR) if isinstance(op, ast.In) else ("!=", " && ", _AND)
                x = _paren(self.value(left, False), _ADD)
                terms = [f"{x} {eq} {_after(self.value(e, False), _ADD)}" for e in right.elts]
                parts.append((join.join(terms), level))
            elif type(op) in _CMP_OPS:
                parts.append((f"{_paren(self.value(left, False), _ADD)} {_CMP_OPS[type(op)]} "
                              f"{_after(self.value(right, False), _ADD)}", _CMP))
            else:
                raise _Untranslatable(f"the comparison {type(op).__name__} (`is`)")
            left = right
        if len(parts) == 1:
            return parts[0]
        return " && ".join(_paren(p, _AND + 0.5) for p in parts), _AND


def _parse(text, where):
    if not isinstance(text, str):
        raise ValueError(f"{where}: {text!r} is not a string (evo translates Kernel Tuner's restriction strings only)")
    try:
        return ast.parse(text.strip(), mode="eval").body
    except SyntaxError as e:
        raise ValueError(f"{where}: '{text}' does not parse as a Python expression ({e.msg})") from None


def to_evo(text, names, values, where, truth=True, integral=False):
    """`text` (Python) as an evo expression. `names`: what it may name; `values`: each name's values
    (for the sign of %); `truth`: only its truth matters; `integral`: Python would take int() of it
    (Kernel Tuner's grid divisors, problem sizes and shared memory sizes), so a fraction is floored."""
    node = _parse(text, where)
    t = _Translator(set(names), values)
    try:
        out = t.value(node, truth)
    except _Untranslatable as e:
        raise ValueError(f"{where}: '{text}' cannot be written as an evo expression: {e}") from None
    if t.divisors:
        if not truth:
            raise ValueError(f"{where}: '{text}' divides by {t.divisors[0][0]}, which can be 0")
        # Python raises on a zero divisor (the configuration is not valid); muParser goes on with an
        # infinity or NaN and evaluates every operand of &&, so the guard decides.
        guards = " && ".join(f"{_after(d, _ADD)} != 0" for d in t.divisors)
        out = (guards + " && " + _paren(out, _AND + 0.5), _AND)
    text_out = out[0]
    if integral and not t.is_integral(node):
        text_out = f"floor({text_out})"
    return text_out


def python_test(text, where):
    """A function of a configuration (name -> value) giving the expression's Python truth, as
    Kernel Tuner evaluates it; only the names and operations to_evo accepts reach it."""
    code = compile(ast.Expression(_parse(text, where)), where, "eval")
    builtins = {"max": max, "min": min, "abs": abs}

    def holds(config):
        try:
            return bool(eval(code, {"__builtins__": builtins}, dict(config)))
        except ZeroDivisionError:  # no configuration that divides by zero is valid
            return False
    return holds
