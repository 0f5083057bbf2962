"""What-if replay: the recorded trace re-decided with other manifests, and what changed.

An operator about to change a manifest tries it on real history first. The trace has
every failure errord was asked about and every outcome it was told, in order; replay
reads it from a read-only snapshot of the database (errord.replay.snapshot), folds it
through fresh in-memory state with the other manifests (errord.replay.fold): each failure
is decided again at its recorded time with its recorded decision id (the id seeds the
jitter, so that unchanged manifests re-decide every decision alike), each outcome is
folded through the engine, turns and operator actions are applied as recorded, and the
breaker transitions and episodes that reports cause are regenerated, so that a change
that opens a breaker earlier shows its consequences. Each re-decided failure is compared
with the recorded one (errord.replay.compare) into a ``ReplaySummary``. The engine and
the manifests are assembled as the daemon's are (errord.assembly).

Nothing is recorded and nothing here awaits: the daemon runs it in a worker thread.
"""

from errord.replay.compare import Change, Example, ReplayScope, ReplaySummary
from errord.replay.run import Progress, replay_database

__all__ = [
    "Change",
    "Example",
    "Progress",
    "ReplayScope",
    "ReplaySummary",
    "replay_database",
]
