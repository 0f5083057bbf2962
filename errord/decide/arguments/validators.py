"""A tool call's arguments checked against the tool's JSON Schema, and example calls built from it.

A ``CallValidator`` compiles one schema once (jsonschema picks the draft from
``$schema``, Draft 2020-12 otherwise) and returns every violation of a call's
arguments at once, in a fixed order, each with its kind, the parameter's path, a
sentence the model can act on and what was expected. ``Validators`` holds one per
tool of a manifest snapshot. ``example_arguments`` builds a call the schema accepts,
for the model to copy (a correction's ``example``).

A schema errord compiles is bounded (schemas.py: 10,000 values, 32 levels), its
regular expressions (``pattern``, ``patternProperties``) are run by RE2 in linear time
(regexes.py) and one RE2 cannot run is refused, and the metaschema's complaint
about an invalid one is chosen the same way in every run (schemas.py). A
snapshot's validators are compiled, and their examples built, when it is loaded (in a
worker thread on a reload), never while answering a request.

What counts as valid:

- JSON Schema's own rules: ``integer`` is an integral number (``1.0`` is one),
  ``true`` is neither an integer nor a number, and parameters the schema does not
  name are allowed unless it says ``additionalProperties: false``.
- A string that is empty or only whitespace is an ``invalid_value`` ("cannot be
  empty") where the schema asks ``minLength`` of 1 or more, and where it is a
  required property typed ``string`` whose schema does not admit it (``minLength:
  0``, a matching ``pattern``, an ``enum`` or ``const`` holding it; keywords.py):
  stricter than JSON Schema, since ``"   "`` is how a model leaves a query empty
  (and a tool then answers "No query provided"). Optional strings and array items may be blank.
- ``format`` is asserted for date, date-time, time, email, idn-email, ipv4, ipv6,
  uri, uuid and regex, by checks of errord's own (the same whichever optional
  packages are installed); any other format is an annotation only.
- ``$ref`` resolves within the schema, and to the JSON Schema metaschemas: nothing
  is fetched, and a schema with a reference that does not resolve is refused.
- A value under a secret-looking key, or under a manifest ``redact`` path, is never
  echoed in a message, nor a credential inside an echoed string (redaction's
  markers stand for them); no message echoes more than 80 characters of a value.
- Arguments arrive redacted: a violation whose offending value is one of redaction's
  markers (``[REDACTED:manifest]``) is dropped, since errord cannot judge the value it
  hides (redacted.py says which); a missing parameter is still missing.

Keywords that apply others (allOf, $ref, if/then/else, dependentSchemas,
propertyNames) report what those others find (propertyNames at the object, with the
key as the value); a keyword without a message of its own (Draft 7's dependencies...)
gives a ``schema_mismatch`` naming it; ``unevaluatedProperties: false`` gives one
``unexpected_parameter`` at the object, naming the keys.

The parts live in ``errord.decide.arguments``, one concept a module.

Examples hold the required properties only (and optional ones only when the schema
asks for more properties than it requires): the model copies an example, and an
optional filter copied verbatim changes what the call does. Keywords an example is
not built from (not, propertyNames, dependentSchemas, unevaluated*) still hold:
every candidate value is checked against its schema, and the first accepted wins.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final

import referencing.exceptions
from jsonschema import Draft202012Validator, ValidationError
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for

from errord.decide.arguments import redacted, violations
from errord.decide.arguments.display import PathPart, clip, path_key
from errord.decide.arguments.examples import Examples
from errord.decide.arguments.flatten import Where, flatten
from errord.decide.arguments.formats import FORMATS
from errord.decide.arguments.keywords import extended
from errord.decide.arguments.regexes import unsupported_pattern
from errord.decide.arguments.schemas import (
    LOCAL_ONLY,
    metaschema_problem,
    oversized,
    root_resolver,
    unresolved_reference,
)
from errord.decide.arguments.violations import KIND_RANK, Violation, ViolationKind

__all__ = [
    "CallValidator",
    "Validators",
    "Violation",
    "ViolationKind",
    "example_arguments",
    "required_parameters",
]

UNRESOLVABLE: Final = Violation(
    ViolationKind.SCHEMA_MISMATCH,
    "",
    "The tool's schema has a reference that does not resolve, so the call cannot be checked.",
    "a usable schema",
)
"""The one violation of a call whose schema turns out unusable while checking it."""


class CallValidator:
    """One tool's argument schema, compiled once; ``validate`` returns every violation."""

    __slots__ = ("_example", "_redact", "_validator", "schema")

    def __init__(
        self, schema: Mapping[str, Any], validator: Validator, redact: frozenset[str] = frozenset()
    ) -> None:
        self.schema = schema
        """The schema compiled."""
        self._validator = validator
        self._redact = redact
        self._example: dict[str, Any] | None = None

    @classmethod
    def compile(cls, schema: Mapping[str, Any], redact: Iterable[str] = ()) -> CallValidator:
        """Raises ``ValueError`` saying why when ``schema`` is not a JSON Schema errord can use.

        ``redact`` lists dotted argument paths (a manifest's ``redact``) whose values
        messages never echo.
        """
        schema = dict(schema)
        too_large = oversized(schema)
        if too_large is not None:
            raise ValueError(f"JSON Schema too large: {too_large}")
        base = validator_for(schema, default=Draft202012Validator)
        refused = metaschema_problem(schema, base)
        if refused is not None:
            where = ".".join(str(part) for part in refused[0])
            raise ValueError(f"invalid JSON Schema{f' at {where}' if where else ''}: {refused[1]}")
        unresolved = unresolved_reference(schema, root_resolver(schema))
        if unresolved is not None:
            raise ValueError(
                f"JSON Schema reference {clip(unresolved)!r} does not resolve;"
                " errord fetches no schemas"
            )
        unrunnable = unsupported_pattern(schema)
        if unrunnable is not None:
            raise ValueError(f"JSON Schema {unrunnable[1]}")
        validator = extended(base)(schema, registry=LOCAL_ONLY, format_checker=FORMATS)
        return cls(schema, validator, frozenset(redact))

    def validate(self, arguments: Mapping[str, Any]) -> tuple[Violation, ...]:
        """Every violation of ``arguments``, sorted by parameter path, then kind; none
        that only a redaction marker standing for a value caused."""
        instance = arguments if isinstance(arguments, dict) else dict(arguments)
        found: dict[Violation, tuple[Any, ...]] = {}
        try:
            for error in self._validator.iter_errors(instance):
                for parts, violation in self._violations(error):
                    found.setdefault(
                        violation, (path_key(parts), KIND_RANK[violation.kind], violation.message)
                    )
        except referencing.exceptions.Unresolvable:  # compile checked every $ref; a dynamic one
            found[UNRESOLVABLE] = ((), 0, "")
        return tuple(sorted(found, key=found.__getitem__))

    def example(self) -> dict[str, Any]:
        """An example call the schema accepts, built once (see ``example_arguments``)."""
        if self._example is None:
            self._example = Examples(self._validator).arguments()
        return dict(self._example)

    def _violations(
        self, error: ValidationError
    ) -> Iterator[tuple[tuple[PathPart, ...], Violation]]:
        parts = tuple(error.absolute_path)
        if redacted.hides(error) or redacted.hidden_name(parts):
            return
        if error.validator in ("required", "dependentRequired") and parts:
            yield parts, violations.missing(error, parts)
        elif error.validator == "additionalProperties" and error.validator_value is False:
            for path, violation in violations.unexpected(error, parts):
                if not redacted.hidden_name(path):
                    yield path, violation
        else:
            failure = violations.Failure(error, parts, redacted.mask(parts, self._redact))
            yield parts, violations.violation(failure)


