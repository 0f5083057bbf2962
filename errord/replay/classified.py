"""Errors classified once through a replay: the same error of the same tool is classified
and signed the first time it is met, and read back after.

A trace repeats its errors (the same timeout, the same 503, attempt after attempt), and
a tool's classification rules do not change within a replay. ``Classified.reads`` gives
the engine what deciding on a report reads (errord.decide.engine.views.Reads) with the error's
classification and signature filled in when the replay met that error before, by its
JSON, up to REMEMBERED errors (then it starts over).
"""

from __future__ import annotations

import msgspec

from errord.decide.engine.views import Reads
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.memory.signatures import Signature
from errord.decide.model import Classification, FailureReport

REMEMBERED = 10_000
"""Errors remembered with their classification and signature."""

_encode = msgspec.json.Encoder().encode


class Classified:
    """The errors a replay with ``manifests`` met, classified and signed."""

    def __init__(self, manifests: ManifestSnapshot) -> None:
        self._manifests = manifests
        self._known: dict[tuple[str, bytes], tuple[Classification, Signature]] = {}

    def reads(self, report: FailureReport) -> Reads:
        """What deciding on ``report`` with the manifests reads, its error classified."""
        key = (report.tool, _encode(report.error))
        known = self._known.get(key)
        reads = Reads(report, self._manifests, known)
        if known is None:
            if len(self._known) >= REMEMBERED:
                self._known.clear()
            self._known[key] = reads.classified
        return reads
