"""Credentials known by their format: vendor-prefixed tokens and JWTs, PEM private keys,
and secrets inside URLs and ids (a password in a URL, a webhook's path).

Each pattern begins with a literal (the regex engine skips ahead to where it can match)
and backtracks at most linearly.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Final, TypeAlias

from errord.decide.redact.entropy import looks_generated
from errord.decide.redact.spans import Span

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
