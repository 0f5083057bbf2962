"""Argument validation: a tool call's arguments checked against the tool's JSON Schema,
and example calls built from it.

``validators`` puts the parts together: a ``CallValidator`` per schema, compiled once,
and a snapshot's ``Validators``. ``schemas`` bounds a schema and checks it against its
draft's metaschema, ``keywords`` holds errord's changes to jsonschema's keywords,
``regexes`` runs every pattern by RE2 in linear time (a manifest's classification rules'
too), ``formats`` the formats errord asserts, ``flatten`` a schema with its ``$ref`` and
``allOf`` merged. ``violations`` words what is wrong so that a model can act on it
(``display``: how a message shows paths, values and types; ``redacted``: what redaction
hid), and ``examples`` builds an example call (``patterns``: strings a ``pattern``
matches).
"""

from errord.decide.arguments.regexes import LinearPattern, compile_linear, unsupported_pattern
from errord.decide.arguments.schemas import MAX_SCHEMA_DEPTH, MAX_SCHEMA_VALUES
from errord.decide.arguments.validators import (
    CallValidator,
    Validators,
    example_arguments,
    required_parameters,
)
from errord.decide.arguments.violations import Violation, ViolationKind

__all__ = [
    "MAX_SCHEMA_DEPTH",
    "MAX_SCHEMA_VALUES",
    "CallValidator",
    "LinearPattern",
    "Validators",
    "Violation",
    "ViolationKind",
    "compile_linear",
    "example_arguments",
    "required_parameters",
    "unsupported_pattern",
]
