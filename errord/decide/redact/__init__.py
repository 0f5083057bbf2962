"""Secrets are masked before a report is decided on, stored, logged or answered.

Three things mask a value, each with a marker that says why, ``[REDACTED:<kind>]``:

- its key's name (``api_key``, ``X-Auth-Token``, ``password``): the whole value;
- a manifest's dotted ``redact`` path: the whole value, kind ``manifest``;
- a credential in any string (a token, a key, a JWT, a password in a URL or in
  ``key=value`` text, a PEM block, a long random string): only the credential, so
  ``postgres://app:[REDACTED:password]@db/flights`` stays readable.

Redaction is deterministic and idempotent, and gives back the very object it was given
when nothing is masked, so that a clean report allocates nothing.

This module is the way in; the work is done in ``errord.decide.redact``, one concept a
module: ``markers``, ``keys`` (secret key names), ``formats``, ``labelled`` and
``entropy`` (three ways to find a credential in text), ``text`` (masking what they
find), ``json_values``, ``manifest_paths`` and ``reports``.
"""

from __future__ import annotations

from errord.decide.redact.entropy import looks_random
from errord.decide.redact.kinds import is_secret_key, key_kind
from errord.decide.redact.markers import MANIFEST, MARKER_PREFIX, marker
from errord.decide.redact.reports import redact, redact_report
from errord.decide.redact.text import redact_text
from errord.decide.redact.values import redact_json

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
