"""The corpus of real tool failures (tests/fixtures/tool_failures) is what it says: each
case's code raises the real library's exception of the type it names, its arguments fit
its tool's schema (so the tool runs), its parameter is one the failure can be traced to,
and the corpus covers every family, every fault, and the issue's own examples."""

from __future__ import annotations

import collections
import json
import re
from typing import Any

import jsonschema
import pytest

from tests.fixtures.tool_failures import CORPUS, FAMILIES, Fault, ToolFailureCase

LIBRARIES = {
    "builtins": {"builtins"},
    "enum": {"builtins"},
    "os": {"builtins"},
    "json": {"json", "builtins"},
    "re": {"re"},
    "datetime": {"builtins", "zoneinfo"},
    "sqlite3": {"sqlite3"},
    "httpx": {"httpx"},
    "requests": {"requests"},
    "aiohttp": {"aiohttp"},
    "openai": {"openai"},
    "anthropic": {"anthropic"},
    # The MCP SDK's own errors, errord's adapter's (made of the SDK's), and the task
    # group's ExceptionGroup a per-call client wraps them in.
    "mcp": {"mcp", "errord_client", "builtins"},
}
"""The packages whose exceptions each family's cases may raise."""

BUILT: dict[str, BaseException] = {}


def built(case: ToolFailureCase) -> BaseException:
    """The case's exception, built once per test session."""
    if case.id not in BUILT:
        BUILT[case.id] = case.exception()
    return BUILT[case.id]


def by_case(test: Any) -> Any:
    return pytest.mark.parametrize("case", CORPUS, ids=[case.id for case in CORPUS])(test)


def test_the_corpus_has_80_cases_or_more_each_id_once() -> None:
    ids = [case.id for case in CORPUS]
    assert len(CORPUS) >= 80
    assert [id for id, n in collections.Counter(ids).items() if n > 1] == []


def test_every_family_has_cases_and_every_fault_is_labelled_in_many() -> None:
    families = collections.Counter(case.family for case in CORPUS)
    faults = collections.Counter(case.fault for case in CORPUS)
    assert {family: families[family] >= 3 for family in FAMILIES} == dict.fromkeys(FAMILIES, True)
    assert {fault: faults[fault] >= 10 for fault in Fault} == dict.fromkeys(Fault, True)


@by_case
def test_a_case_raises_the_real_librarys_exception_it_names(case: ToolFailureCase) -> None:
    """No class is faked: the exception is exactly the type the case names, defined by the
    library its family says, never by the tests."""
    error = built(case)
    assert type(error) is case.raises, f"{case.id} gave {type(error)!r}: {error}"
    package = type(error).__module__.partition(".")[0]
    assert package in LIBRARIES[case.family], type(error).__module__


@by_case
def test_a_cases_arguments_fit_its_tools_schema(case: ToolFailureCase) -> None:
    """The tool runs: the executor's check of the arguments against the schema passes."""
    json.dumps(dict(case.arguments))  # what the model sent is JSON
    if case.schema is not None:
        jsonschema.Draft202012Validator.check_schema(case.schema)
        jsonschema.validate(dict(case.arguments), case.schema)


@by_case
def test_a_labelled_parameter_is_one_the_failure_can_be_traced_to(case: ToolFailureCase) -> None:
    """The parameter is the call's, the schema's, or named in the error's words."""
    if case.parameter is None:
        return
    assert case.parameter in case.parameter_names or re.search(
        rf"\b{re.escape(case.parameter)}\b", str(built(case))
    )


@pytest.mark.parametrize(
    ("message", "fault"),
    [
        ("invalid literal for int() with base 10: 'ten'", Fault.ARGUMENTS),
        ("'kelvinn' is not a valid Unit", Fault.ARGUMENTS),
        ('near "SELEC": syntax error', Fault.ARGUMENTS),
        ("bad value 'y'", Fault.ARGUMENTS),
        ("no such column: prce", Fault.ARGUMENTS),
        ("404 Not Found: no order 'A-1042'", Fault.ARGUMENTS),
        ("'NoneType' object has no attribute 'json'", Fault.TOOL),
        ("'price'", Fault.TOOL),
        ('can only concatenate str (not "int") to str', Fault.TOOL),
    ],
)
def test_the_issues_own_examples_are_cases_verbatim(message: str, fault: Fault) -> None:
    assert [case.fault for case in CORPUS if str(built(case)) == message] == [fault]


@pytest.mark.parametrize(
    ("kind", "parameter"),
    [
        (FileNotFoundError, "path"),
        (IsADirectoryError, "path"),
        (json.JSONDecodeError, "payload"),
        (re.error, "pattern"),
    ],
)
def test_the_issues_parsing_and_path_errors_of_an_argument_are_cases(
    kind: type[BaseException], parameter: str
) -> None:
    assert any(
        case.raises is kind and case.fault is Fault.ARGUMENTS and case.parameter == parameter
        for case in CORPUS
    )


def test_a_json_error_of_a_backends_answer_is_not_the_models() -> None:
    faults = {case.fault for case in CORPUS if case.id.startswith("json-backend")}
    assert faults == {Fault.BACKEND}
