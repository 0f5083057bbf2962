"""Evidence from the call itself: which of its parameters a failure is about.

A failure whose error quotes one of the call's argument values, or names one of its
parameters, is about the arguments, and the parameter is the one whose value it quotes:
``ValueError: invalid literal for int() with base 10: 'ten'`` for ``count="ten"`` is
about ``count`` (never "parameter 'ten'"). What counts, strongest first:

1. the parameter the API's error body names (``api_parameter``), when the call has it;
2. a parameter named in quotes ("Parameter 'query' cannot be empty");
3. a value quoted whole: a string argument, or a number's text (``'kelvinn' is not a
   valid Unit``, ``No such file or directory: 'data/q3.csv'``, ``KeyError: 'price'``);
4. for a failure that is plainly about the call's values (INVALID_INPUT), a parameter
   named as a word ("No query provided");
5. a word of the error found inside a longer string argument: quoted, or at the end after
   a colon (``near "SELEC": syntax error``, ``no such column: prce`` in a ``query``), or a
   path segment of a URL the error quotes, whose value is one argument (a 404 for
   ``.../customers/cus_123``) — not for an error errord does not recognize;
6. for a JSON or regular expression error, the argument that does not parse as one.

Arguments are read redacted, nested ones by their dotted path (``filters.city``), at most
MAX_VALUES values and MAX_DEPTH levels: a failure's evidence costs microseconds.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Final, NamedTuple

from errord.decide.model import JSONValue, ToolFailure

MAX_VALUES: Final = 256
"""Argument values read, depth first."""
MAX_DEPTH: Final = 4
"""Levels of nested objects and arrays read."""
MAX_PARSED: Final = 4_096
"""Characters of an argument parsed as JSON or as a regular expression."""
MIN_WORD: Final = 3
"""Characters a word must have to count when found inside a longer value."""

QUOTED: Final = re.compile(
    r"'([^'\n]{1,200})'|\"([^\"\n]{1,200})\"|`([^`\n]{1,200})`|\u2018([^\u2019\n]{1,200})\u2019"
)
AFTER_COLON: Final = re.compile(r":\s*([^\s'\"`:]{3,200})\s*$")
URL: Final = re.compile(r"https?://[^\s'\"`<>]+")
WORD: Final = re.compile(r"[A-Za-z_][\w-]*")


class Evidence(NamedTuple):
    """The parameter a failure is about, and how errord found it."""

    parameter: str
    how: str
    """``api_parameter``, ``named``, ``quoted_value``, ``word_in_value``, ``url``,
    ``unparsable_json`` or ``invalid_pattern``."""

    @property
    def strong(self) -> bool:
        """Whether it says the call is at fault by itself, whatever the error's kind."""
        return self.how in STRONG


STRONG: Final = frozenset(
    {"api_parameter", "named", "quoted_value", "unparsable_json", "invalid_pattern"}
)


def argument_values(arguments: Mapping[str, JSONValue]) -> list[tuple[str, str]]:
    """Each scalar argument as (its dotted path, its text), depth first, bounded."""
    found: list[tuple[str, str]] = []
    _walk(arguments, "", 0, found)
    return found


def _walk(value: JSONValue, path: str, depth: int, found: list[tuple[str, str]]) -> None:
    if len(found) >= MAX_VALUES or depth > MAX_DEPTH:
        return
    if isinstance(value, Mapping):
        for key, each in value.items():
            _walk(each, f"{path}.{key}" if path else str(key), depth + 1, found)
    elif isinstance(value, list):
        for each in value:
            _walk(each, path, depth + 1, found)
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int | float):
        found.append((path, _number_text(value)))
    else:
        found.append((path, str(value)))


def _number_text(number: int | float) -> str:
    if isinstance(number, float) and number.is_integer():
        return str(int(number))
    return str(number)


def quoted(text: str) -> list[str]:
    """The strings ``text`` quotes, in order."""
    return [next(group for group in match.groups() if group) for match in QUOTED.finditer(text)]


