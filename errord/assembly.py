"""A daemon's assembly: the engine it decides with and the manifests it decides on, from
its settings.

``errord serve`` (errord.app) and each of its manifest reloads, and the what-if replay
(``errord replay``, ReplayManifests: errord.replay) build them here and nowhere else, so
that a trace is replayed with what the daemon of the same settings runs: the policy of
its retry budget, model corrections and memory's threshold (its jitter seeded by each
decision's id, so that a replay re-decides alike), the turn deadline, the message
format, and the manifests read with its breaker and retry defaults under its manifests
root (errord.manifests.root).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from errord.config import Settings
from errord.decide.engine import Engine
from errord.decide.manifest.snapshot import ManifestSnapshot
from errord.decide.policy import default_policy
from errord.manifests.files import load_manifest_dir
from errord.manifests.root import ManifestRoot


@dataclass(frozen=True)
class Assembly:
    """What a daemon of some settings decides with."""

    engine: Engine
    manifests: ManifestSnapshot
    """The manifests of the directory assembled (none: every tool on the defaults)."""


def assemble(settings: Settings, manifests: Path | None = None) -> Assembly:
    """The engine and manifests of a daemon of ``settings``: with the manifests of its
    directory, or of ``manifests`` (a replay trying others). Raises ManifestError listing
    every problem (file:line)."""
    directory = settings.manifests if manifests is None else manifests
    return Assembly(engine_for(settings), load_manifests(settings, directory))


def engine_for(settings: Settings) -> Engine:
    """The engine a daemon of ``settings`` decides with."""
    return Engine(
        default_policy(
            None,  # jitter seeded by each decision's id: replays re-decide alike
            settings.retry_budget(),
            settings.model_corrections,
            settings.memory_min_episodes,
        ),
        turn_deadline=settings.turn_deadline_seconds,
        message_format=settings.message_format,
    )


def load_manifests(settings: Settings, directory: Path | None) -> ManifestSnapshot:
    """The manifests of ``directory`` (None: none, every tool on the defaults) with the
    breaker and retry defaults of ``settings``, read under the root a daemon of
    ``settings`` reads under, else under the directory's real parent. Raises
    ManifestError listing every problem (file:line)."""
    defaults = settings.tool_defaults()
    if directory is None:
        return ManifestSnapshot(defaults=defaults)
    root = ManifestRoot.configured(settings.manifests, settings.manifests_root)
    return load_manifest_dir(directory, defaults, root)
