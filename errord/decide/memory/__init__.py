"""Episodic memory: what worked before for a tool's error, so that a decision can follow
it (errord.state.memory keeps it, folded from the trace's episodes).

Two failures are the same error when they have the same signature (``signatures``: the
normalized code and a fingerprint of the message). Per tool, scope and error, memory
counts how each recovery turned out (``recoveries``: decayed tallies of bursts, and
``recall``, what they say at a moment); errors that retries never fix are suggested as
manifest overrides (``overrides``).
"""

from errord.decide.memory.overrides import OverrideCandidate, override_candidates
from errord.decide.memory.recoveries import (
    BURST_GAP,
    FAILED,
    HALF_LIFE,
    OPENED,
    SUCCEEDED,
    Evidence,
    MemoryStats,
    SharedStats,
    Tally,
    recall,
    recovery,
)
from errord.decide.memory.signatures import CACHED_MESSAGES, Signature, fingerprint, signature
from errord.decide.model import MemoryKey

__all__ = [
    "BURST_GAP",
    "CACHED_MESSAGES",
    "FAILED",
    "HALF_LIFE",
    "OPENED",
    "SUCCEEDED",
    "Evidence",
    "MemoryKey",
    "MemoryStats",
    "OverrideCandidate",
    "SharedStats",
    "Signature",
    "Tally",
    "fingerprint",
    "override_candidates",
    "recall",
    "recovery",
    "signature",
]
