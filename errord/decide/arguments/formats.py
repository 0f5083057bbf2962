"""The ``format`` values errord asserts, by checks of its own, and an example of each format."""

from __future__ import annotations

import ipaddress
import re
import uuid
from collections.abc import Mapping
from datetime import date
from typing import Final

from jsonschema import FormatChecker

FORMATS = FormatChecker(formats=())
"""The formats errord asserts, the same whichever optional packages are installed."""
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}\Z", re.ASCII)
_TIME = re.compile(r"(\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:[Zz]|[+-](\d{2}):(\d{2}))\Z", re.ASCII)


@FORMATS.checks("date", raises=ValueError)
def _is_date(value: object) -> bool:
    return not isinstance(value, str) or bool(_DATE.match(value) and date.fromisoformat(value))


@FORMATS.checks("time")
def _is_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    match = _TIME.match(value)
    if match is None:
        return False
    hour, minute, second, offset_hour, offset_minute = (int(each or 0) for each in match.groups())
    return hour < 24 and minute < 60 and second <= 60 and offset_hour < 24 and offset_minute < 60


@FORMATS.checks("date-time", raises=ValueError)
def _is_date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    return len(value) > 11 and value[10] in "Tt " and _is_date(value[:10]) and _is_time(value[11:])


@FORMATS.checks("email")
@FORMATS.checks("idn-email")
def _is_email(value: object) -> bool:
    return not isinstance(value, str) or re.fullmatch(r"[^@\s]+@[^@\s]+", value) is not None


@FORMATS.checks("uri")
def _is_uri(value: object) -> bool:
    return (
        not isinstance(value, str)
        or re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*:\S*", value) is not None
    )


@FORMATS.checks("uuid", raises=ValueError)
def _is_uuid(value: object) -> bool:
    if not isinstance(value, str):
        return True
    dashes = len(value) == 36 and all(value[at] == "-" for at in (8, 13, 18, 23))
    return dashes and bool(uuid.UUID(value))


@FORMATS.checks("ipv4", raises=ValueError)
def _is_ipv4(value: object) -> bool:
    return not isinstance(value, str) or bool(ipaddress.IPv4Address(value))


@FORMATS.checks("ipv6", raises=ValueError)
def _is_ipv6(value: object) -> bool:
    return not isinstance(value, str) or bool(ipaddress.IPv6Address(value))


@FORMATS.checks("regex", raises=re.error)
def _is_regex(value: object) -> bool:
    return not isinstance(value, str) or bool(re.compile(value))


FORMAT_EXAMPLES: Final[Mapping[str, str]] = {
    "date": "2025-01-31",
    "date-time": "2025-01-31T12:00:00Z",
    "time": "12:00:00Z",
    "email": "user@example.com",
    "idn-email": "user@example.com",
    "uri": "https://example.com/",
    "iri": "https://example.com/",
    "uri-reference": "https://example.com/",
    "uri-template": "https://example.com/{id}",
    "hostname": "example.com",
    "idn-hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "uuid": "123e4567-e89b-12d3-a456-426614174000",
    "regex": "^example$",
    "duration": "P1D",
    "json-pointer": "/example",
}
"""A value of each known format (asserted or not), for examples and messages."""
