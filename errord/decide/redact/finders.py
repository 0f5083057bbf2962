"""Credentials found in a text, by three families of patterns (finders):

- by format: vendor-prefixed tokens and JWTs, PEM private keys, and secrets inside URLs
  and ids (a password in a URL, a webhook's path): ``token_spans``, ``pem_spans``,
  ``part_spans``;
- by what labels them: an HTTP authorization scheme (``Bearer <token>``) or a key that
  names a secret (``password=<value>``, ``"api_key": "<value>"``), read in the lowercased
  text, the value's span masked in the text itself: ``scheme_spans``,
  ``key_value_spans``;
- by randomness alone: a long run of base64 characters spread as evenly as in a
  generated secret, the last resort after every known format: ``random_spans``.

Each finder yields the spans of the secrets its family finds, in the text or in its
lowercased copy (the same length: see ``text._lowered``); overlapping spans are masked as
one (errord.decide.redact.text). One alternation of every pattern would be tried at every
character instead: thirty times slower. Each pattern begins with a literal (the regex
engine skips ahead to where it can match) and backtracks at most linearly.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Final, Protocol, TypeAlias

from errord.decide.redact.kinds import KEY_WORDS, LONGEST_KEY, key_kind

Span: TypeAlias = tuple[int, int, str]
"""Where a secret is, and its kind."""


class Finder(Protocol):
    """One family of patterns that finds credentials in a text."""

    def __call__(self, text: str, lowered: str) -> Iterator[Span]:
        """The spans of the secrets in ``text``, whose lowercased copy is ``lowered``."""
        ...


HIGH_ENTROPY: Final = "high_entropy"
"""The kind of a secret found by its randomness: a guess, which never widens the span of a
secret found otherwise (``text._mask``)."""
_RUN: Final = re.compile(r"(?<![A-Za-z0-9+/_=-])[A-Za-z0-9+/_-]{32,}=*")
"""32 or more characters of base64 (or base64url), the last resort."""
_HEX_ID: Final = re.compile(r"[0-9a-fA-F_-]+")
"""UUIDs, digests, commit and trace ids: hexadecimal is left alone."""
_ID_PREFIX: Final = re.compile(
    r"(?:call|toolu|srvtoolu|msg|chatcmpl|cmpl|resp|req|run|thread|asst|file|batch|fc|step)[_-]"
)
"""Ids that model APIs and executors hand out, random after their prefix."""
_RANDOM_BITS: Final = 0.85
"""A random string of n characters has close to log2(n) bits of entropy per character;
words, paths and identifiers have fewer."""
_RANDOM_BITS_CAP: Final = 4.8


def looks_generated(text: str) -> bool:
    """Upper and lower case letters and a digit: a generated value, not a word."""
    return text.lower() != text != text.upper() and any(c.isdigit() for c in text)


def looks_random(text: str) -> bool:
    """Whether a long run of base64 characters is a generated secret: mixed case and digits,
    not hexadecimal, not an id of a known kind, its entropy close to a random string's."""
    if _HEX_ID.fullmatch(text) or _ID_PREFIX.match(text) or not looks_generated(text):
        return False
    size = len(text)
    entropy = -sum(n / size * math.log2(n / size) for n in Counter(text).values())
    return entropy >= min(_RANDOM_BITS * math.log2(size), _RANDOM_BITS_CAP)


def random_spans(text: str, lowered: str) -> Iterator[Span]:
    """Runs of base64 that look random (a finder)."""
    for match in _RUN.finditer(text):
        if looks_random(match.group()):
            yield *match.span(), HIGH_ENTROPY


_Check: TypeAlias = Callable[[str], bool] | None
"""A test of a match, for patterns that also match ordinary words; None: no test."""

