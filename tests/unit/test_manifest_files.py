"""Reading tool manifests from YAML: the records produced, and every problem located."""

from __future__ import annotations

import contextlib
import re
import tempfile
import textwrap
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from errord.decide.manifest import (
    ClassificationRule,
    RetryPolicy,
    ToolManifest,
)
from errord.decide.model import DefaultValue, ErrorClass, ErrorCode
from errord.errors import ManifestError
from errord.manifests.files import load_manifest_dir, load_manifest_file

FULL_EXAMPLE = """\
tools:
  - name: flight_search
    description: Search flights
    timeout_ms: 12000
    idempotent: false
    retry_policy:
      strategy: exponential_backoff
      initial_delay_ms: 50
      max_delay_ms: 2000
      multiplier: 3
      jitter_percent: 15
      max_attempts: 3
      max_total_time_ms: 5000
    classification:
      - http_status: 503
        class: permanent
      - message: "(?i)quota exceeded"
        exception_type: QuotaError
        code: RATE_LIMITED
        class: Transient
    alternatives: [flight_search_backup, flight_search_cache]
    optional: true
    default: {flights: []}
    parameters:
      type: object
      required: [origin]
      properties: {origin: {type: string}}
    redact: [api_key, passenger.passport_number]
"""


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def problems_in(path: Path) -> list[str]:
    """Every problem ``load_manifest_file`` reports for ``path``, as ``file:line: field: msg``."""
    with pytest.raises(ManifestError) as raised:
        load_manifest_file(path)
    return [str(problem) for problem in raised.value.problems]


# Valid manifests.


def test_full_example_loads_every_field_and_merges_retry_policy_over_custom_defaults(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, "flights.yaml", FULL_EXAMPLE)
    defaults = RetryPolicy(max_delay=9.0, max_total_time=9.0)

    [manifest] = load_manifest_file(path, defaults=defaults, default_timeout=7.0)

    assert manifest == ToolManifest(
        name="flight_search",
        description="Search flights",
        timeout=12.0,
        idempotent=False,
        retry_policy=RetryPolicy(
            initial_delay=0.05,
            max_delay=2.0,
            multiplier=3,
            jitter=0.15,
            max_attempts=3,
            max_total_time=5.0,
        ),
        classification=(
            ClassificationRule(error_class=ErrorClass.PERMANENT, http_status=503),
            ClassificationRule(
                error_class=ErrorClass.TRANSIENT,
                code=ErrorCode.RATE_LIMITED,
                exception_type="QuotaError",
                message=re.compile("(?i)quota exceeded"),
            ),
        ),
        alternatives=("flight_search_backup", "flight_search_cache"),
        optional=True,
        default=DefaultValue({"flights": []}),
        parameters={
            "type": "object",
            "required": ["origin"],
            "properties": {"origin": {"type": "string"}},
        },
        redact=("api_key", "passenger.passport_number"),
        source=f"{path}:2",
    )


def test_partial_retry_policy_keeps_the_other_defaults(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "t.yaml",
        """\
        tools:
          - name: search
            retry_policy: {max_attempts: 2, jitter_percent: 0}
        """,
    )
    defaults = RetryPolicy(initial_delay=0.2, max_delay=1.0, max_attempts=7)

    [manifest] = load_manifest_file(path, defaults=defaults)

    assert manifest.retry_policy == RetryPolicy(
        initial_delay=0.2, max_delay=1.0, max_attempts=2, jitter=0.0
    )


def test_a_rate_limited_tool_may_allow_long_retry_after_waits(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "t.yaml",
        """\
        tools:
          - name: search
            retry_policy: {max_retry_after_ms: 60000, max_total_time_ms: 90000}
        """,
    )

    [manifest] = load_manifest_file(path)

    assert manifest.retry_policy == RetryPolicy(max_retry_after=60.0, max_total_time=90.0)
    assert manifest.retry_policy.longest_retry_after == 60.0
    assert RetryPolicy().longest_retry_after is None  # whatever fits the total retry time