def argument_evidence(
    failure: ToolFailure,
    arguments: Mapping[str, JSONValue],
    parameters: Iterable[str] = (),
    *,
    about_values: bool = False,
    parsing: str = "",
) -> Evidence | None:
    """Which parameter of the call ``failure`` is about, and how errord knows; None when
    the error shows nothing of the call. ``parameters``: those the tool's schema names
    (the call's own keys count too); ``about_values``: the failure says it is about the
    call's values (INVALID_INPUT), so a parameter named as a bare word counts;
    ``parsing``: ``json`` or ``regex`` for a parsing error of that kind."""
    names = {*parameters, *arguments}
    if not names:
        return None
    texts = [failure.message, failure.api_message] if failure.api_message else [failure.message]
    values = argument_values(arguments)
    return (
        _api_parameter(failure.api_parameter, names)
        or _quoted(texts, names, values)
        or (_named_as_word(texts, names) if about_values else None)
        or _word_in_value(texts, values)
        or _url_segment(texts, values)
        or _unparsable(parsing, values)
    )


def _api_parameter(parameter: str, names: set[str]) -> Evidence | None:
    """The body's parameter, when the call has it (a nested one by its first part)."""
    head = re.split(r"[.\[]", parameter, maxsplit=1)[0]
    return Evidence(parameter, "api_parameter") if parameter and head in names else None


def _quoted(texts: list[str], names: set[str], values: list[tuple[str, str]]) -> Evidence | None:
    for text in texts:
        stripped = text.strip()
        # A number alone is a value too: the message of KeyError(10).
        candidates = [*quoted(text), *([stripped] if stripped.isdigit() else [])]
        for token in candidates:
            if token in names:
                return Evidence(token, "named")
        for token in candidates:
            for path, value in values:
                if value == token and path:
                    return Evidence(path, "quoted_value")
    return None


def _named_as_word(texts: list[str], names: set[str]) -> Evidence | None:
    for text in texts:
        for word in WORD.findall(text):
            if word in names and len(word) >= 2:
                return Evidence(word, "named")
    return None


def _word_in_value(texts: list[str], values: list[tuple[str, str]]) -> Evidence | None:
    for text in texts:
        tokens = [token for token in quoted(text) if len(token) >= MIN_WORD]
        after = AFTER_COLON.search(text)
        if after:
            tokens.append(after[1].rstrip(".,;)"))
        for token in tokens:
            pattern = re.compile(rf"(?<![\w]){re.escape(token)}(?![\w])")
            for path, value in values:
                if path and len(value) > len(token) and pattern.search(value):
                    return Evidence(path, "word_in_value")
    return None


def _url_segment(texts: list[str], values: list[tuple[str, str]]) -> Evidence | None:
    for text in texts:
        for url in URL.findall(text):
            segments = set(re.split(r"[/?&=#]", url.split("://", 1)[-1]))
            for path, value in values:
                if path and len(value) >= MIN_WORD and value in segments:
                    return Evidence(path, "url")
    return None


def _unparsable(parsing: str, values: list[tuple[str, str]]) -> Evidence | None:
    if parsing not in ("json", "regex"):
        return None
    for path, value in values:
        if path and value and len(value) <= MAX_PARSED and not _parses(parsing, value):
            return Evidence(path, "unparsable_json" if parsing == "json" else "invalid_pattern")
    return None


def _parses(parsing: str, value: str) -> bool:
    if parsing == "json":
        if value.lstrip()[:1] not in ("{", "[", '"'):
            return True  # not meant as JSON: not the one that failed
        try:
            json.loads(value)
        except ValueError:
            return False
        return True
    try:
        re.compile(value)
    except (re.error, OverflowError, RecursionError):
        return False
    return True


def names_of(schema: Mapping[str, JSONValue] | None) -> Iterator[str]:
    """The top-level parameters a JSON Schema names."""
    properties = schema.get("properties") if schema else None
    if isinstance(properties, Mapping):
        yield from properties
