"""Replay's validators remember the violations of the arguments they checked: the same
violations as the manifests' own validators, each argument set checked once."""

from __future__ import annotations

from typing import Any

import pytest

from errord.decide.arguments.validators import CallValidator
from errord.decide.manifest import ToolManifest
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.replay import checks
from errord.replay.checks import RememberingValidator, remembering

SCHEMA = {
    "type": "object",
    "required": ["amount"],
    "properties": {"amount": {"type": "number"}, "note": {"type": "string", "minLength": 1}},
    "additionalProperties": False,
}
ARGUMENTS: list[dict[str, Any]] = [
    {"amount": 10},
    {"amount": "ten"},
    {"amount": 1.0, "note": ""},
    {"note": "x"},
    {"amount": True, "extra": 1},
    {},
]


@pytest.mark.parametrize("arguments", ARGUMENTS)
def test_a_remembering_validator_finds_the_violations_the_validator_finds(
    arguments: dict[str, Any],
) -> None:
    remembered = RememberingValidator.compile(SCHEMA)
    first, again = remembered.validate(arguments), remembered.validate(arguments)
    assert first == again == CallValidator.compile(SCHEMA).validate(arguments)


def test_arguments_reported_again_are_not_checked_again() -> None:
    """The violations of the same arguments are the very tuple found the first time; other
    arguments are checked on their own."""
    remembered = RememberingValidator.compile(SCHEMA)
    first = remembered.validate({"amount": "ten"})
    assert remembered.validate({"amount": "ten"}) is first
    other = remembered.validate({"note": "x"})
    assert other is not first
    assert other != first


def test_a_validator_full_of_arguments_starts_over(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checks, "REMEMBERED", 2)
    remembered = RememberingValidator.compile(SCHEMA)
    first = remembered.validate({"amount": "ten"})
    remembered.validate({"amount": "eleven"})
    remembered.validate({"amount": "twelve"})
    assert remembered.validate({"amount": "ten"}) is not first
    assert remembered.validate({"amount": "ten"}) == first


def test_remembering_keeps_the_manifests_and_their_unusable_schemas() -> None:
    snapshot = ManifestSnapshot(
        [
            ToolManifest(name="pay", parameters=SCHEMA, redact=("note",)),
            ToolManifest(name="bad", parameters={"type": 12}),
            ToolManifest(name="free"),
        ]
    )

    replayed = remembering(snapshot)

    assert list(replayed) == list(snapshot)
    assert replayed.manifest_for("pay") == snapshot.manifest_for("pay")
    assert isinstance(replayed.validators.for_tool("pay"), RememberingValidator)
    assert replayed.validators.for_tool("bad") is replayed.validators.for_tool("free") is None
    assert replayed.validators.invalid == snapshot.validators.invalid != {}
    assert snapshot.validators.for_tool("pay").__class__ is CallValidator
