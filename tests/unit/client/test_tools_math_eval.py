"""math_eval: arithmetic computed from a checked syntax tree, never by Python's eval."""

from __future__ import annotations

import builtins
import operator
from collections.abc import Callable
from typing import Any

import pytest
from errord_client.tools import MathError
from errord_client.tools.math_eval import MAX_MAGNITUDE, evaluate
from hypothesis import given
from hypothesis import strategies as st

REFUSED = object()
"""The expected value of an expression math_eval must refuse."""

Case = tuple[str, Any]
"""An expression's text and its expected value (or REFUSED)."""

OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
}


def literal(n: int) -> Case:
    return (str(n) if n >= 0 else f"({n})", n)


def power(base: int, exponent: int) -> Case:
    return (f"({literal(base)[0]} ** {exponent})", base**exponent)


def combine(left: Case, symbol: str, right: Case) -> Case:
    """The expression ``(left symbol right)`` and its value, computed by Python's own
    operator on the operands' values; REFUSED where math_eval must refuse."""
    text = f"({left[0]} {symbol} {right[0]})"
    if left[1] is REFUSED or right[1] is REFUSED:
        return text, REFUSED
    try:
        value = OPERATORS[symbol](left[1], right[1])
    except ZeroDivisionError:
        return text, REFUSED
    return text, REFUSED if abs(value) > MAX_MAGNITUDE else value


LEAVES = st.integers(-20, 20).map(literal) | st.builds(
    power, st.integers(-20, 20), st.integers(0, 5)
)
ARITHMETIC = st.recursive(
    LEAVES,
    lambda inner: st.builds(combine, inner, st.sampled_from(sorted(OPERATORS)), inner),
    max_leaves=12,
)


@given(ARITHMETIC)
def test_random_arithmetic_evaluates_as_python_computes_it(case: Case) -> None:
    text, expected = case
    if expected is REFUSED:
        with pytest.raises(MathError):
            evaluate(text)
    else:
        result = evaluate(text)
        assert result == expected
        assert type(result) is type(expected)


FRAGMENTS = st.sampled_from(
    [
        "probe()",
        "__import__('builtins').probe()",
        "().__class__.__base__",
        "[probe() for _ in (1,)]",
        "(lambda: probe())()",
        "abs(",
        "min(",
        "round(",
        "sqrt(",
        ",",
        "1",
        "9",
        "0",
        "1e5",
        ".5",
        "+",
        "-",
        "*",
        "**",
        "/",
        "//",
        "%",
        "(",
        ")",
        " ",
        "x",
        "'a'",
        "[",
        "]",
        ".",
        "\n",
    ]
)


