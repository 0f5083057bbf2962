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

import functools
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
    if type(value) is str:  # the common case first: isinstance of an ABC costs more
        found.append((path, value))
    elif isinstance(value, Mapping):
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


class _Text(NamedTuple):
    """What evidence reads from one error text, whatever the call."""

    text: str
    candidates: tuple[str, ...]
    """The strings it quotes, then itself whole (KeyError(10); aiohttp's error for a URL)."""
    framed: str
    """The name it calls a parameter, quoted."""
    words: tuple[str, ...]
    """Its words, lowercase, each once, in order."""
    inner_words: tuple[str, ...]
    """Quoted words long enough to be found inside a value, then one ending it after a
    colon."""
    last_after_colon: str
    """The word ending it after a colon, as written."""
    url_segments: tuple[tuple[str, ...], ...]
    """The parts of each URL it quotes."""


@functools.lru_cache(maxsize=1024)
def _read(text: str) -> _Text:
    """``text`` read once: one mistake repeats its message, for calls of other values."""
    tokens = quoted(text)
    after = AFTER_COLON.search(text)
    last = after[1].rstrip(".,;)") if after else ""
    return _Text(
        text=text,
        candidates=(*tokens, text.strip()),
        framed=framed_parameter(text),
        words=tuple(dict.fromkeys(word.lower() for word in WORD.findall(text))),
        inner_words=(
            *(token for token in tokens if len(token) >= MIN_WORD),
            *([last] if last else []),
        ),
        last_after_colon=last,
        url_segments=tuple(
            tuple(re.split(r"[/?&=#]", url.split("://", 1)[-1])) for url in URL.findall(text)
        ),
    )


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
    texts = [_read(failure.message)]
    if failure.api_message:
        texts.append(_read(failure.api_message))
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


def _framed(texts: list[_Text]) -> Evidence | None:
    """A name the error itself calls a parameter: the call may not have it (missing)."""
    for text in texts:
        if text.framed:
            return Evidence(text.framed, "named")
    return None


def _api_parameter(parameter: str, names: set[str]) -> Evidence | None:
    """The body's parameter, when the call has it (a nested one by its first part)."""
    head = re.split(r"[.\[]", parameter, maxsplit=1)[0]
    return Evidence(parameter, "api_parameter") if parameter and head in names else None


def _quoted(texts: list[_Text], names: set[str], values: list[tuple[str, str]]) -> Evidence | None:
    for text in texts:
        candidates = text.candidates
        for token in candidates:
            if token in names:
                return Evidence(token, "named")
        for token in candidates:
            for path, value in values:
                if value == token and path:
                    return Evidence(path, "quoted_value")
    return None


def _named_as_word(texts: list[_Text], names: set[str]) -> Evidence | None:
    """A parameter named as a word, whatever its case ("Request URL is missing" for
    ``url``), in an error about the call's values."""
    by_case = {name.lower(): name for name in names if len(name) >= 2}
    for text in texts:
        for word in text.words:
            if word in by_case:
                return Evidence(by_case[word], "named")
    return None


def _word_in_value(
    texts: list[_Text], names: set[str], values: list[tuple[str, str]]
) -> Evidence | None:
    """A word the error quotes, or ends with after a colon, inside a longer argument
    (``SELEC`` in a query); a dotted one may name a parameter by its last part
    (``customers.name``)."""
    for text in texts:
        last = text.last_after_colon
        if "." in last and last.rsplit(".", 1)[1] in names:
            return Evidence(last.rsplit(".", 1)[1], "named")
        for token in text.inner_words:
            pattern = _as_word(token)
            for path, value in values:
                if path and len(value) > len(token) and pattern.search(value):
                    return Evidence(path, "word_in_value")
    return None


@functools.lru_cache(maxsize=1024)
def _as_word(token: str) -> re.Pattern[str]:
    """``token`` as a regex that matches it as a whole word where its ends are word
    characters (``ftp://`` inside ``ftp://host`` still matches). Cached: one mistake
    repeats its message and its values."""
    start = r"(?<!\w)" if _is_word_character(token[:1]) else ""
    end = r"(?!\w)" if _is_word_character(token[-1:]) else ""
    return re.compile(start + re.escape(token) + end)


def _is_word_character(character: str) -> bool:
    return character.isalnum() or character == "_"


def _value_in_text(texts: list[_Text], values: list[tuple[str, str]]) -> Evidence | None:
    """An argument's whole value, as a word of the error though not quoted ("No time zone
    found with key Mars/Olympus", "model: claude-nonexistent")."""
    for text in texts:
        for path, value in values:
            usable = path and len(value) >= MIN_WORD and not value.isdigit()
            if usable and _as_word(value).search(text.text):
                return Evidence(path, "value_in_text")
    return None


def _url_segment(texts: list[_Text], values: list[tuple[str, str]]) -> Evidence | None:
    """An argument's value as a part of a URL the error quotes: the one found last in the
    URL, its most specific part (``repos/octocat/Hello-Wrold``: the repository)."""
    for text in texts:
        for segments in text.url_segments:
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
