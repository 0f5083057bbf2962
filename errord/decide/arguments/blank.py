"""A required string left blank: an ``invalid_value`` unless its schema admits it.

A model leaves a required string empty (``""``) or only whitespace (``"   "``) when it
has nothing to put there, as a tool that answers "No query provided". A required property whose
schema says ``type: string`` (alone or in a list) is blank where it must not be,
unless the schema speaks to that value itself:

- ``minLength`` stated: 0 admits a blank value; 1 or more rejects it with minLength's
  own violation, the same one (keywords.py);
- ``enum`` or ``const``: each admits the value or rejects it with its own
  ``invalid_value``;
- a ``pattern`` that matches the value admits it (one that does not is a second
  violation, beside this one).

The property's schema is the one beside ``required`` (``properties``, through ``$ref``
and ``allOf``), at any depth the validator reaches, so an object nested in another, or
in an array, has its required strings checked too; the items of an array of strings
are not required parameters and are not. A ``required`` whose properties sit in a
sibling branch (an ``allOf`` branch holding only ``required``) finds no property
schema and is not checked; nor is Draft 3, whose ``required`` is a boolean. Within
``not`` and ``if``, a blank required string counts as not given, as everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, TypeGuard

from errord.decide.arguments.display import type_names
from errord.decide.arguments.flatten import Where, flatten
from errord.decide.arguments.references import Resolver
from errord.decide.arguments.regexes import matches

BLANK: Final = "blank"
"""The ``validator`` of the error a required string left blank makes: errord's rule,
named by no JSON Schema keyword."""
_DECIDING: Final = ("minLength", "enum", "const")
"""Keywords that judge a blank value themselves, admitting or rejecting it."""


def is_blank(value: object) -> TypeGuard[str]:
    """Whether ``value`` is a string that is empty or only whitespace."""
    return isinstance(value, str) and not value.strip()


def left_blank(value: object, name: str, schema: Any, resolver: Resolver) -> bool:
    """Whether ``value``, given for the property ``name`` that ``schema`` requires, is a
    blank string that the property's schema does not admit."""
    if not is_blank(value):
        return False
    node, where = flatten(schema, Where(resolver))
    properties = node.get("properties")
    if not isinstance(properties, Mapping) or name not in properties:
        return False
    prop, _ = flatten(properties[name], where)
    if "string" not in type_names(prop.get("type")) or any(key in prop for key in _DECIDING):
        return False
    pattern = prop.get("pattern")
    return not (isinstance(pattern, str) and matches(pattern, value))
