"""Errors a manifest should classify otherwise: transient by default, never fixed by retrying.

Episodic memory (errord.decide.memory) already stops retrying such an error once it has
enough evidence, but the evidence fades and is per daemon; a manifest rule makes it
permanent for good. A signature is a candidate while retries of it have been told
nearly as often as memory needs to stop them (OVERRIDE_SHARE of ``min_episodes``,
decayed: once memory stops them, the count hovers there) and recovered it none; the
suggestion is a manifest ``classification`` rule matching its message, built from the
fingerprint.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from errord.decide.memory.recoveries import MemoryStats, recall
from errord.decide.model import Action, MemoryKey

OVERRIDE_SHARE = 0.75
"""Of the told retries memory needs to stop retrying, those that make a candidate."""
PLACEHOLDER = re.compile(r"<\w+>")


@dataclass(frozen=True, slots=True)
class OverrideCandidate:
    """One error of a tool that retries never fixed."""

    signature: str
    fingerprint: str
    retried: float
    """Retries of it with a known outcome (decayed)."""
    recovered: float

    @property
    def suggested_rule(self) -> str:
        """A manifest ``classification`` entry, in YAML, that makes the error permanent."""
        quoted = message_pattern(self.fingerprint).replace("'", "''")
        return f"- message: '{quoted}'\n  class: permanent"


def message_pattern(fingerprint: str) -> str:
    """A regular expression matching the messages ``fingerprint`` stands for."""
    parts = PLACEHOLDER.split(fingerprint)
    escaped = (re.escape(part).replace("\\ ", " ") for part in parts)  # spaces stay readable
    return "(?i)" + ".+?".join(escaped)


def override_candidates(
    memory: Mapping[MemoryKey, MemoryStats], now: datetime, min_episodes: float
) -> dict[str, list[OverrideCandidate]]:
    """Per tool, its errors that retries never fixed, most retried first."""
    found: dict[str, list[OverrideCandidate]] = {}
    for key, stats in memory.items():
        retry = recall(stats, now).get(Action.RETRY.value)
        enough = OVERRIDE_SHARE * min_episodes
        if retry is None or retry.told < enough or retry.succeeded >= 0.5:
            continue
        candidate = OverrideCandidate(key.signature, stats.fingerprint, retry.told, retry.succeeded)
        found.setdefault(key.tool, []).append(candidate)
    for candidates in found.values():
        candidates.sort(key=lambda candidate: -candidate.retried)
    return found
