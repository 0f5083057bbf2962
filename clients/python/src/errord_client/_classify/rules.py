# Generated from errord/decide/classify by clients/python/genproto.py; never edit.
"""How the default rules are written and searched: a ``Rule`` names a cause with lowercase
regexes, a ``Tier`` finds the first of its rules that a text names.

Rules read the first ``SEARCHED_CHARS`` (4,096) characters of the message and of the
exception type: the evidence sits at the start of an error message, and a longer one must
not cost more time. They read them lowercased, once per failure (``searchable``), so the
patterns are written in lowercase and compiled without ``re.IGNORECASE``, which makes
every search several times slower. Each tier finds its rules with one pattern (``Tier``):
most failures name none of a tier's rules, and that costs one search, not one per rule.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from errord_client.classify_model import Classification, ErrorClass, ErrorCode, Fault

TRANSIENT, PERMANENT = ErrorClass.TRANSIENT, ErrorClass.PERMANENT

DEFAULT_CLASSES: dict[ErrorCode, ErrorClass] = {
    ErrorCode.TIMEOUT: TRANSIENT,
    ErrorCode.CONNECTION: TRANSIENT,
    ErrorCode.RATE_LIMITED: TRANSIENT,
    ErrorCode.UNAVAILABLE: TRANSIENT,
    ErrorCode.UNKNOWN: TRANSIENT,
    ErrorCode.CIRCUIT_OPEN: TRANSIENT,
    ErrorCode.INVALID_INPUT: PERMANENT,
    ErrorCode.AUTH: PERMANENT,
    ErrorCode.NOT_FOUND: PERMANENT,
    ErrorCode.UNSUPPORTED: PERMANENT,
    ErrorCode.TOOL_NOT_FOUND: PERMANENT,
    ErrorCode.SCHEMA_VIOLATION: PERMANENT,
    ErrorCode.INTERNAL: PERMANENT,
}
"""The class of each code, unless the rule that found it carries its own."""

SEARCHED_CHARS = 4096
"""How many characters of a message, or of an exception type, the rules read."""

IGNORECASE_FOLDS = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s"})
"""The characters re.IGNORECASE matches to an ASCII letter that str.lower() does not turn
into it: U+0130 (capital I with dot above, which it turns into two characters), U+0131
(dotless i) and U+017F (long s)."""


def verdict(
    code: ErrorCode,
    rule_name: str,
    error_class: ErrorClass | None = None,
    *,
    fault: Fault | None = None,
) -> Classification:
    """A rule's classification: its code's default class unless it says its own; its
    ``fault`` when the rule knows who can act whatever the call (a 402: a person)."""
    return Classification(error_class or DEFAULT_CLASSES[code], code, rule_name, fault)


def searchable(text: str) -> str:
    """What the rules read of ``text``: its first SEARCHED_CHARS characters, lowercased
    so that a lowercase pattern matches exactly where re.IGNORECASE would."""
    text = text[:SEARCHED_CHARS]
    return text.lower() if text.isascii() else text.translate(IGNORECASE_FOLDS).lower()


class Rule(NamedTuple):
    """A cause, the patterns that name it, and the class to give it when not the code's own."""

    name: str
    alternatives: tuple[str, ...]
    """Lowercase regexes, any of which names the cause; each starts with a literal character."""
    code: ErrorCode
    error_class: ErrorClass | None = None

    def verdict(self, source: str) -> Classification:
        return verdict(self.code, f"default:{source}:{self.name}", self.error_class)


def rule(
    name: str, alternatives: Sequence[str], code: ErrorCode, error_class: ErrorClass | None = None
) -> Rule:
    return Rule(name, tuple(map(literal_first, alternatives)), code, error_class)


LITERAL_START = re.compile(r"(?:\\b)?\w(?![*+?{])")


def literal_first(alternative: str) -> str:
    r"""``alternative`` written to start with a literal character, so that the regex engine
    skips every position where that character is not: a leading ``\b`` moves behind the
    first character as ``(?<!\w\w)``, which says the same of a word character."""
    if not LITERAL_START.match(alternative) or re.compile(alternative).groups:
        raise ValueError(
            f"{alternative!r} must start with a word character or \\b, capture nothing"
        )
    if alternative.startswith(r"\b"):
        return alternative[2] + r"(?<!\w\w)" + alternative[3:]
    return alternative


class Tier:
    """Rules read from one source in priority order, and one pattern that finds any of
    them: a text that names none of the rules costs one search, not one per rule."""

    def __init__(self, rules: Sequence[Rule], source: str) -> None:
        self.rules = tuple(rules)
        self.patterns = tuple(re.compile("|".join(r.alternatives)) for r in self.rules)
        self.verdicts = tuple(r.verdict(source) for r in self.rules)
        self.any_rule, self.rule_of_group = any_of(self.rules)

    def first_match(self, text: str) -> Classification | None:
        """The verdict of the first rule that occurs in ``text``, a ``searchable`` text.

        The leftmost occurrence of any rule is that of the first rule occurring there (the
        alternatives keep the rules' order); an earlier rule can only occur further on."""
        found = self.any_rule.search(text) if text else None
        if found is None:
            return None
        index = self.rule_of_group[found.lastindex]
        after = found.start() + 1
        for earlier in range(index):
            if self.patterns[earlier].search(text, after):
                return self.verdicts[earlier]
        return self.verdicts[index]


def any_of(rules: Sequence[Rule]) -> tuple[re.Pattern[str], dict[int | None, int]]:
    """A pattern of every alternative of ``rules``, each closed by an empty group, and the
    index of the rule each group closes. The alternatives are grouped by their first
    character, in order, so that the engine tries at each position only those that start
    with its character: ``a(?:pi key()|uth()|...)|t(?:imeout()|...)``."""
    by_first: dict[str, list[tuple[str, int]]] = {}
    for index, candidate in enumerate(rules):
        for alternative in candidate.alternatives:
            by_first.setdefault(alternative[0], []).append((alternative[1:], index))
    branches = []
    rule_of_group: dict[int | None, int] = {}
    for first, rests in by_first.items():
        branches.append(first + "(?:" + "|".join(rest + "()" for rest, _ in rests) + ")")
        for _, index in rests:
            rule_of_group[len(rule_of_group) + 1] = index
    return re.compile("|".join(branches)), rule_of_group
