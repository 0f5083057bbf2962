"""What ``errord check`` warns about in a valid set of manifests.

An alternative may name any tool: one without a manifest runs with the default timeout,
retry policy and breaker. That is allowed, but more often a typo or a forgotten file.
"""

from __future__ import annotations

import difflib

from errord.decide.manifest import ToolManifest
from errord.decide.manifest.snapshot import ManifestSnapshot


def alternatives_without_manifest(manifests: ManifestSnapshot) -> list[str]:
    """One warning per alternative that names a tool with no manifest, at the tool listing it."""
    return [
        _warning(manifest, alternative, manifests)
        for manifest in manifests
        for alternative in manifest.alternatives
        if alternative not in manifests
    ]


def _warning(manifest: ToolManifest, alternative: str, manifests: ManifestSnapshot) -> str:
    close = difflib.get_close_matches(alternative, manifests.names, n=1, cutoff=0.8)
    suggestion = f" (did you mean {close[0]!r}?)" if close else ""
    return (
        f"{manifest.source}: {manifest.name}: alternative {alternative!r} has no manifest, "
        f"so it runs with the default timeout, retries and breaker{suggestion}"
    )