def test_a_tool_with_only_a_name_gets_the_defaults(tmp_path: Path) -> None:
    path = write(tmp_path, "t.yaml", "tools:\n  - name: search\n")
    defaults = RetryPolicy(max_attempts=2)

    [manifest] = load_manifest_file(path, defaults=defaults, default_timeout=4.5)

    assert manifest == ToolManifest(
        name="search", timeout=4.5, retry_policy=defaults, source=f"{path}:2"
    )


def test_an_override_treating_503_as_permanent_becomes_a_classification_rule(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path,
        "t.yaml",
        """\
        tools:
          - name: flight_search
            classification:
              - {http_status: 503, class: permanent}
        """,
    )

    [manifest] = load_manifest_file(path)

    assert manifest.classification == (
        ClassificationRule(error_class=ErrorClass.PERMANENT, http_status=503),
    )


def test_class_and_code_names_are_case_insensitive(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "t.yaml",
        """\
        tools:
          - name: search
            classification:
              - {code: rate_limited, class: PERMANENT}
              - {code: Timeout, class: tRaNsIeNt}
        """,
    )

    [manifest] = load_manifest_file(path)

    assert manifest.classification == (
        ClassificationRule(error_class=ErrorClass.PERMANENT, code=ErrorCode.RATE_LIMITED),
        ClassificationRule(error_class=ErrorClass.TRANSIENT, code=ErrorCode.TIMEOUT),
    )


def test_a_null_default_is_a_default_value_and_an_absent_one_is_none(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "t.yaml",
        """\
        tools:
          - name: with_null_default
            default: null
          - name: without_default
        """,
    )

    with_null, without = load_manifest_file(path)

    assert with_null.default == DefaultValue(None)
    assert without.default is None


