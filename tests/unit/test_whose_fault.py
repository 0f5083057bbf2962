"""Whose fault a failure is (errord.decide.classify): the tool's own exception families, the
API's error body, and the call's own values, read into a code, a class, who can act and
the parameter it is about; the executor's copy of the rules gives the same."""

from __future__ import annotations

from typing import Any

import pytest
from errord_client import classify_model
from errord_client._classify import classify as client_classify
from errord_client._classify import with_fault as client_with_fault
from hypothesis import given
from hypothesis import strategies as st

from errord.decide import model
from errord.decide.classify import classify, default_fault, with_fault
from errord.decide.manifest import ClassificationRule
from errord.decide.model import ErrorClass, ErrorCode, Fault, ToolFailure

P, T = ErrorClass.PERMANENT, ErrorClass.TRANSIENT


def decided(failure: ToolFailure, arguments: dict[str, Any], schema: tuple[str, ...] = ()) -> Any:
    found = with_fault(classify(failure), failure, arguments, schema)
    return (found.code, found.error_class, found.fault, found.parameter)


CASES = [
    # The tool's own code: a bug, nobody's call.
    (
        "AttributeError",
        "'NoneType' object has no attribute 'json'",
        {},
        {"q": "x"},
        (ErrorCode.INTERNAL, P, Fault.TOOL, ""),
    ),
    ("KeyError", "'price'", {}, {"item": "lamp"}, (ErrorCode.INTERNAL, P, Fault.TOOL, "")),
    (
        "TypeError",
        'can only concatenate str (not "int") to str',
        {},
        {"a": 1},
        (ErrorCode.INTERNAL, P, Fault.TOOL, ""),
    ),
    (
        "ZeroDivisionError",
        "division by zero",
        {},
        {"a": 1},
        (ErrorCode.INTERNAL, P, Fault.TOOL, ""),
    ),
    (
        "ModuleNotFoundError",
        "No module named 'pandas'",
        {},
        {"q": "x"},
        (ErrorCode.INTERNAL, P, Fault.TOOL, ""),
    ),
    # ... unless the call's values show: the key the model chose.
    (
        "KeyError",
        "'price'",
        {},
        {"sort_by": "price"},
        (ErrorCode.INTERNAL, P, Fault.ARGUMENTS, "sort_by"),
    ),
    (
        "TypeError",
        "quote() got an unexpected keyword argument 'ticker'",
        {},
        {"ticker": "AAPL"},
        (ErrorCode.INVALID_INPUT, P, Fault.ARGUMENTS, "ticker"),
    ),
    # Values that did not parse: the parameter holding them, never the value.
    (
        "ValueError",
        "invalid literal for int() with base 10: 'ten'",
        {},
        {"count": "ten"},
        (ErrorCode.INVALID_INPUT, P, Fault.ARGUMENTS, "count"),
    ),
    (
        "ValueError",
        "'kelvinn' is not a valid Unit",
        {},
        {"unit": "kelvinn"},
        (ErrorCode.INVALID_INPUT, P, Fault.ARGUMENTS, "unit"),
    ),
    (
        "ValueError",
        "bad value 'y'",
        {},
        {"x": "y"},
        (ErrorCode.INVALID_INPUT, P, Fault.ARGUMENTS, "x"),
    ),
    (
        "ValueError",
        "'archived' is not a valid Status",
        {},
        {"order": "A-1"},
        (ErrorCode.INTERNAL, P, Fault.TOOL, ""),
    ),  # a value the call never gave: its backend's
    (
        "json.JSONDecodeError",
        "Expecting value: line 1 column 2 (char 1)",
        {},
        {"payload": "{x"},
        (ErrorCode.INVALID_INPUT, P, Fault.ARGUMENTS, "payload"),
    ),
    (
        "json.JSONDecodeError",
        "Expecting value: line 1 column 1 (char 0)",
        {},
        {"q": "x"},
        (ErrorCode.UNKNOWN, T, Fault.BACKEND, ""),
    ),  # an error page where JSON was due
    (
        "re.error",
        "missing ), unterminated subpattern at position 0",
        {},
        {"pattern": "(ab"},
        (ErrorCode.INVALID_INPUT, P, Fault.ARGUMENTS, "pattern"),
    ),
    (
        "sqlite3.OperationalError",
        'near "SELEC": syntax error',
        {},
        {"query": "SELEC 1"},
        (ErrorCode.INVALID_INPUT, P, Fault.ARGUMENTS, "query"),
    ),
    # What the call named does not exist: its arguments', not a ban.
    (
        "sqlite3.OperationalError",
        "no such column: prce",
        {},
        {"query": "SELECT prce FROM t"},
        (ErrorCode.NOT_FOUND, P, Fault.ARGUMENTS, "query"),
    ),
    (
        "FileNotFoundError",
        "[Errno 2] No such file or directory: 'q3.cvs'",
        {},
        {"path": "q3.cvs"},
        (ErrorCode.NOT_FOUND, P, Fault.ARGUMENTS, "path"),
    ),
    (
        "httpx.HTTPStatusError",
        "Client error '404 Not Found' for url 'https://x.test/customers/cus_9'",
        {"http_status": 404},
        {"customer_id": "cus_9"},
        (ErrorCode.NOT_FOUND, P, Fault.ARGUMENTS, "customer_id"),
    ),
    (
        "httpx.HTTPStatusError",
        "Client error '404 Not Found' for url 'https://x.test/v2/search'",
        {"http_status": 404},
        {"q": "lamps"},
        (ErrorCode.NOT_FOUND, P, Fault.TOOL, ""),
    ),
    # The API's own words, before its status.
    (
        "httpx.HTTPStatusError",
        "Client error '400 Bad Request'",
        {"http_status": 400, "api_message": "Bad credentials"},
        {"q": "x"},
        (ErrorCode.AUTH, P, Fault.PERSON, ""),
    ),
    (
        "requests.HTTPError",
        "400 Client Error",
        {"http_status": 400, "api_parameter": "amount", "api_message": "Invalid integer: ten"},
        {"amount": "ten"},
        (ErrorCode.INVALID_INPUT, P, Fault.ARGUMENTS, "amount"),
    ),
    (
        "httpx.HTTPStatusError",
        "Client error '404 Not Found'",
        {"http_status": 404, "api_code": "resource_missing", "api_parameter": "customer"},
        {"customer": "cus_123"},
        (ErrorCode.NOT_FOUND, P, Fault.ARGUMENTS, "customer"),
    ),
    (
        "requests.HTTPError",
        "402 Client Error: Payment Required",
        {"http_status": 402},
        {"a": 1},
        (ErrorCode.INVALID_INPUT, P, Fault.PERSON, ""),
    ),
    # A person, time: never the model's.
    (
        "OSError",
        "[Errno 28] No space left on device",
        {},
        {"path": "out.csv"},
        (ErrorCode.UNAVAILABLE, P, Fault.PERSON, ""),
    ),
    (
        "KeyError",
        "'WEATHER_API_KEY'",
        {},
        {"city": "Oslo"},
        (ErrorCode.UNAVAILABLE, P, Fault.PERSON, ""),
    ),
    (
        "TimeoutError",
        "timed out after 'Oslo'",
        {},
        {"city": "Oslo"},
        (ErrorCode.TIMEOUT, T, Fault.BACKEND, ""),
    ),
]


