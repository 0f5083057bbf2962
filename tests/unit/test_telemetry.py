"""Reports' user and session ids: bounded like other ids, optional, hashed when asked; export
is off by default and configured the standard way (errord.wire.telemetry)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from errord_client.v1 import errord_pb2 as pb

from errord.config import Settings
from errord.decide.model import FailureReport, Outcome, OutcomeReport, ToolFailure
from errord.errors import ConfigError, InvalidRequest
from errord.wire import requests
from errord.wire.bounds import MAX_ID_LENGTH
from errord.wire.telemetry import IdHashing, Telemetry, telemetry_from, traces_endpoint

DISABLED = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_SDK_DISABLED": "true"}
CALL: Any = {"turn_id": "t", "call_id": "c", "tool": "search", "attempt": 1}


def test_ids_are_optional_and_converted_as_given() -> None:
    plain = requests.failure_report_from_proto(pb.ReportFailureRequest(**CALL))
    assert (plain.user_id, plain.session_id) == ("", "")
    named = requests.failure_report_from_proto(
        pb.ReportFailureRequest(**CALL, user_id="u-1", session_id="s-1")
    )
    assert (named.user_id, named.session_id) == ("u-1", "s-1")
    outcome = requests.outcome_report_from_proto(
        pb.ReportOutcomeRequest(**CALL, outcome=pb.OUTCOME_SUCCESS, user_id="u", session_id="s")
    )
    assert (outcome.user_id, outcome.session_id) == ("u", "s")


@pytest.mark.parametrize(
    ("value", "problem"),
    [("x" * (MAX_ID_LENGTH + 1), "at most"), ("a\nb", "control characters"), ("  ", "required")],
)
def test_ids_have_the_bounds_of_other_ids(value: str, problem: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        requests.failure_report_from_proto(
            pb.ReportFailureRequest(**CALL, user_id=value, session_id=value)
        )
    fields = {violation.field: violation.description for violation in refused.value.violations}
    assert problem in fields["user_id"]
    assert problem in fields["session_id"]


def test_hashing_is_the_hex_sha256_of_salt_and_id_and_leaves_empty_ids_empty() -> None:
    assert IdHashing()("alice") == hashlib.sha256(b"alice").hexdigest()
    assert IdHashing("pepper")("alice") == hashlib.sha256(b"pepperalice").hexdigest()
    assert IdHashing("pepper")("") == ""


def test_private_reports_carry_hashed_ids_and_compare_equal_when_repeated() -> None:
    telemetry = Telemetry(IdHashing("s"), None)
    report = FailureReport(**CALL, error=ToolFailure(), user_id="alice", session_id="one")
    hashed = telemetry.private(report)
    assert hashed.user_id == hashlib.sha256(b"salice").hexdigest()
    assert hashed.session_id == hashlib.sha256(b"sone").hexdigest()
    assert telemetry.private(report) == hashed  # a repeat is the same recorded report
    outcome = OutcomeReport(**CALL, outcome=Outcome.SUCCESS, user_id="alice")
    assert telemetry.private(outcome).user_id == hashed.user_id
    assert Telemetry(None, None).private(report) is report


def test_without_settings_or_environment_there_is_no_telemetry() -> None:
    assert telemetry_from(Settings(), {}) is None
    assert telemetry_from(Settings(telemetry_hash_ids=True), {}) is not None


@pytest.mark.parametrize(
    ("settings", "environ", "endpoint"),
    [
        (Settings(), {}, None),
        (Settings(), {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/"}, "http://c:4318/v1/traces"),
        (Settings(), {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c/t"}, "http://c/t"),
        (
            Settings(otel_endpoint="http://file:4318"),
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://env:4318"},
            "http://file:4318/v1/traces",
        ),
        (Settings(), DISABLED, None),
    ],
)
def test_export_is_off_unless_an_endpoint_is_configured(
    settings: Settings, environ: dict[str, str], endpoint: str | None
) -> None:
    assert traces_endpoint(settings, environ) == endpoint


def test_an_otel_endpoint_must_be_an_http_url() -> None:
    with pytest.raises(ConfigError, match="otel_endpoint"):
        Settings(otel_endpoint="collector:4317")