def test_modest_aliases_are_shared_not_copied(tmp_path: Path) -> None:
    """Aliases whose expansion stays small load, each read once; a "billion laughs" is
    refused (tests/daemon/test_hostile_manifests.py)."""
    lines = ["tools:", "  - name: laughs", "    default:", "      a0: &a0 [lol, lol]"]
    lines += [f"      a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 4)]
    path = write(tmp_path, "t.yaml", "\n".join(lines) + "\n")

    [manifest] = load_manifest_file(path)

    assert manifest.default is not None
    assert manifest.default.value["a3"][0] is manifest.default.value["a2"]


def test_several_tools_in_one_file_each_get_their_own_source_line(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "t.yaml",
        """\
        tools:
          - name: first
            description: one

          - description: two
            name: second
        """,
    )

    manifests = load_manifest_file(path)

    assert [(m.name, m.description, m.source) for m in manifests] == [
        ("first", "one", f"{path}:2"),
        ("second", "two", f"{path}:5"),
    ]


def test_directory_loads_yaml_and_yml_files_in_name_order_skipping_others(
    tmp_path: Path,
) -> None:
    write(tmp_path, "b.yml", "tools: [{name: b1}, {name: b2}]\n")
    write(tmp_path, "a.yaml", "tools: [{name: a1}]\n")
    write(tmp_path, "c.yaml", "tools: []\n")
    write(tmp_path, "notes.txt", "not yaml: [")
    write(tmp_path, ".hidden.yaml", "not yaml: [")
    (tmp_path / "sub.yaml").mkdir()
    write(tmp_path / "sub.yaml", "d.yaml", "tools: [{name: nested}]\n")

    manifests = load_manifest_dir(tmp_path)

    assert [(m.name, m.source) for m in manifests] == [
        ("a1", f"{tmp_path / 'a.yaml'}:1"),
        ("b1", f"{tmp_path / 'b.yml'}:1"),
        ("b2", f"{tmp_path / 'b.yml'}:1"),
    ]
    assert "b2" in manifests
    assert "nested" not in manifests


def test_an_empty_directory_loads_no_manifests(tmp_path: Path) -> None:
    assert len(load_manifest_dir(tmp_path)) == 0


# Problems, one kind at a time.

# Each case: a file's text, and its problems as "line: field: message" in the
# order reported; "{file}" stands for the file's path.
PROBLEM_CASES = [
    pytest.param(
        """\
        tools:
          - name: search
            description: [unclosed
        """,
        [
            "4: invalid YAML: expected ',' or ']', but got '<stream end>'"
            " (while parsing a flow sequence at line 3)"
        ],
        id="yaml-syntax-error",
    ),
    pytest.param(
        """\
        tools:
          - name: search
           timeout_ms: 5
        """,
        [
            "3: invalid YAML: expected <block end>, but found '<block mapping start>'"
            " (while parsing a block collection at line 2)"
        ],
        id="yaml-bad-indentation",
    ),
    pytest.param(
        "tools:\n  - name: search\n    default: " + "[" * 150 + "]" * 150 + "\n",
        ["3: nested more than 100 levels deep"],
        id="nested-too-deep",
    ),
    pytest.param(
        "tools: " + "[" * 5000 + "]" * 5000 + "\n",
        ["0: nested more than 100 levels deep"],
        id="nested-too-deep-for-the-yaml-parser",
    ),
    pytest.param(
        "",
        ["0: empty manifest file: expected a mapping with 'tools'"],
        id="empty-file",
    ),
    pytest.param(
        "# nothing but a comment\n",
        ["0: empty manifest file: expected a mapping with 'tools'"],
        id="comment-only-file",
    ),
    pytest.param(
        "tools: []\n---\ntools: []\n",
        ["3: a second YAML document; put every tool in one 'tools' list"],
        id="two-documents",
    ),
    pytest.param(
        "- name: search\n",
        ["1: expected a mapping with 'tools', got a list"],
        id="top-level-not-a-mapping",
    ),
    pytest.param(
        "just text\n",
        ["1: expected a mapping with 'tools', got 'just text'"],
        id="top-level-scalar",
    ),
    pytest.param(
        "version: 1\n",
        [
            "1: tools: missing required key 'tools'",
            "1: version: unknown key 'version'; allowed keys: tools, tool",
        ],
        id="missing-tools-and-unknown-top-level-key",
    ),
    pytest.param(
        "tools:\n  name: search\n",
        ["2: tools: expected a list, got a mapping"],
        id="tools-not-a-list",
    ),
    pytest.param(
        "tools:\n",
        ["1: tools: expected a list, got null"],
        id="tools-null",
    ),
    pytest.param(
        "tools: []\ntool: []\n",
        ["2: tool: either 'tools' (a list) or 'tool' (one tool), not both"],
        id="both-layouts",
    ),
    pytest.param(
        "tools:\n  - search\n",
        ["2: tools[0]: expected a mapping, got 'search'"],
        id="tool-entry-not-a-mapping",
    ),
    pytest.param(
        """\
        tools:
          - name: search
            retries: 3
        """,
        [
            "3: tools[0].retries: unknown key 'retries' (did you mean 'retry_policy'?);"
            " allowed keys: name, id, description, timeout_ms, idempotent, retry_policy,"
            " circuit_breaker, classification, alternatives, optional, accepts_partial_results,"
            " default, parameters, redact"
        ],
        id="unknown-tool-key-with-suggestion",
    ),
    pytest.param(
        """\
        tools:
          - name: search
            retry_policy:
              strategy: exponential_backoff
              color: blue
        """,
        [
            "5: tools[0].retry_policy.color: unknown key 'color'; allowed keys: strategy,"
            " initial_delay_ms, max_delay_ms, multiplier, jitter_percent, max_attempts,"
            " max_total_time_ms, max_retry_after_ms"
        ],
        id="unknown-retry-key-without-suggestion",
    ),
    pytest.param(
        """\
        tools:
          - name: search
            classification:
              - {http_status: 503, class: permanent, status: 1}
        """,
        [
            "4: tools[0].classification[0].status: unknown key 'status'"
            " (did you mean 'http_status'?);"
            " allowed keys: code, http_status, exception_type, message, class"
        ],
        id="unknown-rule-key",
    ),
    pytest.param(
        """\
        tools:
          - name: search
            retry_policy:
              max_attempts: five
        """,
        ["4: tools[0].retry_policy.max_attempts: expected an integer, got 'five'"],
        id="string-where-integer",
    ),
    pytest.param(
        """\
        tools:
          - name: search
            timeout_ms: true
        """,
        ["3: tools[0].timeout_ms: expected an integer, got true"],
        id="yaml-bool-is-not-an-integer",
    ),
    pytest.param(
        """\
        tools:
          - name: search
            timeout_ms: 1.5
        """,
        ["3: tools[0].timeout_ms: expected an integer, got 1.5"],
        id="float-where-integer",
    ),
    pytest.param(
        """\
        tools:
          - name: search
            retry_policy: {multiplier: yes}
        """,
        ["3: tools[0].retry_policy.multiplier: expected a number, got yes"],
        id="yaml-bool-is-not-a-number",
    ),
    pytest.param(
        """\
        tools:
          - name: search
            retry_policy: {max_delay_ms: .inf}
        """,
        ["3: tools[0].retry_policy.max_delay_ms: expected a number, got .inf"],
        id="infinity-is-not-a-number",
    ),
    pytest.param(
        """\
        tools:
          - name: search
            idempotent: 1
            optional: "no"
        """,
        [
            "3: tools[0].idempotent: expected a boolean, got 1",
            "4: tools[0].optional: expected a boolean, got 'no'",
        ],
        id="not-a-boolean",
    ),
    pytest.param(
        """\
        tools:
          - name: [search]
            description:
        """,
        [
            "2: tools[0].name: expected a string, got a list",
            "3: tools[0].description: expected a string, got null",
        ],
        id="not-a-string",
    ),
    pytest.param(
        """\
        tools:
          - name: search
            alternatives: backup
            redact: {api_key: true}
            classification: {http_status: 503}
        """,
        [
            "3: tools[0].alternatives: expected a list, got 'backup'",
            "4: tools[0].redact: expected a list, got a mapping",
            "5: tools[0].classification: expected a list, got a mapping",
        ],
        id="not-a-list",
    ),
    pytest.param(
        """\
        tools:
          - name: search
            retry_policy: 3
        """,
        ["3: tools[0].retry_policy: expected a mapping, got 3"],
        id="retry-policy-not-a-mapping",
    ),
    pytest.param(
        """\
        tools:
          - name: search
            timeout_ms: 0
            retry_policy:
              initial_delay_ms: -1
              max_delay_ms: -2
              multiplier: 0.5
              jitter_percent: 100
              max_attempts: 0
              max_total_time_ms: -3
        """,
        [
            "3: tools[0].timeout_ms: must be from 1 to 86400000 (a day), got 0",
            "5: tools[0].retry_policy.initial_delay_ms: must be at least 0, got -1",
            "6: tools[0].retry_policy.max_delay_ms: must be at least 0, got -2",
            "7: tools[0].retry_policy.multiplier: must be at least 1, got 0.5",
            "8: tools[0].retry_policy.jitter_percent: must be at least 0 and below 100, got 100",
            "9: tools[0].retry_policy.max_attempts: must be at least 1, got 0",
            "10: tools[0].retry_policy.max_total_time_ms: must be at least 0, got -3",
        ],
        id="out-of-range",
    ),
    pytest.param(
        """\
        tools:
          - name: search
            classification:
              - {http_status: 99, class: permanent}
              - {http_status: 600, class: permanent}
        """,
        [
            "4: tools[0].classification[0].http_status: must be between 100 and 599, got 99",
            "5: tools[0].classification[1].http_status: must be between 100 and 599, got 600",
        ],
        id="http-status-out-of-range",
    ),
    pytest.param(
        """\
        tools:
          - name: search
            retry_policy:
              strategy: linear
        """,
        ["4: tools[0].retry_policy.strategy: expected one of exponential_backoff, got 'linear'"],
        id="unsupported-strategy",
    ),
    pytest.param(
        """\
        tools:
          - name: search
            retry_policy:
              initial_delay_ms: 1000
        """,
        [
            "4: tools[0].retry_policy: max_delay_ms must not be below initial_delay_ms"
            " (keys not given take the default policy's value)"
        ],
        id="merged-retry-policy-rejected-by-record",
    ),
    pytest.param(
        """\
        tools:
          - description: no name here
            timeout_ms: 100
        """,
        ["2: tools[0].name: missing required key 'name'"],
        id="missing-name",
    ),
    pytest.param(
        """\
        tools:
          - name: ''
          - name: flight search
        """,
        [
            "2: tools[0].name: must be a non-empty name without whitespace, got ''",
            "3: tools[1].name: must be a non-empty name without whitespace, got 'flight search'",
        ],
        id="bad-tool-name",
    ),
    pytest.param(
        """\
        tools:
          - name: search
            classification:
              - http_status: 503
        """,
        ["4: tools[0].classification[0].class: missing required key 'class'"],
        id="missing-rule-class",
    ),
    pytest.param(
        """\
        tools:
          - name: search
            classification:
              - class: sometimes
        """,
        [
            "4: tools[0].classification[0]: a rule needs at least one condition:"
            " code, http_status, exception_type, message",
            "4: tools[0].classification[0].class: expected one of transient, permanent,"
            " got 'sometimes'",
        ],
        id="rule-without-condition-and-unknown-class",
    ),
    pytest.param(
        """\
        tools:
          - name: search
            classification:
              - {code: RATE_LIMIT, class: transient}
        """,
        [
            "4: tools[0].classification[0].code: expected one of TIMEOUT, CONNECTION,"
            " RATE_LIMITED, UNAVAILABLE, INVALID_INPUT, AUTH, NOT_FOUND, UNSUPPORTED,"
            " TOOL_NOT_FOUND, SCHEMA_VIOLATION, UNKNOWN, INTERNAL, got 'RATE_LIMIT'"
            " (did you mean 'RATE_LIMITED'?)"
        ],
        id="unknown-error-code",
    ),
    pytest.param(
        """\
        tools:
          - name: search
            classification:
              - class: permanent
                exception_type: ''
                message: "quota (exceeded"
        """,
        [
            "5: tools[0].classification[0].exception_type: must be a non-empty string, got ''",
            "6: tools[0].classification[0].message: invalid regular expression:"
            " missing ), unterminated subpattern at position 6",
        ],
        id="invalid-regex-and-empty-exception-type",
    ),
    pytest.param(
        """\
        tools:
          - name: search
            parameters:
              type: object
              properties:
                origin: {type: strin}
        """,
        [
            "6: tools[0].parameters.properties.origin.type: invalid JSON Schema:"
            " 'strin' is not valid under any of the given schemas"
        ],
        id="invalid-json-schema-at-the-offending-line",
    ),
    pytest.param(
        """\
        tools:
          - name: search
            parameters: [origin]
        """,
        ["3: tools[0].parameters: expected a mapping (a JSON Schema), got a list"],
        id="json-schema-not-a-mapping",
    ),
    pytest.param(
        """\
        tools:
          - name: search
            parameters:
              properties:
                on: {type: boolean}
        """,
        [
            "5: tools[0].parameters.properties: expected a string key, got on"
            " (YAML reads it as a bool; quote it to make it a string)"
        ],
        id="non-string-key-in-schema",
    ),
    pytest.param(
        """\
        tools:
          - name: search
            default:
              when: 2024-01-01
        """,
        [
            "4: tools[0].default.when: expected a JSON value, got 2024-01-01"
            " (YAML reads it as a date; quote it to make it a string)"
        ],
        id="default-not-json",
    ),
    pytest.param(
        """\
        tools:
          - name: search
            default: &loop [1, *loop]
        """,
        ["3: tools[0].default[1]: an alias that contains itself is not a JSON value"],
        id="default-recursive-alias",
    ),
    pytest.param(
        """\
        tools:
          - name: search
            timeout_ms: !!int many
            description: !secret x
        """,
        [
            "3: tools[0].timeout_ms: cannot read 'many' as 'tag:yaml.org,2002:int'",
            "4: tools[0].description: unsupported YAML tag '!secret'",
        ],
        id="bad-explicit-tags",
    ),
    pytest.param(
        """\
        tools:
          - name: search
            timeout_ms: 100
            timeout_ms: 200
        """,
        ["4: tools[0].timeout_ms: duplicate key 'timeout_ms' (first at line 3)"],
        id="duplicate-key-in-tool",
    ),
    pytest.param(
        """\
        tools:
          - name: search
            retry_policy: {max_attempts: 2, max_attempts: 3}
        """,
        ["3: tools[0].retry_policy.max_attempts: duplicate key 'max_attempts' (first at line 3)"],
        id="duplicate-key-in-retry-policy",
    ),
    pytest.param(
        """\
        tools:
          - name: search
            default:
              flights: []
              flights: [1]
        """,
        ["5: tools[0].default.flights: duplicate key 'flights' (first at line 4)"],
        id="duplicate-key-in-default",
    ),
    pytest.param(
        """\
        tools: []
        tools:
          - name: search
        """,
        ["2: tools: duplicate key 'tools' (first at line 1)"],
        id="duplicate-top-level-key",
    ),
    pytest.param(
        """\
        base: &base {name: search}
        tools:
          - <<: *base
        """,
        [
            "1: base: unknown key 'base'; allowed keys: tools, tool",
            "3: tools[0]: merge keys ('<<') are not supported",
            "3: tools[0].name: missing required key 'name'",
        ],
        id="merge-key",
    ),
    pytest.param(
        """\
        tools:
          - name: search
          - name: fetch
          - name: search
        """,
        ["4: tools[2].name: duplicate tool name 'search' (first defined at {file}:2)"],
        id="duplicate-tool-name-in-file",
    ),
    pytest.param(
        """\
        tools:
          - name: search
            alternatives:
              - backup
              - search
        """,
        ["5: tools[0].alternatives[1]: a tool must not list itself ('search') as an alternative"],
        id="tool-is-its-own-alternative",
    ),
    pytest.param(
        """\
        tools:
          - name: search
            redact: [api_key, "passenger..passport", 7]
        """,
        [
            "3: tools[0].redact[1]: must be a dotted path such as 'passenger.passport_number',"
            " got 'passenger..passport'",
            "3: tools[0].redact[2]: expected a string, got 7",
        ],
        id="bad-redact-paths",
    ),
]


@pytest.mark.parametrize(("text", "expected"), PROBLEM_CASES)
def test_each_problem_kind_is_reported_as_file_line_field_message(
    tmp_path: Path, text: str, expected: list[str]
) -> None:
    path = write(tmp_path, "manifest.yaml", text)

    # "0: ..." stands for a problem of the whole file, which is printed without a line.
    located = [
        f"{path}: {line[3:]}" if line.startswith("0: ") else f"{path}:{line}" for line in expected
    ]
    assert problems_in(path) == [text.format(file=path) for text in located]


def test_a_file_that_is_not_utf8_is_a_problem(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes("tools:\n  - name: caf\xe9\n".encode("latin-1"))

    assert problems_in(path) == [f"{path}: not UTF-8 text: invalid continuation byte at byte 20"]


def test_a_character_yaml_forbids_is_reported_on_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, "t.yaml", "tools:\n  - name: a\x07b\n")

    assert problems_in(path) == [
        f"{path}:2: invalid YAML: unacceptable character #x0007: special characters are not allowed"
    ]


def test_every_problem_of_every_tool_is_reported_at_once_in_line_order(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "t.yaml",
        """\
        tools:
          - name: search
            colour: red
            timeout_ms: soon
            retry_policy: {max_attempts: 0}
          - name: fetch
          - timeout_ms: -5
        """,
    )

    assert problems_in(path) == [
        f"{path}:3: tools[0].colour: unknown key 'colour'; allowed keys: name, id,"
        " description, timeout_ms, idempotent, retry_policy, circuit_breaker, classification,"
        " alternatives, optional, accepts_partial_results, default, parameters, redact",
        f"{path}:4: tools[0].timeout_ms: expected an integer, got 'soon'",
        f"{path}:5: tools[0].retry_policy.max_attempts: must be at least 1, got 0",
        f"{path}:7: tools[2].name: missing required key 'name'",
        f"{path}:7: tools[2].timeout_ms: must be from 1 to 86400000 (a day), got -5",
    ]


def test_manifest_error_message_lists_one_problem_per_line(tmp_path: Path) -> None:
    path = write(tmp_path, "t.yaml", "tools:\n  - name: a\n    timeout_ms: x\n    optional: 2\n")

    with pytest.raises(ManifestError) as raised:
        load_manifest_file(path)

    assert str(raised.value) == (
        f"{path}:3: tools[0].timeout_ms: expected an integer, got 'x'\n"
        f"{path}:4: tools[0].optional: expected a boolean, got 2"
    )


# Problems across the files of a directory.


def test_a_tool_name_defined_in_two_files_is_reported_at_the_second(tmp_path: Path) -> None:
    first = write(tmp_path, "a.yaml", "tools:\n  - name: other\n  - name: search\n")
    second = write(tmp_path, "b.yaml", "tools:\n\n  - name: search\n")

    with pytest.raises(ManifestError) as raised:
        load_manifest_dir(tmp_path)

    assert [str(problem) for problem in raised.value.problems] == [
        f"{second}:3: tools[0].name: duplicate tool name 'search' (first defined at {first}:3)"
    ]


def test_problems_of_all_files_are_reported_together_in_file_order(tmp_path: Path) -> None:
    write(tmp_path, "good.yaml", "tools: [{name: fine}]\n")
    broken = write(tmp_path, "a.yaml", "tools: [\n")
    wrong = write(tmp_path, "z.yml", "tools:\n  - name: z\n    idempotent: maybe\n")

    with pytest.raises(ManifestError) as raised:
        load_manifest_dir(tmp_path)

    assert [str(problem) for problem in raised.value.problems] == [
        f"{broken}:2: invalid YAML: expected the node content, but found '<stream end>'"
        " (while parsing a flow node at line 2)",
        f"{wrong}:3: tools[0].idempotent: expected a boolean, got 'maybe'",
    ]


def test_a_missing_directory_is_a_manifest_error(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"

    with pytest.raises(ManifestError) as raised:
        load_manifest_dir(missing)

    assert [str(problem) for problem in raised.value.problems] == [
        f"{missing}: manifest directory does not exist"
    ]


def test_a_file_given_as_the_directory_is_a_manifest_error(tmp_path: Path) -> None:
    path = write(tmp_path, "t.yaml", "tools: []\n")

    with pytest.raises(ManifestError) as raised:
        load_manifest_dir(path)

    assert [str(problem) for problem in raised.value.problems] == [f"{path}: not a directory"]


def test_a_missing_file_is_a_manifest_error(tmp_path: Path) -> None:
    path = tmp_path / "gone.yaml"

    assert problems_in(path) == [f"{path}: cannot read file: No such file or directory"]


# Whatever the input, the only failure is a ManifestError.

TOOL_KEYS = [
    "name",
    "description",
    "timeout_ms",
    "idempotent",
    "retry_policy",
    "classification",
    "alternatives",
    "optional",
    "default",
    "parameters",
    "redact",
    "strategy",
    "max_attempts",
    "class",
    "http_status",
    "message",
    "code",
]
yaml_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-1000, 100_000)
    | st.floats(allow_nan=True)
    | st.text(max_size=8)
    | st.sampled_from(["permanent", "TIMEOUT", "(", "search", "exponential_backoff"]),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from(TOOL_KEYS) | st.text(max_size=4), children, max_size=4)
    ),
    max_leaves=12,
)
yaml_documents = st.fixed_dictionaries(
    {"tools": st.lists(st.dictionaries(st.sampled_from(TOOL_KEYS), yaml_values), max_size=3)}
)


def load_text(text: str) -> None:
    """Load ``text`` as a manifest file; any exception but ManifestError fails the test."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "fuzz.yaml"
        path.write_text(text, encoding="utf-8")
        with contextlib.suppress(ManifestError):
            load_manifest_file(path)


@settings(max_examples=200, deadline=None)
@given(yaml_documents)
def test_any_document_shape_loads_or_raises_manifest_error(document: object) -> None:
    load_text(yaml.safe_dump(document))


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=" \n\t:-?[]{},'\"!&*#|>%@`~.0123456789abnrst<", max_size=60))
def test_any_text_loads_or_raises_manifest_error(text: str) -> None:
    load_text(text)
