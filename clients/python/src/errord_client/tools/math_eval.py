"""Safe arithmetic for the ``math_eval`` builtin: numbers and operators, never Python's eval.

``evaluate`` parses the expression with ``ast.parse`` and accepts only what is on a short
list: int and float literals, unary ``+`` and ``-``, binary ``+ - * / // % **``,
parentheses, and calls of the functions in ``FUNCTIONS`` by name. Anything else (names,
attributes, subscripts, strings, comprehensions, lambdas, ...) is refused before anything is
computed, so no expression runs code.

No expression runs long or fills memory either: it has at most ``MAX_LENGTH`` characters,
an exponent at most ``MAX_EXPONENT`` in absolute value, and every value it computes stays
within ``MAX_MAGNITUDE`` (a power is checked with logarithms before it is computed).
Evaluation walks the tree with a stack of its own, so deep nesting needs no recursion.

Every refusal is a MathError whose message says what was wrong and where, e.g.
``math_eval: names are not allowed (found 'x' at column 3)``.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import MappingProxyType

MAX_LENGTH = 1_000
"""The longest expression read, in characters."""
MAX_EXPONENT = 100
"""The largest exponent of ``**``, in absolute value."""
MAX_MAGNITUDE = 1e100
"""The largest absolute value of any literal, intermediate or final result."""

Number = int | float

_TOO_LARGE = f"the value is larger than {MAX_MAGNITUDE:.0e}".replace("+", "")


class MathError(ValueError):
    """An expression ``evaluate`` refuses or cannot compute; the message says why and where."""


def _sqrt(x: Number) -> float:
    if x < 0:
        raise ValueError("the square root of a negative number is not a real number")
    return math.sqrt(x)


def _round(x: Number, digits: Number | None = None) -> Number:
    if digits is None:
        return round(x)
    if not isinstance(digits, int) or abs(digits) > MAX_EXPONENT:
        raise ValueError(f"round's digits must be a whole number within ±{MAX_EXPONENT}")
    return round(x, digits)


def _min(*values: Number) -> Number:
    return min(values)


def _max(*values: Number) -> Number:
    return max(values)


FUNCTIONS: Mapping[str, tuple[Callable[..., Number], int, int | None]] = MappingProxyType(
    {
        "abs": (abs, 1, 1),
        "max": (_max, 1, None),
        "min": (_min, 1, None),
        "round": (_round, 1, 2),
        "sqrt": (_sqrt, 1, 1),
    }
)
"""The functions an expression may call: name -> (function, fewest and most arguments)."""

_BINARY: Mapping[type[ast.operator], Callable[[Number, Number], Number]] = MappingProxyType(
    {
        ast.Add: operator.add,
        ast.Sub: operator.sub,
        ast.Mult: operator.mul,
        ast.Div: operator.truediv,
        ast.FloorDiv: operator.floordiv,
        ast.Mod: operator.mod,
    }
)
_UNARY: Mapping[type[ast.unaryop], Callable[[Number], Number]] = MappingProxyType(
    {ast.UAdd: operator.pos, ast.USub: operator.neg}
)
_SYMBOLS: Mapping[type[ast.AST], str] = MappingProxyType(
    {
        ast.Pow: "**",
        ast.LShift: "<<",
        ast.RShift: ">>",
        ast.BitOr: "|",
        ast.BitXor: "^",
        ast.BitAnd: "&",
        ast.MatMult: "@",
        ast.Invert: "~",
        ast.Not: "not",
    }
)
_REFUSED: Mapping[type[ast.AST], str] = MappingProxyType(
    {
        ast.Name: "names",
        ast.Attribute: "attributes",
        ast.Subscript: "subscripts",
        ast.Slice: "slices",
        ast.Lambda: "lambdas",
        ast.ListComp: "comprehensions",
        ast.SetComp: "comprehensions",
        ast.DictComp: "comprehensions",
        ast.GeneratorExp: "comprehensions",
        ast.List: "lists",
        ast.Tuple: "tuples",
        ast.Set: "sets",
        ast.Dict: "dicts",
        ast.Compare: "comparisons",
        ast.BoolOp: "'and' and 'or'",
        ast.IfExp: "conditional expressions",
        ast.NamedExpr: "assignments",
        ast.JoinedStr: "strings",
        ast.Starred: "starred arguments",
        ast.Await: "awaits",
    }
)


def evaluate(expression: object) -> Number:
    """The value of an arithmetic ``expression``, an int or a float; raises MathError."""
    if not isinstance(expression, str):
        kind = type(expression).__name__
        raise MathError(f"math_eval: the expression must be a string, not {kind}")
    if len(expression) > MAX_LENGTH:
        raise MathError(
            f"math_eval: the expression is {len(expression):,} characters long; "
            f"at most {MAX_LENGTH:,} are allowed"
        )
    source = _Source(expression)
    tree = source.parse()
    for node in _preorder(tree):
        _operands(node, source)  # refuses every node not on the list, before computing
    return _compute(tree, source)


class _Source:
    """The expression's text, to parse and to quote in messages."""

    def __init__(self, expression: str) -> None:
        self.text = expression.lstrip(" \t")  # ast.parse takes a leading indent for a block
        self._shift = len(expression) - len(self.text)

    def parse(self) -> ast.expr:
        try:
            return ast.parse(self.text, mode="eval").body
        except SyntaxError as error:
            where = self._error_position(error)
            raise MathError(
                f"math_eval: not an arithmetic expression ({error.msg}{where})"
            ) from None
        except (RecursionError, MemoryError):
            raise MathError("math_eval: the expression is nested too deeply") from None
        except ValueError as error:  # null characters, on Pythons before 3.12
            raise MathError(f"math_eval: not an arithmetic expression ({error})") from None

    def _error_position(self, error: SyntaxError) -> str:
        if not error.offset:
            return ""
        if error.lineno and error.lineno > 1:
            return f" at line {error.lineno}, column {error.offset}"
        return f" at column {error.offset + self._shift}"

    def found(self, node: ast.expr) -> str:
        """``found '<text of node>' at column C``, for a message."""
        text = ast.get_source_segment(self.text, node) or type(node).__name__
        if len(text) > 40:
            text = text[:37] + "..."
        return f"found {text!r} at {self.where(node)}"

    def where(self, node: ast.expr) -> str:
        lines = self.text.split("\n")
        line = lines[node.lineno - 1] if node.lineno <= len(lines) else ""
        # col_offset counts UTF-8 bytes; people count characters.
        column = len(line.encode()[: node.col_offset].decode(errors="replace")) + 1
        if node.lineno > 1:
            return f"line {node.lineno}, column {column}"
        return f"column {column + self._shift}"