_WORD_END: Final = r"(?![A-Za-z0-9])"
_TOKEN_RULES: Final[tuple[tuple[str, str, _Check], ...]] = (
    # (kind, pattern beginning with a letter or digit, check) for prefixed tokens.
    ("aws_access_key", r"A(?:KIA|SIA|BIA|CCA|3T[A-Z0-9])[A-Z0-9]{16}" + _WORD_END, None),
    ("google_api_key", r"AIza[\w-]{35}(?![\w-])", None),
    ("google_oauth_token", r"ya29\.[\w-]{20,}", None),
    ("google_refresh_token", r"1//0[\w-]{30,}", None),
    ("github_pat", r"github_pat_\w{22,255}", None),
    ("github_token", r"gh[pousr]_[A-Za-z0-9]{36,255}" + _WORD_END, None),
    ("gitlab_token", r"glpat-[\w-]{20,}", None),
    ("slack_token", r"xox[abposr]-[A-Za-z0-9-]{20,}", None),
    ("slack_app_token", r"xapp-\d-[A-Za-z0-9-]{20,}", None),
    # Stripe's secret and restricted keys, and the short example keys of documentation
    # (``sk-live-123``): the prefix says enough, whatever the length after it.
    ("stripe_key", r"sk_(?:live|test)_[A-Za-z0-9]+", None),
    ("stripe_key", r"rk_(?:live|test)_[A-Za-z0-9]+", None),
    ("api_key", r"sk-(?:live|test)-[\w-]+", None),
    ("stripe_webhook_secret", r"whsec_[A-Za-z0-9+/=]{20,}", None),
    ("anthropic_api_key", r"sk-ant-[a-z]{2,8}\d{2}-[\w-]{20,}", None),
    ("openai_api_key", r"sk-(?:proj-|svcacct-|admin-)?[\w-]{20,}", looks_generated),
    ("twilio_api_key", r"SK[0-9a-fA-F]{32}" + _WORD_END, None),
    ("sendgrid_api_key", r"SG\.[\w-]{16,32}\.[\w-]{16,64}", None),
    ("mailgun_api_key", r"key-[0-9a-f]{32}" + _WORD_END, None),
    ("npm_token", r"npm_[A-Za-z0-9]{36}" + _WORD_END, None),
    ("pypi_token", r"pypi-AgEIcHlwaS5vcmc[\w-]{50,}", None),
    ("huggingface_token", r"hf_[A-Za-z0-9]{30,}" + _WORD_END, None),
    ("digitalocean_token", r"do[opr]_v1_[a-f0-9]{64}" + _WORD_END, None),
    ("databricks_token", r"dapi[a-f0-9]{32}(?:-\d)?" + _WORD_END, None),
    ("groq_api_key", r"gsk_[A-Za-z0-9]{48,}" + _WORD_END, None),
    ("replicate_token", r"r8_[A-Za-z0-9]{37}" + _WORD_END, None),
    ("shopify_token", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}" + _WORD_END, None),
    ("atlassian_token", r"ATATT3[\w=-]{50,}", None),
    ("square_token", r"EAAA[\w-]{60}", None),
    ("square_token", r"sq0(?:atp|csp)-[\w-]{22,43}", None),
    ("vault_token", r"hv[sb]\.[\w-]{24,}", None),
    ("age_secret_key", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}" + _WORD_END, None),
    ("jwt", r"eyJ[\w-]{10,}\.[\w-]{10,}\.[\w-]*", None),
)
# Each branch begins with its first character: the engine passes over a branch at a glance
# where that character is not. Right after it, a lookbehind makes sure that no letter or
# digit comes before (a token does not start inside a word); then the group that names it.
_TOKENS: Final = re.compile(
    "|".join(
        f"{p[0]}(?<![A-Za-z0-9]{p[0]})(?P<t{i}>{p[1:]})" for i, (_, p, _) in enumerate(_TOKEN_RULES)
    )
)
assert all(p[0].isalnum() for _, p, _ in _TOKEN_RULES)


def token_spans(text: str, lowered: str) -> Iterator[Span]:
    """Vendor-prefixed tokens and JWTs (a finder)."""
    for match in _TOKENS.finditer(text):
        assert match.lastgroup is not None
        kind, _, check = _TOKEN_RULES[int(match.lastgroup[1:])]
        if check is None or check(match.group()):
            yield *match.span(), kind


_PEM: Final = re.compile(
    r"-----BEGIN[A-Z ]{0,30}PRIVATE KEY(?: BLOCK)?-----"
    r"(?:[A-Za-z0-9+/=\s\\:,.]|-(?!----END))*"
    r"(?:-----END[A-Z ]{0,30}PRIVATE KEY(?: BLOCK)?-----)?"
)
"""A PEM private key, to its END line, or as far as its base64 goes when cut short."""


def pem_spans(text: str, lowered: str) -> Iterator[Span]:
    """PEM private keys (a finder)."""
    for match in _PEM.finditer(text):
        yield *match.span(), "private_key"


