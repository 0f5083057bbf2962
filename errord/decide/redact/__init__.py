"""Secrets are masked before a report is decided on, stored, logged or answered.

Three things mask a value, each with a marker that says why, ``[REDACTED:<kind>]``:

- its key's name (``api_key``, ``X-Auth-Token``, ``password``): the whole value;
- a manifest's dotted ``redact`` path: the whole value, kind ``manifest``;
- a credential in any string (a token, a key, a JWT, a password in a URL or in
  ``key=value`` text, a PEM block, a long random string): only the credential, so
  ``postgres://app:[REDACTED:password]@db/flights`` stays readable.

Redaction is deterministic and idempotent, and gives back the very object it was given
when nothing is masked, so that a clean report allocates nothing.

This package is the way in, one concept a module: ``kinds`` (the key names that name a
secret, and the marker of each kind), ``finders`` (three ways to find a credential in
text: by format, by label, by randomness), ``text`` (masking what they find) and
``values`` (JSON values, a manifest's paths, whole reports).
"""

from __future__ import annotations

from errord.decide.redact.finders import looks_random
from errord.decide.redact.kinds import MANIFEST, MARKER_PREFIX, is_secret_key, key_kind, marker
from errord.decide.redact.text import redact_text
from errord.decide.redact.values import redact, redact_json, redact_report

__all__ = [
    "MANIFEST",
    "MARKER_PREFIX",
    "is_secret_key",
    "key_kind",
    "looks_random",
    "marker",
    "redact",
    "redact_json",
    "redact_report",
    "redact_text",
]
