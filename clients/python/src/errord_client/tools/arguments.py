"""A call's arguments checked against its tool's JSON Schema, and taken as frameworks take them.

A model's call is a JSON object. ``accept_arguments`` checks it against the tool's schema
the way agent frameworks do before a tool runs, without the jsonschema package: the
required properties, and the JSON type, ``enum`` and ``const`` of each top-level property
(values nested deeper are the tool's own business). Where the frameworks are lenient, so
is it:

- an integer-valued number is an integer, as JSON Schema says: ``2.0`` for an integer
  parameter is accepted, and the tool gets ``2``;
- an argument the schema does not take (``additionalProperties`` false) is ignored: the
  tool is called without it, and ``Accepted.ignored`` names it.

What remains refused raises ``InvalidArguments``, whose problems name each property and
whose message names the first: ``Invalid parameters: missing 'origin'``. When a call is
refused, the arguments it would have ignored are listed after the problems
(``unexpected 'ticker'``), beside the missing one they were perhaps meant to be.

A tool whose framework validates its arguments itself (a LangChain tool's pydantic model)
reports that validator's refusal with ``InvalidArguments.from_validation_error``.
"""

from __future__ import annotations

import typing
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final, NamedTuple

MAX_PARAMETER_LENGTH: Final = 512
"""Characters of a parameter's name kept in ``InvalidArguments.parameter``."""

_ARTICLES: Final = {
    "integer": "an integer",
    "array": "an array",
    "object": "an object",
    "null": "null",
}

_VALIDATOR_PHRASES: Final = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "string_type": "a string",
    "bool_type": "a boolean",
    "bool_parsing": "a boolean",
    "list_type": "an array",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
}
"""A pydantic error's type -> what the value must be, in this module's words."""

_ABSENT: Final[Any] = object()
"""A property the schema does not declare."""


class InvalidArguments(ValueError):
    """A call's arguments do not match its tool's schema; ``problems`` lists every mismatch
    and the message names the first, e.g. ``Invalid parameters: missing 'origin'``."""

    def __init__(self, problems: Sequence[str], *, parameter: str = "") -> None:
        if not problems:
            raise ValueError("InvalidArguments needs at least one problem")
        self.problems: tuple[str, ...] = tuple(problems)
        self.parameter = _printable(parameter)[:MAX_PARAMETER_LENGTH]
        """The parameter the first problem is about; "" when it is about none (arguments
        that are not an object)."""
        ValueError.__init__(self, f"Invalid parameters: {self.problems[0]}")

    @classmethod
    def from_validation_error(cls, error: Exception) -> InvalidArguments:
        """A framework validator's refusal (pydantic's ``ValidationError``, read through
        its ``errors()``) in this module's words: ``missing 'city'``, ``'nights' must be
        an integer``, else ``'limit': <pydantic's message>``. The parameter is the first
        error's argument (the first name of its ``loc``)."""
        problems: list[str] = []
        parameter = ""
        for each in _validation_errors(error):
            location = [part for part in each.get("loc") or () if isinstance(part, str | int)]
            if not parameter and location and isinstance(location[0], str):
                parameter = location[0]
            problems.append(_validation_problem(_path(location), each))
        return cls(problems or [str(error) or type(error).__name__], parameter=parameter)


class Accepted(NamedTuple):
    """A call's arguments as its tool is called with them (a tuple: the executor makes
    one for every call it runs)."""

    arguments: Mapping[str, Any]
    """The arguments the tool gets: the call's own, or a copy with integer-valued numbers
    made integers and ignored arguments left out."""
    ignored: tuple[str, ...] = ()
    """The call's arguments the schema does not take, left out, in call order."""


def accept_arguments(schema: Mapping[str, Any], arguments: object) -> Accepted:
    """``arguments`` as a tool of ``schema`` takes them (the module's docstring); raises
    InvalidArguments listing every problem: missing required properties first, in the
    schema's order, then each argument in call order, then the arguments ignored."""
    if not isinstance(arguments, Mapping):
        raise InvalidArguments([f"arguments must be an object, not {json_type(arguments)}"])
    problems = [(name, f"missing '{name}'") for name in _missing(schema, arguments)]
    if not arguments:  # nothing to look at: most calls of tools without parameters
        return _accepted(problems, (), arguments)
    properties: Mapping[str, Any] = schema.get("properties") or {}
    closed = schema.get("additionalProperties") is False
    ignored: list[str] = []
    integers: dict[str, int] = {}
    for name, value in arguments.items():
        declared = properties.get(name, _ABSENT)
        if declared is _ABSENT:
            if closed:
                ignored.append(name)
        elif not _satisfies(declared, value):
            problems.append((name, f"'{name}' must be {_describe(declared)}"))
        elif isinstance(value, float) and _integers_only(declared):
            integers[name] = int(value)
    if not problems and (ignored or integers):
        taken = {name: value for name, value in arguments.items() if name not in ignored}
        arguments = taken | integers
    return _accepted(problems, tuple(ignored), arguments)


def _accepted(
    problems: list[tuple[str, str]], ignored: tuple[str, ...], arguments: Mapping[str, Any]
) -> Accepted:
    """The arguments taken, or InvalidArguments for the problems (the ignored after them)."""
    if problems:
        phrases = [phrase for _, phrase in problems] + [f"unexpected '{n}'" for n in ignored]
        raise InvalidArguments(phrases, parameter=problems[0][0])
    return Accepted(arguments, ignored)