class Validators:
    """The compiled argument schemas of a snapshot's tools, each compiled once."""

    def __init__(self, validators: Mapping[str, CallValidator], invalid: Mapping[str, str]) -> None:
        self._validators = dict(validators)
        self.invalid: Mapping[str, str] = dict(invalid)
        """Tools whose schema could not be compiled, with why; their calls go unchecked."""

    @classmethod
    def from_schemas(
        cls,
        schemas: Mapping[str, Mapping[str, Any] | None],
        redact: Mapping[str, Iterable[str]] | None = None,
    ) -> Validators:
        """From tool name -> parameter schema (None: no schema, no validation). Each
        schema is compiled and its example built here, once."""
        validators: dict[str, CallValidator] = {}
        invalid: dict[str, str] = {}
        for tool, schema in schemas.items():
            if schema is None:
                continue
            try:
                validator = CallValidator.compile(schema, (redact or {}).get(tool, ()))
            except ValueError as exc:
                invalid[tool] = str(exc)
            else:
                validator.example()  # built now, where a reload runs: off the event loop
                validators[tool] = validator
        return cls(validators, invalid)

    def for_tool(self, name: str) -> CallValidator | None:
        """The tool's validator; None when it has no schema, or an invalid one."""
        return self._validators.get(name)


def required_parameters(schema: Mapping[str, Any] | None) -> list[str]:
    """The names the schema requires at the top level, through ``$ref`` and ``allOf``."""
    if not schema:
        return []
    flat, _ = flatten(schema, Where(root_resolver(schema)))
    return [name for name in flat.get("required", []) if isinstance(name, str)]


def example_arguments(schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """An example call the schema accepts; ``{}`` when none can be built within bounds,
    or the schema is invalid.

    Each value is the first the schema accepts of: its ``examples``, ``default``,
    ``const``, ``enum``; then one built from its type and constraints (bounds,
    lengths, ``multipleOf``, ``pattern``, ``format``), through ``$ref`` (up to
    MAX_DEPTH), ``allOf`` (merged), ``anyOf``/``oneOf`` (the first branch that
    yields a valid value; one that would re-enter a reference last, so recursive
    schemas end early) and type lists (null last). Objects hold their required
    properties; arrays one item, or ``minItems``.
    """
    try:
        return CallValidator.compile(schema).example() if schema else {}
    except ValueError:  # an invalid schema: Validators reports it, a message just goes without
        return {}
