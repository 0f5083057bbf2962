"""What the tools' manifests say, and the manifests in force: the inputs of every decision.

``records`` holds what one manifest says (a tool's timeouts, retry and breaker policy,
classification rules, alternatives, fallbacks), frozen records validated on
construction whose ``ValueError`` messages name the field; reading them from YAML, with
file and line in every error, is errord/manifests. ``snapshot`` holds them all at once
(``ManifestSnapshot``, swapped whole by a reload), with the defaults for tools without
a manifest and what a decision knows of each tool (``ToolPart``).
"""

from errord.decide.manifest.records import (
    MAX_COOLDOWN,
    MAX_TIMEOUT,
    MAX_WINDOW,
    BreakerPolicy,
    ClassificationRule,
    RetryPolicy,
    ToolManifest,
)
from errord.decide.manifest.snapshot import MADE_LIMIT, ManifestSnapshot, ToolDefaults, ToolPart

__all__ = [
    "MADE_LIMIT",
    "MAX_COOLDOWN",
    "MAX_TIMEOUT",
    "MAX_WINDOW",
    "BreakerPolicy",
    "ClassificationRule",
    "ManifestSnapshot",
    "RetryPolicy",
    "ToolDefaults",
    "ToolManifest",
    "ToolPart",
]
