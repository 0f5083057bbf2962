"""A tool's arguments as JSON Schema: built from a function's type hints, read back, checked.

A model calls a tool with a JSON object. ``parameters_schema`` describes that object from
the function's signature: one property per parameter, required unless it has a default,
no other property allowed. Hints map to JSON types as model APIs read them:

- ``str``, ``int``, ``float``, ``bool``, ``None``: string, integer, number, boolean, null
- ``list[X]``, ``tuple[X, ...]``, ``tuple[X, Y]``: arrays; ``dict[str, X]``: objects
- ``Literal[...]`` and ``Enum`` subclasses: ``enum`` of their (JSON) values
- ``X | None``, ``Optional[X]``, ``Union[...]``: a list of types, or ``anyOf``
- ``TypedDict`` and dataclasses: objects with their fields as properties
- ``Annotated[X, "text"]``: X, described by the text; ``Any``: any JSON value

``arguments_converter`` reads decoded JSON back into the hinted types (an Enum member, a
dataclass instance, a tuple) before the function runs; a call is checked against the
schema first (errord_client.tools.arguments).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import inspect
import types
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from errord_client.tools.arguments import InvalidArguments, json_type

Converter = Callable[[Any], Any]
"""Reads one decoded JSON value into the hinted type; raises TypeError or ValueError."""

_SIMPLE_TYPES: Mapping[object, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    None: "null",
    type(None): "null",
}


class _Unsupported(Exception):
    """A hint with no JSON Schema; the message says which part of the hint."""


# Schemas from hints.


def parameters_schema(function: Callable[..., Any]) -> dict[str, Any]:
    """The JSON Schema of the arguments object ``function`` is called with (as keywords).

    Raises TypeError naming the parameter whose hint is missing or has no JSON form, and
    for a positional-only parameter (a tool is called with keyword arguments).
    """
    properties: dict[str, Any] = {}
    required: list[str] = []
    extra_allowed = False
    for parameter, hint in _parameters(function):
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            extra_allowed = True
            continue
        try:
            properties[parameter.name] = _schema(hint, frozenset())
        except _Unsupported as unsupported:
            raise _parameter_error(function, parameter.name, str(unsupported)) from None
        if parameter.default is inspect.Parameter.empty:
            required.append(parameter.name)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    if not extra_allowed:
        schema["additionalProperties"] = False
    return schema


def _parameters(function: Callable[..., Any]) -> Iterator[tuple[inspect.Parameter, object]]:
    """Each keyword parameter of ``function`` with its resolved hint (``*args`` skipped)."""
    hints = _hints(function)
    for parameter in inspect.signature(function).parameters.values():
        if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            continue
        if parameter.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise _parameter_error(function, parameter.name, "it is positional-only")
        if parameter.name not in hints and parameter.kind is not inspect.Parameter.VAR_KEYWORD:
            raise _parameter_error(function, parameter.name, "it has no type hint (use Any)")
        yield parameter, hints.get(parameter.name, Any)


def _hints(function: Callable[..., Any]) -> dict[str, Any]:
    target: Any = function
    while isinstance(target, functools.partial):
        target = target.func
    if not (inspect.isfunction(target) or inspect.ismethod(target)):
        target = type(target).__call__  # a callable object: its __call__'s hints
    return typing.get_type_hints(target, include_extras=True)


def _parameter_error(function: Callable[..., Any], name: str, why: str) -> TypeError:
    owner = getattr(function, "__qualname__", type(function).__qualname__)
    return TypeError(
        f"parameter '{name}' of {owner}: {why}; pass parameters= to describe it yourself"
    )


def _schema(hint: object, seen: frozenset[type]) -> dict[str, Any]:
    """The JSON Schema of one hint; ``seen`` holds the records being described, to refuse
    a record that contains itself."""
    origin = typing.get_origin(hint)
    arguments = typing.get_args(hint)
    if origin is typing.Annotated:
        return _annotated_schema(arguments, seen)
    if origin in (typing.Required, typing.NotRequired):
        return _schema(arguments[0], seen)
    if hint is Any:
        return {}
    if hint in _SIMPLE_TYPES:
        return {"type": _SIMPLE_TYPES[hint]}
    if origin is typing.Literal:
        return _enum_schema(arguments, hint)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return _enum_schema(tuple(member.value for member in hint), hint)
    if origin in (typing.Union, types.UnionType):
        return _union_schema(arguments, seen)
    if hint is list or origin is list:
        return _array_schema(arguments, seen)
    if hint is tuple or origin is tuple:
        return _tuple_schema(arguments, seen)
    if hint is dict or origin is dict:
        return _dict_schema(arguments, seen)
    if isinstance(hint, type) and (typing.is_typeddict(hint) or dataclasses.is_dataclass(hint)):
        return _record_schema(hint, seen)
    raise _Unsupported(f"{_name(hint)} has no JSON Schema")


def _annotated_schema(arguments: tuple[Any, ...], seen: frozenset[type]) -> dict[str, Any]:
    schema = _schema(arguments[0], seen)
    texts = [note for note in arguments[1:] if isinstance(note, str)]
    return {**schema, "description": texts[0]} if texts else schema


def _enum_schema(values: tuple[Any, ...], hint: object) -> dict[str, Any]:
    kinds = {_SIMPLE_TYPES.get(type(value)) for value in values}
    if None in kinds:
        raise _Unsupported(f"{_name(hint)} has values that are not JSON scalars")
    if kinds == {"integer", "number"}:
        kinds = {"number"}  # ints and floats: all numbers
    schema: dict[str, Any] = {"enum": list(values)}
    if len(kinds) == 1:
        schema["type"] = kinds.pop()
    return schema


def _union_schema(arguments: tuple[Any, ...], seen: frozenset[type]) -> dict[str, Any]:
    alternatives = [_schema(argument, seen) for argument in arguments]
    if all(alternative.keys() == {"type"} for alternative in alternatives):
        return {"type": [alternative["type"] for alternative in alternatives]}
    return {"anyOf": alternatives}


def _array_schema(arguments: tuple[Any, ...], seen: frozenset[type]) -> dict[str, Any]:
    if not arguments:
        return {"type": "array"}
    return {"type": "array", "items": _schema(arguments[0], seen)}


def _tuple_schema(arguments: tuple[Any, ...], seen: frozenset[type]) -> dict[str, Any]:
    if not arguments:
        return {"type": "array"}
    if len(arguments) == 2 and arguments[1] is Ellipsis:
        return _array_schema(arguments[:1], seen)
    if arguments == ((),):  # tuple[()]: the empty tuple
        return {"type": "array", "maxItems": 0}
    items = [_schema(argument, seen) for argument in arguments]
    return {"type": "array", "prefixItems": items, "minItems": len(items), "maxItems": len(items)}


def _dict_schema(arguments: tuple[Any, ...], seen: frozenset[type]) -> dict[str, Any]:
    if not arguments:
        return {"type": "object"}
    if arguments[0] is not str:
        raise _Unsupported(f"dict keys must be str in JSON, not {_name(arguments[0])}")
    return {"type": "object", "additionalProperties": _schema(arguments[1], seen)}


def _record_schema(hint: type, seen: frozenset[type]) -> dict[str, Any]:
    if hint in seen:
        raise _Unsupported(f"{_name(hint)} contains itself")
    fields = _record_fields(hint)
    properties = {name: _schema(field, seen | {hint}) for name, (field, _) in fields.items()}
    required = [name for name, (_, needed) in fields.items() if needed]
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return schema


def _record_fields(hint: type) -> dict[str, tuple[object, bool]]:
    """A TypedDict's or dataclass's fields: name -> (hint, required)."""
    hints = typing.get_type_hints(hint, include_extras=True)
    if typing.is_typeddict(hint):
        required_keys: frozenset[str] = getattr(hint, "__required_keys__", frozenset())
        return {
            name: (field, _required(field, name in required_keys)) for name, field in hints.items()
        }
    return {
        field.name: (hints[field.name], _has_no_default(field))
        for field in dataclasses.fields(hint)
        if field.init
    }


def _required(hint: object, by_totality: bool) -> bool:
    """Whether a TypedDict key is required. Its own Required[]/NotRequired[] decides first:
    Python 3.11 leaves them out of ``__required_keys__`` when annotations are strings."""
    origin = typing.get_origin(hint)
    if origin is typing.Required:
        return True
    return by_totality and origin is not typing.NotRequired


def _has_no_default(field: dataclasses.Field[Any]) -> bool:
    return field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING


def _name(hint: object) -> str:
    return hint.__qualname__ if isinstance(hint, type) else repr(hint)


# Decoded JSON back into the hinted types.


def arguments_converter(
    function: Callable[..., Any],
) -> Callable[[Mapping[str, Any]], dict[str, Any]] | None:
    """A function reading a call's decoded JSON arguments into ``function``'s hinted types,
    or None when every hint takes decoded JSON as it is. The converter raises
    InvalidArguments naming the argument it could not read."""
    converters: dict[str, Converter] = {}
    for parameter, hint in _parameters(function):
        converter = _converter(hint)
        if converter is not None:
            converters[parameter.name] = converter
    if not converters:
        return None

    def convert(arguments: Mapping[str, Any]) -> dict[str, Any]:
        converted = dict(arguments)
        for name, converter in converters.items():
            if name in converted:
                try:
                    converted[name] = converter(converted[name])
                except (TypeError, ValueError) as error:
                    problem = f"'{name}' could not be read: {error}"
                    raise InvalidArguments([problem], parameter=name) from error
        return converted

    return convert


def _converter(hint: object) -> Converter | None:
    """How to read a decoded JSON value as ``hint``; None when it is already one."""
    origin = typing.get_origin(hint)
    arguments = typing.get_args(hint)
    if origin in (typing.Annotated, typing.Required, typing.NotRequired):
        return _converter(arguments[0])
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint
    if origin in (typing.Union, types.UnionType):
        return _union_converter(arguments)
    if origin is list and arguments:
        return _each(_converter(arguments[0]), list)
    if hint is tuple or origin is tuple:
        return _tuple_converter(arguments)
    if origin is dict and arguments:
        return _values(_converter(arguments[1]))
    if isinstance(hint, type) and typing.is_typeddict(hint):
        return _typeddict_converter(hint)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _dataclass_converter(hint)
    return None


def _each(item: Converter | None, build: Callable[[Iterator[Any]], Any]) -> Converter | None:
    if item is None:
        return None
    return lambda value: build(item(element) for element in _array(value))


def _values(item: Converter | None) -> Converter | None:
    if item is None:
        return None
    return lambda value: {key: item(element) for key, element in _object(value).items()}


def _tuple_converter(arguments: tuple[Any, ...]) -> Converter:
    if not arguments or arguments == ((),):
        return lambda value: tuple(_array(value))
    if len(arguments) == 2 and arguments[1] is Ellipsis:
        return _each(_converter(arguments[0]), tuple) or (lambda value: tuple(_array(value)))
    items = [_converter(argument) or _same for argument in arguments]

    def convert(value: Any) -> tuple[Any, ...]:
        elements = _array(value)
        if len(elements) != len(items):
            raise ValueError(f"expected {len(items)} items, not {len(elements)}")
        return tuple(item(element) for item, element in zip(items, elements, strict=True))

    return convert


def _union_converter(arguments: tuple[Any, ...]) -> Converter | None:
    converters = [converter for converter in map(_converter, arguments) if converter is not None]
    if not converters:
        return None
    takes_none = type(None) in arguments

    def convert(value: Any) -> Any:
        if value is None and takes_none:
            return None
        for converter in converters:
            try:
                return converter(value)
            except (TypeError, ValueError):
                continue
        return value  # one of the alternatives that take decoded JSON as it is

    return convert


def _typeddict_converter(hint: type) -> Converter | None:
    fields = {name: _converter(field) for name, (field, _) in _record_fields(hint).items()}
    converters = {name: converter for name, converter in fields.items() if converter}
    if not converters:
        return None
    return lambda value: {
        key: converters[key](element) if key in converters else element
        for key, element in _object(value).items()
    }


def _dataclass_converter(hint: type) -> Converter:
    fields = {name: _converter(field) or _same for name, (field, _) in _record_fields(hint).items()}

    def convert(value: Any) -> Any:
        if isinstance(value, hint):
            return value
        unknown = _object(value).keys() - fields.keys()
        if unknown:
            raise TypeError(f"{hint.__qualname__} has no field '{min(unknown)}'")
        return hint(**{key: fields[key](element) for key, element in value.items()})

    return convert


def _same(value: Any) -> Any:
    return value


def _array(value: Any) -> Sequence[Any]:
    if not isinstance(value, list | tuple):
        raise TypeError(f"expected an array, not {json_type(value)}")
    return value


def _object(value: Any) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise TypeError(f"expected an object, not {json_type(value)}")
    return value