_PARTS: Final[tuple[tuple[str, re.Pattern[str], int], ...]] = (
    # (kind, pattern, lead): the secret is the group "s" and the ``lead`` characters before.
    ("password", re.compile(r"://[^\s:/?#@\[\]\"'<>]*:(?P<s>[^\s/?#@\"'<>]+)@"), 0),
    (
        "slack_webhook",
        re.compile(r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<s>[\w/-]{8,})"),
        0,
    ),
    ("discord_webhook", re.compile(r"discord(?:app)?\.com/api/webhooks/(?P<s>\d+/[\w-]+)"), 0),
    ("telegram_bot_token", re.compile(r":(?<=\d{8}:)(?P<s>AA[\w-]{33})(?![\w-])"), 0),
    ("azure_client_secret", re.compile(r"(?P<s>Q~(?<=[\w~.]{3}\dQ~)[\w~.-]{31,34})(?![\w~.-])"), 4),
)


def part_spans(text: str, lowered: str) -> Iterator[Span]:
    """The secret part of a URL or an id: ``postgres://app:<password>@db`` (a finder)."""
    for kind, pattern, lead in _PARTS:
        for match in pattern.finditer(text):
            start, end = match.span("s")
            yield start - lead, end, kind


_SCHEME: Final = re.compile(
    r"b(?<![a-z0-9]b)(?:(?P<bearer>earer)|asic)\s+(?P<s>[a-z0-9._~+/-]{8,}=*)"
)
"""An HTTP authorization scheme and its credential, in the lowercased text."""


def _not_a_word(text: str) -> bool:
    """Anything but lowercase letters: ``Bearer authentication`` names no token."""
    return not (text.isalpha() and text.islower())


def scheme_spans(text: str, lowered: str) -> Iterator[Span]:
    """The credential after ``Bearer`` or ``Basic`` (a finder)."""
    for match in _SCHEME.finditer(lowered):
        start, end = match.span("s")
        if _not_a_word(text[start:end]):
            yield start, end, "bearer_token" if match.group("bearer") else "basic_auth"


KEY_TAIL: Final = r"[\w-]{0,24}"
"""What may follow a key word in a key (``token_v2``)."""
SEPARATOR: Final = r"(?:\\?[\"'])?\s*[:=]"
"""Between a key and its value: ``=``, ``:``, ``": `` or ``\\": ``."""
_KEY: Final = "(?:" + "|".join(KEY_WORDS) + ")" + KEY_TAIL
_KEY_SEPARATOR: Final = re.compile(rf"(?P<key>{_KEY}){SEPARATOR}\s*")
"""A key with a key word in it and its separator, in the lowercased text: found from
the key word, so that the whole key is read back from before it (_whole_key)."""
_VALUE: Final = re.compile(
    # Atomic: a scheme is never taken for the value (``Bearer [REDACTED:...]``).
    r"(?>(?:(?P<scheme>bearer|basic|token|bot|digest|apikey|ssws)\s+)?)"
    r"(?:\"(?P<dq>(?:[^\"\\]|\\.)*)\""
    r"|'(?P<sq>(?:[^'\\]|\\.)*)'"
    r"|\\\"(?P<edq>[^\"\\]*)\\\""
    r"|(?P<bare>[^\s\"'&;,<>()\[\]{}\\]+))"
)
"""The value after a separator: quoted (JSON, Python reprs, escaped JSON) or bare, up to
the end of a query parameter, header, connection string field or word."""
_VALUES: Final = ("dq", "sq", "edq", "bare")
_SCHEME_KINDS: Final = {"bearer": "bearer_token", "basic": "basic_auth"}
_KEY_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_.-")


def key_value_spans(text: str, lowered: str) -> Iterator[Span]:
    """``key=value`` and ``key: value`` (query strings, headers, connection strings, JSON):
    the value of a key that names a secret (a finder). Only those values are read, so that
    each character is looked at a bounded number of times."""
    position = 0
    while (key := _KEY_SEPARATOR.search(lowered, position)) is not None:
        position = key.end()
        kind = key_kind(_whole_key(lowered, key))
        value = _VALUE.match(lowered, position) if kind is not None else None
        if kind is None or value is None:
            continue
        group = next(name for name in _VALUES if value.start(name) >= 0)
        start, end = value.span(group)
        if start < end:
            yield start, end, _SCHEME_KINDS.get(value.group("scheme") or "", kind)
        position = value.end()


def _whole_key(lowered: str, match: re.Match[str]) -> str:
    """The key of a ``key=value`` match, which begins at a key word inside the key."""
    start = match.start()
    end = match.end("key")
    while start > 0 and end - start < LONGEST_KEY and lowered[start - 1] in _KEY_CHARS:
        start -= 1
    return lowered[start:end]