@given(st.text(max_size=60) | st.lists(FRAGMENTS, max_size=25).map("".join))
def test_any_text_yields_a_number_or_math_error_and_never_runs_code(expression: str) -> None:
    """``probe`` is callable as a builtin while the test runs; no expression may reach it."""
    called: list[bool] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(builtins, "probe", lambda: called.append(True), raising=False)
        try:
            result = evaluate(expression)
        except MathError:
            result = None
    assert result is None or (type(result) in (int, float) and abs(result) <= MAX_MAGNITUDE)
    assert called == []


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        (
            "__import__('os')",
            "math_eval: only the functions abs, max, min, round, sqrt may be called "
            "(found '__import__' at column 1)",
        ),
        (
            "().__class__",
            "math_eval: attributes are not allowed (found '().__class__' at column 1)",
        ),
        ("(1).real", "math_eval: attributes are not allowed (found '(1).real' at column 1)"),
        (
            "[x for x in ()]",
            "math_eval: comprehensions are not allowed (found '[x for x in ()]' at column 1)",
        ),
        ("lambda: 1", "math_eval: lambdas are not allowed (found 'lambda: 1' at column 1)"),
        (
            "2**10000",
            "math_eval: exponents beyond 100 are not allowed (found '2**10000' at column 1)",
        ),
        (
            "9**9**9",
            "math_eval: exponents beyond 100 are not allowed (found '9**9**9' at column 1)",
        ),
        ("'a'*10", "math_eval: strings are not allowed (found \"'a'\" at column 1)"),
        ("1 + x", "math_eval: names are not allowed (found 'x' at column 5)"),
        ("  1 + x", "math_eval: names are not allowed (found 'x' at column 7)"),
        ("(1 +\n x)", "math_eval: names are not allowed (found 'x' at line 2, column 2)"),
        ("x + 1/0", "math_eval: names are not allowed (found 'x' at column 1)"),
        ("1/0", "math_eval: division by zero (found '1/0' at column 1)"),
        ("2 * (5 // 0)", "math_eval: division by zero (found '5 // 0' at column 6)"),
        ("7 % 0.0", "math_eval: division by zero (found '7 % 0.0' at column 1)"),
        ("0 ** -1", "math_eval: division by zero (found '0 ** -1' at column 1)"),
        (
            "10**60 * 10**60",
            "math_eval: the value is larger than 1e100 (found '10**60 * 10**60' at column 1)",
        ),
        ("2 ** 400.5", "math_eval: exponents beyond 100 are not allowed"),
        ("1000 ** 50", "math_eval: the value is larger than 1e100 (found '1000 ** 50'"),
        ("0.001 ** -50", "math_eval: the value is larger than 1e100"),
        ("1e101", "math_eval: the value is larger than 1e100 (found '1e101' at column 1)"),
        ("1e999", "math_eval: the value is larger than 1e100"),
        ("9" * 200, "math_eval: the value is larger than 1e100"),
        ("(-8) ** 0.5", "math_eval: a negative number to a fractional power"),
        ("sqrt(-4)", "math_eval: the square root of a negative number is not a real number"),
        ("round(1.5, 1000)", "math_eval: round's digits must be a whole number within ±100"),
        ("round(1.5, 0.5)", "math_eval: round's digits must be a whole number"),
        ("True + 1", "math_eval: booleans are not allowed (found 'True' at column 1)"),
        ("1j", "math_eval: complex numbers are not allowed (found '1j' at column 1)"),
        ("None", "math_eval: None is not a number"),
        ("~1", "math_eval: the operator '~' is not allowed (found '~1' at column 1)"),
        ("not 1", "math_eval: the operator 'not' is not allowed"),
        ("1 << 1000", "math_eval: the operator '<<' is not allowed"),
        ("1 < 2", "math_eval: comparisons are not allowed"),
        ("1 and 2", "math_eval: 'and' and 'or' are not allowed"),
        ("1 if 1 else 0", "math_eval: conditional expressions are not allowed"),
        ("(1, 2)", "math_eval: tuples are not allowed"),
        ("{1: 2}", "math_eval: dicts are not allowed"),
        ("abs[0]", "math_eval: subscripts are not allowed"),
        ("(y := 1)", "math_eval: assignments are not allowed"),
        ("f'{1}'", "math_eval: strings are not allowed"),
        ("abs(x=1)", "math_eval: keyword arguments are not allowed (found 'abs(x=1)'"),
        ("abs(*[1])", "math_eval: starred arguments are not allowed"),
        ("abs(1, 2)", "math_eval: abs takes 1 arguments, not 2"),
        ("round()", "math_eval: round takes 1 to 2 arguments, not 0"),
        ("min()", "math_eval: min takes 1 to any number of arguments, not 0"),
        ("abs.__call__(1)", "math_eval: only the functions abs, max, min, round, sqrt"),
        ("", "math_eval: not an arithmetic expression"),
        ("1 +", "math_eval: not an arithmetic expression (invalid syntax"),
        ("1; 2", "math_eval: not an arithmetic expression"),
        ("1\x00", "math_eval: not an arithmetic expression"),
        ("(" * 300 + "1" + ")" * 300, "math_eval: not an arithmetic expression (too many nested"),
        ("1" * 1001, "math_eval: the expression is 1,001 characters long; at most 1,000"),
    ],
)
def test_each_refusal_says_what_and_where(expression: str, message: str) -> None:
    with pytest.raises(MathError) as raised:
        evaluate(expression)
    assert str(raised.value).startswith(message)


@pytest.mark.parametrize("expression", [42, None, b"1+1", ["1"]])
def test_an_expression_that_is_not_a_string_is_refused(expression: object) -> None:
    with pytest.raises(MathError, match="the expression must be a string"):
        evaluate(expression)


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("2+2", 4),
        ("7 / 2", 3.5),
        ("-7 // 2", -4),
        ("-7 % 3", 2),
        ("2 ** -1", 0.5),
        ("2 ** 0.5", 2**0.5),
        ("(-2) ** 3", -8),
        ("-(3)", -3),
        ("+3", 3),
        ("1_000 + 1", 1001),
        ("abs(-3)", 3),
        ("round(2.5)", 2),
        ("round(2.567, 2)", 2.57),
        ("round(1234, -2)", 1200),
        ("min(3, 1, 2)", 1),
        ("max(1.5, 2)", 2),
        ("max(4)", 4),
        ("sqrt(16)", 4.0),
        ("10 ** 100", 10**100),
        ("1e100", 1e100),
        ("0 ** 0", 1),
        ("  1 + 1", 2),
        ("(1 +\n 2)", 3),
        ("-" * 999 + "1", -1),
        ("+".join(["1"] * 500), 500),
    ],
)
def test_arithmetic_within_bounds_is_computed(expression: str, value: float) -> None:
    result = evaluate(expression)
    assert result == value
    assert type(result) is type(value)
