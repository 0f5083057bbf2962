"""What decisions read of a tool is built once per manifest snapshot
(ManifestSnapshot.tool_part), and a reload, which replaces the snapshot whole, is decided
by at once; a new decision's id is a random version-4 UUID in hex."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from errord.decide.engine import Engine, new_decision_id
from errord.decide.manifest import RetryPolicy, ToolManifest
from errord.decide.manifest import snapshot as manifest_snapshot
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.model import ErrorCode, FailureReport, ToolFailure
from errord.decide.policy import default_policy

NOW = datetime(2026, 1, 1, tzinfo=UTC)
SCHEMA = {"type": "object", "required": ["city"], "properties": {"city": {"type": "string"}}}


def snapshot(attempts: int, backup_timeout: float) -> ManifestSnapshot:
    return ManifestSnapshot(
        [
            ToolManifest(
                name="weather",
                alternatives=("weather_backup",),
                parameters=SCHEMA,
                retry_policy=RetryPolicy(max_attempts=attempts),
            ),
            ToolManifest(name="weather_backup", timeout=backup_timeout),
        ]
    )


def test_a_tool_part_is_built_once_per_snapshot_from_its_manifests() -> None:
    manifests = snapshot(attempts=3, backup_timeout=7.0)
    part = manifests.tool_part("weather")
    assert manifests.tool_part("weather") is part
    assert part.manifest is manifests.manifest_for("weather")[0]
    assert not part.default_policy
    assert part.known_tools == {"weather", "weather_backup"}
    assert part.alternative_timeouts == {"weather_backup": 7.0}
    assert part.validator is manifests.validators.for_tool("weather")


def test_a_tool_without_a_manifest_gets_the_default_part() -> None:
    part = ManifestSnapshot().tool_part("mystery")
    assert part.default_policy
    assert (part.manifest.name, part.alternative_timeouts, part.validator) == ("mystery", {}, None)


def test_a_reloaded_snapshot_is_decided_by_at_once() -> None:
    """The same engine, handed the snapshot a reload built, reads the new manifests: the
    tool's new attempt limit, and the alternative's new timeout."""
    engine = Engine(default_policy())
    timeout = FailureReport(
        turn_id="t",
        call_id="c",
        tool="weather",
        attempt=1,
        error=ToolFailure(code=ErrorCode.TIMEOUT),
    )
    before = engine.decide(timeout, snapshot(3, 7.0), None, None, NOW).decision
    after = engine.decide(timeout, snapshot(4, 9.0), None, None, NOW).decision
    assert "attempt 2 of 3." in before.reason
    assert "attempt 2 of 4." in after.reason
    exhausted = FailureReport(
        turn_id="t",
        call_id="c",
        tool="weather",
        attempt=4,
        error=ToolFailure(code=ErrorCode.TIMEOUT),
    )
    decision = engine.decide(exhausted, snapshot(4, 9.0), None, None, NOW).decision
    assert (decision.alternative_tool, decision.next_attempt_timeout) == ("weather_backup", 9.0)


def test_the_parts_of_tools_without_a_manifest_are_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Executors may name any number of tools: past the bound, the parts start over."""
    monkeypatch.setattr(manifest_snapshot, "MADE_LIMIT", 3)
    manifests = snapshot(3, 7.0)
    first = manifests.tool_part("unknown_0")
    for number in range(1, 6):
        manifests.tool_part(f"unknown_{number}")
    assert manifests.tool_part("unknown_0") is not first
    assert manifests.tool_part("unknown_0") == first


def test_a_new_decision_id_is_a_random_version_4_uuid_in_hex() -> None:
    ids = {new_decision_id() for _ in range(1_000)}
    assert len(ids) == 1_000
    for each in ids:
        parsed = uuid.UUID(hex=each)
        assert (parsed.hex, parsed.version, parsed.variant) == (each, 4, uuid.RFC_4122)
