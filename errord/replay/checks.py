"""Argument checks remembered through a replay: a tool's arguments are checked against
its JSON Schema once however often the trace reports them.

A trace repeats arguments (a call retried as it was, a model making the same mistake
again), and checking them is a good part of a decision's cost. A replay decides with
``remembering(manifests)``: the same manifests, whose validators remember the violations
of the arguments they checked (by their JSON, up to REMEMBERED a tool, then they start
over). The daemon's validators remember nothing: live calls rarely repeat one another.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec
from jsonschema.protocols import Validator

from errord.decide.arguments.validators import CallValidator, Validators, Violation
from errord.decide.manifest.snapshot import ManifestSnapshot

REMEMBERED = 4_096
"""Argument sets a tool's validator remembers the violations of."""

_encode = msgspec.json.Encoder().encode


class RememberingValidator(CallValidator):
    """A tool's validator that checks the same arguments once."""

    __slots__ = ("_checked",)

    def __init__(
        self, schema: Mapping[str, Any], validator: Validator, redact: frozenset[str] = frozenset()
    ) -> None:
        super().__init__(schema, validator, redact)
        self._checked: dict[bytes, tuple[Violation, ...]] = {}

    def validate(self, arguments: Mapping[str, Any]) -> tuple[Violation, ...]:
        """Every violation of ``arguments``, as CallValidator.validate finds them."""
        key = _encode(arguments)
        violations = self._checked.get(key)
        if violations is None:
            if len(self._checked) >= REMEMBERED:
                self._checked.clear()
            violations = self._checked[key] = super().validate(arguments)
        return violations


def remembering(manifests: ManifestSnapshot) -> ManifestSnapshot:
    """``manifests``, with validators that remember what they checked."""
    snapshot = copy.copy(manifests)
    snapshot.validators = Validators(dict(_compiled(manifests)), manifests.validators.invalid)
    return snapshot


def _compiled(manifests: ManifestSnapshot) -> Iterable[tuple[str, CallValidator]]:
    for manifest in manifests:
        if manifest.parameters is not None and manifests.validators.for_tool(manifest.name):
            yield manifest.name, RememberingValidator.compile(manifest.parameters, manifest.redact)
