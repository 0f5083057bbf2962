"""Error signatures group messages that differ only in numbers, ids, timestamps and the like,
and keep different errors apart."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from errord.decide.memory.signatures import FINGERPRINT_CHARS, fingerprint, signature
from errord.decide.model import ErrorCode

SAME = [
    ("timeout after 30s on req 8812", "timeout after 31s on req 9120"),
    ("Read timed out. (read timeout=30)", "Read timed out. (read timeout=60)"),
    ("Connection refused on 10.0.0.12:5432", "Connection refused on 10.0.3.7:5433"),
    (
        "request 123e4567-e89b-12d3-a456-426614174000 failed",
        "request 9b2f0c1e-0000-4a3b-8c9d-0123456789ab failed",
    ),
    ("GET https://api.example.com/v1/flights?from=SFO failed", "GET https://x.io/a/b failed"),
    ("Rate limit reached, retry in 20 seconds", "Rate limit reached, retry in 7 seconds"),
    ("quota exceeded at 2026-11-22T12:00:03Z", "quota exceeded at 2025-01-01T00:00:00+02:00"),
    ("deadline at 12:03:44 passed", "deadline at 09:00:01.5 passed"),
    ("No such file: /var/lib/app/data/7.json", "No such file: /tmp/x/y.json"),
    ("Parameter 'query' must be str, got int", "Parameter 'limit' must be str, got int"),
    ('Unknown city "Pariss"', 'Unknown city "Londn"'),
    ("user bob@example.com not authorized", "user alice@corp.example.org not authorized"),
    ("trace id 4bf92f3577b34da6a3ce929d0e0e4736 rejected", "trace id 00f067aa0ba902b7 rejected"),
    ("call_abc123 failed with status 503", "call_zz9 failed with status 502"),
    ("Request req_8812 took 1.5s", "Request req_9120 took 12.25s"),
    ("Used 95% of the budget", "Used 100% of the budget"),
    ("429 Too Many Requests", "429   Too Many   Requests"),
    ("Processed 1,234 of 5,000 rows", "Processed 17 of 20 rows"),
    ("C:\\Users\\ann\\report.pdf is locked", "C:\\temp\\x.pdf is locked"),
    ("TIMEOUT after 500ms", "timeout after 750ms"),
    ("max tokens 4096 exceeded by 12", "max tokens 8192 exceeded by 3"),
    ("session s-4f9a1c2e expired", "session s-0b7d33aa expired"),
]

DIFFERENT = [
    ("connection refused", "connection reset by peer"),
    ("Read timed out", "Connect timed out"),
    ("Rate limit reached", "Quota exceeded"),
    ("No such file", "Permission denied"),
    ("invalid API key", "expired API key"),
    ("Parameter 'query' must be str, got int", "Parameter 'query' cannot be empty"),
    ("city not found", "flight not found"),
    ("deadlock detected", "canceling statement due to statement timeout"),
    ("Name or service not known", "Temporary failure in name resolution"),
    ("The server had an error while processing your request", "The server is overloaded"),
    ("context length exceeded", "output length exceeded"),
    ("SSL: CERTIFICATE_VERIFY_FAILED", "SSL: WRONG_VERSION_NUMBER"),
    ("404 Not Found", "410 Gone"),
    ("Bad Gateway", "Gateway Timeout"),
    ("upstream closed connection", "upstream reset connection"),
    ("missing required parameter", "unexpected parameter"),
    ("database is locked", "database disk image is malformed"),
    ("token expired", "token revoked"),
    ("", "error"),
    ("Too many open files", "Too many redirects"),
]


@pytest.mark.parametrize(("first", "second"), SAME)
def test_messages_that_differ_only_in_their_details_share_a_fingerprint(
    first: str, second: str
) -> None:
    assert fingerprint(first) == fingerprint(second)
    code = ErrorCode.UNKNOWN
    assert signature(code, first).key == signature(code, second).key


@pytest.mark.parametrize(("first", "second"), DIFFERENT)
def test_different_errors_keep_different_fingerprints(first: str, second: str) -> None:
    assert fingerprint(first) != fingerprint(second)


def test_a_timeout_message_reads_as_its_pattern() -> None:
    assert fingerprint("timeout after 30s on req 8812") == "timeout after <n> on req <n>"


def test_one_message_under_two_codes_is_two_signatures() -> None:
    message = "request failed"
    assert (
        signature(ErrorCode.TIMEOUT, message).key != signature(ErrorCode.UNAVAILABLE, message).key
    )


@given(st.text(max_size=3_000))
def test_a_fingerprint_is_bounded_stable_and_a_fixed_point(message: str) -> None:
    once = fingerprint(message)
    assert len(once) <= FINGERPRINT_CHARS
    assert fingerprint(message) == once
    assert fingerprint(once) == once
