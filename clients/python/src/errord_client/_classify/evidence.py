# Generated from errord/decide/classify by clients/python/genproto.py; never edit.
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

from errord_client.classify_model import JSONValue, ToolFailure

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
    ``value_in_text``, ``unparsable_json`` or ``invalid_pattern``."""

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


_NAME = r"""['"`\u2018\u201c]([A-Za-z_][\w.\[\]-]{0,63})['"`\u2019\u201d]"""
FRAMED_AS_PARAMETER: Final = re.compile(
    rf"\b(?:param(?:eter)?|argument|field|property)s?\s*[:=]?\s*{_NAME}"
    rf"|{_NAME}\s*(?:param(?:eter)?|argument|field|property)\b"
    rf"|\bmissing(?:\s+required)?(?:\s+(?:param(?:eter)?|argument|field|property)s?)?\s*:?\s*"
    rf"{_NAME}"
    rf"|{_NAME}\s+is\s+(?:required|missing)\b",
    re.IGNORECASE,
)
"""A quoted name the message calls a parameter: "Parameter 'query' ...", "'query' parameter",
"missing 'origin'", "'date' is required", "required positional argument: 'symbol'"."""


def framed_parameter(message: str) -> str:
    """The name ``message`` calls a parameter, quoted; empty when it calls none so."""
    framed = FRAMED_AS_PARAMETER.search(message)
    return next(group for group in framed.groups() if group) if framed else ""


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
    texts = [failure.message, failure.api_message] if failure.api_message else [failure.message]
    framed = _framed(texts) if about_values else None
    if not names:
        return framed
    values = argument_values(arguments)
    return (
        _api_parameter(failure.api_parameter, names)
        or _quoted(texts, names, values)
        or framed
        or (_named_as_word(texts, names) if about_values else None)
        or _word_in_value(texts, names, values)
        or _url_segment(texts, values)
        or _value_in_text(texts, values)
        or _unparsable(parsing, values)
    )


def _framed(texts: list[str]) -> Evidence | None:
    """A name the error itself calls a parameter: the call may not have it (missing)."""
    for text in texts:
        name = framed_parameter(text)
        if name:
            return Evidence(name, "named")
    return None


def _api_parameter(parameter: str, names: set[str]) -> Evidence | None:
    """The body's parameter, when the call has it (a nested one by its first part)."""
    head = re.split(r"[.\[]", parameter, maxsplit=1)[0]
    return Evidence(parameter, "api_parameter") if parameter and head in names else None


def _quoted(texts: list[str], names: set[str], values: list[tuple[str, str]]) -> Evidence | None:
    for text in texts:
        # The whole message may be the value: KeyError(10), aiohttp's error for a URL.
        candidates = [*quoted(text), text.strip()]
        for token in candidates:
            if token in names:
                return Evidence(token, "named")
        for token in candidates:
            for path, value in values:
                if value == token and path:
                    return Evidence(path, "quoted_value")
    return None


def _named_as_word(texts: list[str], names: set[str]) -> Evidence | None:
    """A parameter named as a word, whatever its case ("Request URL is missing" for
    ``url``), in an error about the call's values."""
    by_case = {name.lower(): name for name in names if len(name) >= 2}
    for text in texts:
        for word in WORD.findall(text):
            if word.lower() in by_case:
                return Evidence(by_case[word.lower()], "named")
    return None


def _word_in_value(
    texts: list[str], names: set[str], values: list[tuple[str, str]]
) -> Evidence | None:
    """A word the error quotes, or ends with after a colon, inside a longer argument
    (``SELEC`` in a query); a dotted one may name a parameter by its last part
    (``customers.name``)."""
    for text in texts:
        tokens = [token for token in quoted(text) if len(token) >= MIN_WORD]
        after = AFTER_COLON.search(text)
        if after:
            token = after[1].rstrip(".,;)")
            if "." in token and token.rsplit(".", 1)[1] in names:
                return Evidence(token.rsplit(".", 1)[1], "named")
            tokens.append(token)
        for token in tokens:
            pattern = re.compile(_bounded(token))
            for path, value in values:
                if path and len(value) > len(token) and pattern.search(value):
                    return Evidence(path, "word_in_value")
    return None


def _bounded(token: str) -> str:
    """``token`` as a regex that matches it as a whole word where its ends are word
    characters (``ftp://`` inside ``ftp://host`` still matches)."""
    start = r"(?<!\w)" if re.match(r"\w", token) else ""
    end = r"(?!\w)" if re.search(r"\w$", token) else ""
    return start + re.escape(token) + end


def _value_in_text(texts: list[str], values: list[tuple[str, str]]) -> Evidence | None:
    """An argument's whole value, as a word of the error though not quoted ("No time zone
    found with key Mars/Olympus", "model: claude-nonexistent")."""
    for text in texts:
        for path, value in values:
            usable = path and len(value) >= MIN_WORD and not value.isdigit()
            if usable and re.search(_bounded(value), text):
                return Evidence(path, "value_in_text")
    return None


def _url_segment(texts: list[str], values: list[tuple[str, str]]) -> Evidence | None:
    """An argument's value as a part of a URL the error quotes: the one found last in the
    URL, its most specific part (``repos/octocat/Hello-Wrold``: the repository)."""
    for text in texts:
        for url in URL.findall(text):
            segments = re.split(r"[/?&=#]", url.split("://", 1)[-1])
            found = [
                (segments.index(value), path)
                for path, value in values
                if path and len(value) >= MIN_WORD and value in segments
            ]
            if found:
                return Evidence(max(found)[1], "url")
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
