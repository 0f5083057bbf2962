"""Redaction: every credential kind masked where it stands, ordinary ids left alone,
deterministic, idempotent, the same object back when nothing is secret, linear time.

Every secret below is fake: made up to the shape of its kind, never issued by anyone.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from errord.decide.model import FailureReport, ToolFailure
from errord.decide.redact import (
    MANIFEST,
    key_kind,
    looks_random,
    marker,
    redact,
    redact_json,
    redact_report,
    redact_text,
)
from tests.fixtures.leaks import LEAKS, Leak


def test_at_least_thirty_kinds_are_covered() -> None:
    assert len({leak.kind for leak in LEAKS}) >= 30


@pytest.mark.parametrize("leak", LEAKS, ids=lambda leak: leak.kind)
def test_a_credential_is_masked_with_its_kind(leak: Leak) -> None:
    redacted = redact_text(leak.shown)
    assert leak.secret not in redacted
    assert marker(leak.kind) in redacted


@pytest.mark.parametrize("leak", LEAKS, ids=lambda leak: leak.kind)
def test_a_credential_is_masked_in_any_string_of_a_json_value(leak: Leak) -> None:
    value = {"query": "SFO", "headers": [{"note": leak.shown}], "error": leak.shown}
    assert leak.secret not in repr(redact_json(value))


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        (
            "postgres://app:FakePassw0rd@db/flights",
            "postgres://app:[REDACTED:password]@db/flights",
        ),
        ("redis://:FakeRedisPass@cache:6379/0", "redis://:[REDACTED:password]@cache:6379/0"),
        (
            "password=FakePw-123 host=db user=ann",
            "password=[REDACTED:password] host=db user=ann",
        ),
        (
            "?q=SFO&access_token=FAKEtoken123&page=2",
            "?q=SFO&access_token=[REDACTED:token]&page=2",
        ),
        (
            "Authorization: Bearer fAk3T0kenValue_123",
            "Authorization: Bearer [REDACTED:bearer_token]",
        ),
        ('{"api_key": "FAKEapikey456", "q": "x"}', '{"api_key": "[REDACTED:api_key]", "q": "x"}'),
        (
            "AccountName=acct;AccountKey=FAKE+/fake==;EndpointSuffix=core",
            "AccountName=acct;AccountKey=[REDACTED:azure_storage_key];EndpointSuffix=core",
        ),
        (
            "bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0/getMe",
            "bot123456789:[REDACTED:telegram_bot_token]/getMe",
        ),
        ("401 from AKIAIOSFODNN7EXAMPLE.", "401 from [REDACTED:aws_access_key]."),
    ],
)
def test_only_the_credential_is_masked_and_the_text_stays_readable(
    text: str, redacted: str
) -> None:
    assert redact_text(text) == redacted


CLEAN_TEXTS = [
    # ids executors use
    "123e4567-e89b-12d3-a456-426614174000",
    "call_abc123",
    "call_Xy7Zk2Lm9Qp4Rt6Vw8Nb3Hj5",
    "toolu_01A09q90qw90lq917835lq9",
    "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
    "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
    "cus_NffrFeUfNV2Hib pi_3MtwBwLkdIwHu7ix28a3tqPa",
    "deadbeef",
    "9fceb02d0ae598e95dc970b74767f19372d61af8",
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "trace 4bf92f3577b34da6a3ce929d0e0e4736 span 00f067aa0ba902b7",
    # times
    "2025-03-01T10:30:00Z",
    "2025-03-01T10:30:00.123456+02:00",
    "retry at 10:30:00 on 2025-03-01",
    # URLs without credentials, addresses
    "https://api.example.com/v1/flights?origin=SFO&date=2025-03-01",
    "https://example.com:8443/path/to/page#section",
    "ssh://git@github.com:22/org/repo.git",
    "git@github.com:org/repo.git",
    "ann.lee@example.com",
    "10.0.0.1:5432",
    # paths
    "/home/ann/projects/errord/decide/redact.py",
    "C:\\Users\\Ann\\Documents\\Report_Final_2024.docx",
    "src/main/java/com/example/service/FlightSearchService.java",
    "/data/Reports/2024/Q3/SalesSummary_Final_v2.xlsx",
    "projects/my-project-123/locations/us-central1/datasets/flights_2024",
    # key-like words that are not secrets
    "max_tokens=4096",
    "max_tokens: 4096 exceeds the limit",
    "prompt_tokens=12&completion_tokens=30",
    "session_count=3",
    "author=Ann Lee",
    "passenger: Ann Lee",
    "keyword=flights&primary_key=id",
    "page_token=CAESBggBEAEYAQ",
    "design: signal",
    # prose about credentials
    "invalid password",
    "missing Bearer token",
    "Basic authentication failed",
    "the token expired; authenticate again",
    "Incorrect API key provided.",
    "sk-learn-compatible-pipeline-step",
    "desk-live-1 risk_test_2 ask-test-3",
    "sk-live- and sk_test_ name no key",
    # long identifiers and low-entropy base64
    "get_flight_availability_for_route_and_date",
    "AbstractSingletonProxyFactoryBean2024",
    "ProvisionedThroughputExceededException",
    "aGVsbG8gd29ybGQgdGhpcyBpcyBhIHRlc3Qgc3RyaW5n",
    "upstream timed out after 30s (GET /flights)",
    "",
    "x",
]


@pytest.mark.parametrize("text", CLEAN_TEXTS)
def test_ordinary_text_and_ids_survive_as_the_same_object(text: str) -> None:
    assert redact_text(text) is text


@pytest.mark.parametrize(
    ("key", "kind"),
    [
        ("password", "password"),
        ("passwd", "password"),
        ("pwd", "password"),
        ("pass", "password"),
        ("passphrase", "password"),
        ("db_password", "password"),
        ("password_confirmation", "password"),
        ("secret", "secret_key"),
        ("client_secret", "secret_key"),
        ("clientSecret", "secret_key"),
        ("token", "token"),
        ("access_token", "token"),
        ("refresh_token", "token"),
        ("id_token", "token"),
        ("githubToken", "token"),
        ("X-Auth-Token", "token"),
        ("x-amz-security-token", "token"),
        ("api_key", "api_key"),
        ("apikey", "api_key"),
        ("apiKey", "api_key"),
        ("X-Api-Key", "api_key"),
        ("Ocp-Apim-Subscription-Key", "api_key"),
        ("Authorization", "authorization"),
        ("auth", "authorization"),
        ("Proxy-Authorization", "authorization"),
        ("cookie", "cookie"),
        ("Set-Cookie", "cookie"),
        ("session", "session"),
        ("sessionid", "session"),
        ("SESSION_ID", "session"),
        ("private_key", "private_key"),
        ("credentials", "credentials"),
        ("aws_secret_access_key", "aws_secret_key"),
        ("AccountKey", "azure_storage_key"),
        ("SharedAccessKey", "azure_shared_access_key"),
        ("sig", "signature"),
        ("X-Amz-Signature", "signature"),
    ],
)
def test_a_key_named_for_a_secret_has_a_kind(key: str, kind: str) -> None:
    assert key_kind(key) == kind


@pytest.mark.parametrize(
    "key",
    [
        "max_tokens",
        "maxTokens",
        "tokens",
        "prompt_tokens",
        "token_count",
        "token_type",
        "author",
        "authors",
        "authority",
        "session_count",
        "sessions",
        "passenger",
        "passport",
        "bypass",
        "compass",
        "key",
        "keyword",
        "primary_key",
        "public_key",
        "cache_key",
        "idempotency_key",
        "page_token",
        "next_page_token",
        "nextToken",
        "secret_name",
        "design",
        "signal",
    ],
)
def test_a_key_that_only_looks_secret_is_not(key: str) -> None:
    assert key_kind(key) is None


def test_secret_named_keys_are_masked_at_any_depth() -> None:
    arguments = {
        "origin": "SFO",
        "api_key": "FAKEapikey123",
        "max_tokens": 512,
        "auth": {"user": "ann", "password": "FakePw"},
        "headers": [{"X-Api-Key": "FAKEkey"}, {"Accept": "application/json"}],
        "pin": 1234,
        "password": 123456,
    }
    assert redact(arguments) == {
        "origin": "SFO",
        "api_key": "[REDACTED:api_key]",
        "max_tokens": 512,
        "auth": "[REDACTED:authorization]",
        "headers": [{"X-Api-Key": "[REDACTED:api_key]"}, {"Accept": "application/json"}],
        "pin": 1234,
        "password": "[REDACTED:password]",
    }


def test_a_secret_named_key_without_a_value_keeps_it() -> None:
    """Null, a flag and empty values hold no secret; masking them would only hide facts."""
    arguments: dict[str, Any] = {
        "token": None,
        "auth": False,
        "password": "",
        "secret": {},
        "cookies": [],
    }
    assert redact(arguments) is arguments


def test_manifest_paths_mask_nested_keys_in_every_list_element() -> None:
    arguments: dict[str, Any] = {
        "passengers": [{"name": "Ann", "passport": "X1"}, {"name": "Bo", "passport": "X2"}],
        "card": {"number": "4111 1111 1111 1111", "holder": "Ann"},
    }
    redacted = redact(arguments, ["passengers.passport", "card.number", "card.missing.x"])
    assert redacted == {
        "passengers": [{"name": "Ann", "passport": MANIFEST}, {"name": "Bo", "passport": MANIFEST}],
        "card": {"number": MANIFEST, "holder": "Ann"},
    }
    assert arguments["passengers"][0]["passport"] == "X1", "the input is never changed"


def test_a_manifest_path_decides_the_kind_of_a_secret_named_key() -> None:
    assert redact({"api_key": "FAKE"}, ["api_key"]) == {"api_key": MANIFEST}


def test_clean_arguments_come_back_as_the_same_object() -> None:
    arguments = {"origin": "SFO", "passengers": [{"name": "Ann"}], "max_tokens": 512}
    assert redact(arguments, ["passengers.passport", "nothing.here"]) is arguments


def test_masked_values_are_copied_only_along_the_way_to_them() -> None:
    untouched = {"name": "Ann"}
    arguments = {"a": untouched, "b": {"token": "FAKEtoken123"}}
    redacted = redact(arguments)
    assert redacted["a"] is untouched
    assert redacted["b"] == {"token": "[REDACTED:token]"}


def test_a_secret_in_a_key_is_masked_too() -> None:
    value = {"ghp_FAKEfakeFAKEfakeFAKEfakeFAKEfake1234": "repo"}
    assert redact_json(value) == {"[REDACTED:github_token]": "[REDACTED:token]"}


def report(**error: Any) -> FailureReport:
    return FailureReport(
        turn_id="turn-1",
        call_id="call_abc123",
        tool="flight_search",
        attempt=1,
        error=ToolFailure(**error),
        arguments={"origin": "SFO", "destination": "JFK", "date": "2025-03-01"},
    )


def test_a_clean_report_comes_back_as_the_same_object() -> None:
    clean = report(
        exception_type="TimeoutError",
        message="upstream timed out after 30s (GET /flights)",
        partial_result={"flights": [{"id": "UA123", "price": 320}]},
    )
    assert redact_report(clean, ["passenger.passport"]) is clean


def test_a_report_is_masked_in_every_part_that_is_stored() -> None:
    dirty = FailureReport(
        turn_id="turn-1",
        call_id="call_abc123",
        tool="flight_search",
        attempt=2,
        error=ToolFailure(
            exception_type="AuthError sk_live_FAKEfakeFAKEfake12345678",
            message="401 for Bearer fAk3T0kenValue_123 at postgres://app:FakePw@db/x",
            partial_result={"rows": [{"note": "api_key=FAKEapikey123"}], "count": 1},
        ),
        arguments={"origin": "SFO", "apiKey": "FAKEapikey456", "passenger": {"passport": "X1"}},
    )
    redacted = redact_report(dirty, ["passenger.passport"])
    assert redacted.arguments == {
        "origin": "SFO",
        "apiKey": "[REDACTED:api_key]",
        "passenger": {"passport": MANIFEST},
    }
    assert redacted.error.exception_type == "AuthError [REDACTED:stripe_key]"
    assert redacted.error.message == (
        "401 for Bearer [REDACTED:bearer_token] at postgres://app:[REDACTED:password]@db/x"
    )
    assert redacted.error.partial_result == {
        "rows": [{"note": "api_key=[REDACTED:api_key]"}],
        "count": 1,
    }
    assert (redacted.turn_id, redacted.call_id, redacted.attempt) == ("turn-1", "call_abc123", 2)


def test_redacting_a_report_is_deterministic() -> None:
    """The daemon compares a repeated report, redacted again, with the stored one."""

    def build() -> FailureReport:
        return report(message="token=FAKEtoken123 kJ8sd7F6gH5jK4lP3oI2uY1tR0eWqAzXcVbN")

    first = redact_report(build())
    assert first == redact_report(build()) == redact_report(first)
    assert redact_report(first) is first


# --- Properties -------------------------------------------------------------------------

SAFE_KEYS = st.sampled_from(
    ["origin", "date", "max_tokens", "author", "session_count", "page_token", "name", "id"]
)
SAFE_TEXT = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789 ,.-/", max_size=60)
CLEAN_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | SAFE_TEXT,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(SAFE_KEYS, children),
    max_leaves=20,
)
FRAGMENTS = st.sampled_from(
    [leak.shown for leak in LEAKS]
    + ["password", "=", ": ", "@", "://", "Bearer ", '"', "'", "\\", "[REDACTED:token]", " "]
)
DIRTY_TEXT = st.lists(FRAGMENTS | st.text(max_size=12), max_size=8).map("".join)
ANY_KEYS = SAFE_KEYS | st.sampled_from(["password", "token", "X-Api-Key", "auth"]) | DIRTY_TEXT
ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | DIRTY_TEXT,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(ANY_KEYS, children),
    max_leaves=20,
)


@given(CLEAN_JSON)
def test_a_clean_value_never_grows_nor_changes(value: Any) -> None:
    assert redact_json(value) is value


@settings(max_examples=300)
@given(ANY_JSON)
def test_redacting_twice_is_redacting_once(value: Any) -> None:
    once = redact_json(value)
    assert redact_json(once) == once


@settings(max_examples=300)
@given(DIRTY_TEXT)
def test_redacted_text_is_left_alone_the_second_time(text: str) -> None:
    once = redact_text(text)
    assert redact_text(once) is once


# --- Bounded work -----------------------------------------------------------------------

ADVERSARIAL = {
    "one long run": "a" * 16384,
    "mixed run": "A1b/" * 4096,
    "unclosed quotes": 'key:"' + "key:'" * 3276,
    "keys without values": 'password: "' * 1489,
    "headers without footers": "-----BEGIN RSA PRIVATE KEY-----" * 528,
    "scheme without host": "x://:" + "a" * 16384,
    "schemes": "a://b:c" * 2340,
    "bearer without token": "Bearer " * 2340,
    "token prefixes": "ghp_sk-eyJ." * 1489,
    "escapes": 'password="' + "\\a" * 8192,
    "hexadecimal": "".join(f"{n:x}" for n in range(4000)),
    "lowercase sk- runs": ("sk-" + "a" * 20) * 712,
    "tokens inside words": ("axoxb-" + "a" * 20) * 630,
    "keys that name no secret": "max_tokens=" * 1489,
    "keys and colons": "token_count: " * 1260,
}
HUGE = 16  # times 16 KiB: the largest JSON the daemon takes, in one string


@pytest.mark.parametrize("text", ADVERSARIAL.values(), ids=list(ADVERSARIAL))
def test_no_16_kib_text_takes_long(text: str) -> None:
    began = time.perf_counter()
    redact_text(text)
    assert time.perf_counter() - began < 0.5  # linear: a few ms on a loaded laptop


@pytest.mark.parametrize("text", ADVERSARIAL.values(), ids=list(ADVERSARIAL))
def test_no_256_kib_text_takes_long(text: str) -> None:
    began = time.perf_counter()
    redact_text(text * HUGE)
    assert time.perf_counter() - began < 4.0  # linear: well under 100 ms


def test_a_random_string_looks_random_and_words_do_not() -> None:
    assert looks_random("kJ8sd7F6gH5jK4lP3oI2uY1tR0eWqAzXcVbN")
    assert not looks_random("AbstractSingletonProxyFactoryBean2024")
    assert not looks_random("9fceb02d0ae598e95dc970b74767f19372d61af8")