def check_arguments(schema: Mapping[str, Any], arguments: object) -> None:
    """Raise InvalidArguments unless ``accept_arguments`` takes ``arguments``."""
    accept_arguments(schema, arguments)


def argument_problems(schema: Mapping[str, Any], arguments: object) -> Iterator[str]:
    """Each way ``arguments`` misses ``schema``, as a short phrase naming the property
    (InvalidArguments' problems; nothing when the arguments are taken)."""
    try:
        accept_arguments(schema, arguments)
    except InvalidArguments as refused:
        yield from refused.problems


def _missing(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> list[str]:
    required = schema.get("required")
    return [name for name in required if name not in arguments] if required else []


def _satisfies(schema: object, value: object) -> bool:
    """Whether ``value`` has the JSON type and value ``schema`` asks for (not looking inside
    arrays and objects)."""
    if isinstance(schema, bool):
        return schema
    if not isinstance(schema, Mapping):
        return True
    if "type" in schema and not _json_types(value).intersection(_types(schema["type"])):
        return False
    if "enum" in schema and not any(_same_json(value, option) for option in schema["enum"]):
        return False
    if "const" in schema and not _same_json(value, schema["const"]):
        return False
    alternatives = schema.get("anyOf") or schema.get("oneOf")
    return not alternatives or any(_satisfies(option, value) for option in alternatives)


def _integers_only(schema: object) -> bool:
    """Whether ``schema`` takes integers and no other numbers, in its ``type`` or in its
    alternatives': an integer-valued float given for it is to be an int."""
    if not isinstance(schema, Mapping):
        return False
    kinds = set(_types(schema["type"])) if "type" in schema else set()
    for option in schema.get("anyOf") or schema.get("oneOf") or ():
        if isinstance(option, Mapping) and "type" in option:
            kinds.update(_types(option["type"]))
    return "integer" in kinds and "number" not in kinds


def _describe(schema: object) -> str:
    """What a schema asks for, as the end of "'x' must be ...": an integer, one of 'a', 'b'."""
    if not isinstance(schema, Mapping):
        return "valid"
    if "enum" in schema:
        return "one of " + ", ".join(_show(option) for option in schema["enum"])
    if "const" in schema:
        return _show(schema["const"])
    if "type" in schema:
        return " or ".join(_ARTICLES.get(kind, f"a {kind}") for kind in _types(schema["type"]))
    alternatives = schema.get("anyOf") or schema.get("oneOf")
    if alternatives:
        return " or ".join(_describe(option) for option in alternatives)
    return "valid"


def _types(declared: object) -> list[str]:
    """A schema's ``type``, a name or a list of names, as a list."""
    return [declared] if isinstance(declared, str) else list(typing.cast(Sequence[str], declared))


def _json_types(value: object) -> set[str]:
    """The JSON Schema types ``value`` belongs to: an int is an integer and a number, a
    float too when its value is whole (JSON Schema counts 2.0 as an integer), a bool is
    neither."""
    if value is None:
        return {"null"}
    if isinstance(value, bool):
        return {"boolean"}
    if isinstance(value, int):
        return {"integer", "number"}
    if isinstance(value, float):
        return {"integer", "number"} if value.is_integer() else {"number"}
    if isinstance(value, str):
        return {"string"}
    if isinstance(value, Mapping):
        return {"object"}
    if isinstance(value, list | tuple):
        return {"array"}
    return set()


def json_type(value: object) -> str:
    """The JSON type of ``value`` as a phrase, for messages: an integer, null, a list."""
    kinds = _json_types(value)
    if not kinds:
        return f"a {type(value).__name__}"
    kind = "integer" if "integer" in kinds else kinds.pop()
    return _ARTICLES.get(kind, f"a {kind}")


def _same_json(value: object, option: object) -> bool:
    """Equal as JSON values: True is not 1 (Python's True == 1 is)."""
    if isinstance(value, bool) or isinstance(option, bool):
        return isinstance(value, bool) and isinstance(option, bool) and value == option
    return value == option


def _show(value: object) -> str:
    return f"'{value}'" if isinstance(value, str) else repr(value)


def _printable(name: str) -> str:
    """``name`` without the characters a log line or a model's text should not hold (a
    framework may name a key the model wrote)."""
    return name if name.isprintable() else "".join(c for c in name if c.isprintable())


# A framework validator's refusal.


def _validation_errors(error: Exception) -> list[Mapping[str, Any]]:
    """``error.errors()``, pydantic's list of what failed; [] when it has none."""
    errors = getattr(error, "errors", None)
    try:
        found = errors() if callable(errors) else []
    except Exception:  # not pydantic's after all
        return []
    return [each for each in found if isinstance(each, Mapping)] if isinstance(found, list) else []


def _path(location: Sequence[str | int]) -> str:
    """A ``loc`` as the property it names: ``nights``, ``rooms[0].beds``."""
    text = ""
    for part in location:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _validation_problem(path: str, error: Mapping[str, Any]) -> str:
    kind = error.get("type")
    if not path:
        return str(error.get("msg") or kind or "invalid arguments")
    if kind == "missing":
        return f"missing '{path}'"
    if kind == "extra_forbidden":
        return f"unexpected '{path}'"
    if kind in _VALIDATOR_PHRASES:
        return f"'{path}' must be {_VALIDATOR_PHRASES[kind]}"
    context = error.get("ctx")
    if kind in ("enum", "literal_error") and isinstance(context, Mapping):
        return f"'{path}' must be {context.get('expected')}"
    return f"'{path}': {error.get('msg') or kind}"