@pytest.mark.parametrize(
    ("exception_type", "message", "fields", "arguments", "expected"),
    CASES,
    ids=[f"{case[0]}-{case[1][:24]}" for case in CASES],
)
def test_a_failure_gets_its_code_class_fault_and_parameter(
    exception_type: str,
    message: str,
    fields: dict[str, Any],
    arguments: dict[str, Any],
    expected: tuple[ErrorCode, ErrorClass, Fault, str],
) -> None:
    failure = ToolFailure(exception_type=exception_type, message=message, **fields)
    assert decided(failure, arguments) == expected


def test_a_parameter_the_schema_names_counts_though_the_call_left_it_out() -> None:
    """A KeyError of a required parameter the model did not send: the call's fault."""
    failure = ToolFailure(exception_type="KeyError", message="'symbol'")
    assert decided(failure, {"ticker": "AAPL"}) == (ErrorCode.INTERNAL, P, Fault.TOOL, "")
    assert decided(failure, {"ticker": "AAPL"}, ("symbol",)) == (
        ErrorCode.INTERNAL, P, Fault.ARGUMENTS, "symbol",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("code", "error_class", "fault"),
    [
        (ErrorCode.INVALID_INPUT, P, Fault.ARGUMENTS),
        (ErrorCode.TOOL_NOT_FOUND, P, Fault.ARGUMENTS),
        (ErrorCode.INTERNAL, P, Fault.TOOL),
        (ErrorCode.NOT_FOUND, P, Fault.TOOL),
        (ErrorCode.UNSUPPORTED, P, Fault.TOOL),
        (ErrorCode.AUTH, P, Fault.PERSON),
        (ErrorCode.RATE_LIMITED, P, Fault.PERSON),  # a quota someone must raise
        (ErrorCode.RATE_LIMITED, T, Fault.BACKEND),
        (ErrorCode.UNAVAILABLE, T, Fault.BACKEND),
        (ErrorCode.UNKNOWN, T, Fault.BACKEND),
        (ErrorCode.TIMEOUT, T, Fault.BACKEND),
        (ErrorCode.CONNECTION, P, Fault.PERSON),  # a certificate to fix
    ],
)
def test_who_can_act_by_default(code: ErrorCode, error_class: ErrorClass, fault: Fault) -> None:
    assert default_fault(code, error_class) is fault