def _preorder(tree: ast.expr) -> Iterator[ast.expr]:
    """Every node of the tree, leftmost first, without recursion."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(_children(node)))


def _children(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, ast.UnaryOp):
        return [node.operand]
    if isinstance(node, ast.BinOp):
        return [node.left, node.right]
    if isinstance(node, ast.Call):
        return list(node.args)
    return []


def _operands(node: ast.expr, source: _Source) -> Sequence[ast.expr]:
    """The operands of an allowed node; raises MathError for a node not allowed."""
    if isinstance(node, ast.Constant):
        _check_literal(node, source)
        return ()
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return (node.operand,)
    if isinstance(node, ast.BinOp) and (type(node.op) in _BINARY or isinstance(node.op, ast.Pow)):
        return (node.left, node.right)
    if isinstance(node, ast.Call):
        _check_call(node, source)
        return node.args
    if isinstance(node, ast.UnaryOp | ast.BinOp):
        symbol = _SYMBOLS.get(type(node.op), type(node.op).__name__)
        raise MathError(f"math_eval: the operator '{symbol}' is not allowed ({source.found(node)})")
    what = _REFUSED.get(type(node), f"{type(node).__name__} expressions")
    raise MathError(f"math_eval: {what} are not allowed ({source.found(node)})")


def _check_literal(node: ast.Constant, source: _Source) -> None:
    value = node.value
    if isinstance(value, bool):
        raise MathError(f"math_eval: booleans are not allowed ({source.found(node)})")
    if isinstance(value, complex):
        raise MathError(f"math_eval: complex numbers are not allowed ({source.found(node)})")
    if isinstance(value, str | bytes):
        raise MathError(f"math_eval: strings are not allowed ({source.found(node)})")
    if not isinstance(value, int | float):
        raise MathError(f"math_eval: {value!r} is not a number ({source.found(node)})")


def _check_call(node: ast.Call, source: _Source) -> None:
    known = ", ".join(FUNCTIONS)
    if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
        raise MathError(
            f"math_eval: only the functions {known} may be called ({source.found(node.func)})"
        )
    if node.keywords:
        raise MathError(f"math_eval: keyword arguments are not allowed ({source.found(node)})")
    _, fewest, most = FUNCTIONS[node.func.id]
    if len(node.args) < fewest or (most is not None and len(node.args) > most):
        count = f"{fewest}" if fewest == most else f"{fewest} to {most or 'any number of'}"
        raise MathError(
            f"math_eval: {node.func.id} takes {count} arguments, not {len(node.args)} "
            f"({source.found(node)})"
        )


def _compute(tree: ast.expr, source: _Source) -> Number:
    """Evaluate a checked tree bottom-up with a value stack (no recursion)."""
    values: list[Number] = []
    stack: list[tuple[ast.expr, bool]] = [(tree, False)]
    while stack:
        node, ready = stack.pop()
        if not ready:
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(_children(node)))
            continue
        count = len(_children(node))
        operands = values[len(values) - count :]
        del values[len(values) - count :]
        values.append(_bounded(_apply(node, operands, source), node, source))
    return values[0]


def _apply(node: ast.expr, operands: list[Number], source: _Source) -> Number:
    try:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return node.value  # checked: never a bool
        if isinstance(node, ast.UnaryOp):
            return _UNARY[type(node.op)](operands[0])
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            return _power(operands[0], operands[1], node, source)
        if isinstance(node, ast.BinOp):
            return _BINARY[type(node.op)](operands[0], operands[1])
        assert isinstance(node, ast.Call)  # checked: nothing else is left
        assert isinstance(node.func, ast.Name)
        return FUNCTIONS[node.func.id][0](*operands)
    except ZeroDivisionError:
        raise MathError(f"math_eval: division by zero ({source.found(node)})") from None
    except (ValueError, OverflowError) as error:
        if isinstance(error, MathError):
            raise
        raise MathError(f"math_eval: {error} ({source.found(node)})") from None


def _power(base: Number, exponent: Number, node: ast.expr, source: _Source) -> Number:
    if abs(exponent) > MAX_EXPONENT:
        raise MathError(
            f"math_eval: exponents beyond {MAX_EXPONENT} are not allowed ({source.found(node)})"
        )
    if base < 0 and not float(exponent).is_integer():
        raise MathError(
            "math_eval: a negative number to a fractional power is not a real number "
            f"({source.found(node)})"
        )
    if base != 0 and exponent * math.log10(abs(base)) > math.log10(MAX_MAGNITUDE):
        raise MathError(f"math_eval: {_TOO_LARGE} ({source.found(node)})")
    result: Number = base**exponent
    return result


def _bounded(value: Number, node: ast.expr, source: _Source) -> Number:
    # abs() first: comparing an int of any size with a float is exact, converting it is not.
    if abs(value) > MAX_MAGNITUDE:
        raise MathError(f"math_eval: {_TOO_LARGE} ({source.found(node)})")
    if isinstance(value, float) and math.isnan(value):
        raise MathError(f"math_eval: the result is not a number ({source.found(node)})")
    return value