def test_a_manifests_class_stays_and_the_call_still_names_the_parameter() -> None:
    """A manifest's rule decides the class (here: retry a ValueError); the call's values
    still say which parameter it is about."""
    rule = ClassificationRule(error_class=T, exception_type="ValueError")
    failure = ToolFailure(exception_type="ValueError", message="bad value 'y'")
    found = with_fault(classify(failure, (rule,), "t"), failure, {"x": "y"})
    assert (found.error_class, found.fault, found.parameter) == (T, Fault.ARGUMENTS, "x")
    rule = ClassificationRule(error_class=P, exception_type="ValueError")
    found = with_fault(classify(failure, (rule,), "t"), failure, {"x": "y"})
    assert (found.rule, found.fault, found.parameter) == (
        "manifest:t:classification[0]", Fault.ARGUMENTS, "x",
    )  # fmt: skip


VALUES = st.text(st.characters(codec="ascii", categories=["L", "N"]), min_size=1, max_size=8)


@given(
    st.dictionaries(st.from_regex(r"[a-z_]{1,8}", fullmatch=True), VALUES, min_size=1, max_size=4),
    st.sampled_from(["ValueError", "KeyError", "FileNotFoundError", "sqlite3.OperationalError"]),
    st.data(),
)
def test_the_parameter_named_is_never_a_value(
    arguments: dict[str, str], exception_type: str, data: st.DataObject
) -> None:
    """Whatever value the error quotes, the parameter is one the call has (or none)."""
    value = data.draw(st.sampled_from(sorted(arguments.values())))
    failure = ToolFailure(exception_type=exception_type, message=f"bad input {value!r}")
    parameter = decided(failure, arguments)[3]
    assert parameter == "" or parameter in arguments


def test_the_executors_records_are_the_daemons() -> None:
    """errord_client.classify_model, which the executor's copy of the rules reads, names
    every code, class and fault as the daemon's model does."""
    for daemon, client in (
        (model.ErrorCode, classify_model.ErrorCode),
        (model.ErrorClass, classify_model.ErrorClass),
        (model.Fault, classify_model.Fault),
    ):
        assert [(m.name, m.value) for m in daemon] == [(m.name, m.value) for m in client]


@pytest.mark.parametrize(
    ("exception_type", "message", "fields", "arguments", "expected"),
    CASES,
    ids=[f"{case[0]}-{case[1][:24]}" for case in CASES],
)
def test_the_executors_copy_decides_alike(
    exception_type: str,
    message: str,
    fields: dict[str, Any],
    arguments: dict[str, Any],
    expected: tuple[ErrorCode, ErrorClass, Fault, str],
) -> None:
    failure = classify_model.ToolFailure(exception_type=exception_type, message=message, **fields)
    found = client_with_fault(client_classify(failure), failure, arguments, ())
    code, error_class, fault, parameter = expected
    assert (found.code.value, found.error_class.value, found.fault, found.parameter) == (
        code.value, error_class.value, classify_model.Fault(fault.value), parameter,
    )  # fmt: skip
