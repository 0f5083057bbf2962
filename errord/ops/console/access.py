"""Who may read the console: whoever holds the operator token.

The console shows what operator calls show (every turn's trace, the breakers, memory),
so it asks for the same token: ``token_file``'s, or the operator token errord made
beside its database (errord.wire.access). A request presents it one of three ways:

- ``Authorization: Bearer <token>``, as scripts and curl send it;
- a session cookie, which a browser gets by presenting the token once: pasted into the
  form that every page without it answers (401), or as ``?token=`` on any page's URL,
  which is answered with the cookie and a redirect to the same URL without the token
  (so that it stays out of the history and the address bar);
- nothing else: every other request is answered 401.

The cookie holds no token: ``v1.<expiry>.<HMAC-SHA256 of the expiry, keyed with the
token>``. It is HttpOnly (no script reads it), SameSite=Strict (no other site's page
sends it, so no other site can make a browser read the console), Secure over TLS, and
lasts SESSION_SECONDS. Changing the token ends every session; a console session cannot
make the operator's gRPC calls.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final

SESSION_SECONDS: Final = 12 * 3600
"""How long a console session lasts after the token was presented."""
COOKIE: Final = "errord_console"
SECURE_COOKIE: Final = "__Host-errord_console"
"""The cookie's name over TLS: the __Host- prefix pins it to this host, path / and Secure."""
VERSION: Final = "v1"


@dataclass(frozen=True)
class ConsoleAccess:
    """Checks tokens and sessions against the operator's ``token``."""

    token: str = field(repr=False)
    secure: bool = False
    """True over TLS: the cookie is Secure (and __Host- prefixed)."""
    clock: Callable[[], float] = time.time

    @property
    def cookie_name(self) -> str:
        return SECURE_COOKIE if self.secure else COOKIE

    def is_token(self, presented: str) -> bool:
        # bytes: compare_digest refuses str with non-ASCII characters.
        return hmac.compare_digest(presented.strip().encode(), self.token.encode())

    def bearer(self, headers: Mapping[str, str]) -> bool | None:
        """Whether ``headers`` carry the token as ``Authorization: Bearer``; None when they
        carry no bearer token at all."""
        scheme, _, presented = headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer":
            return None
        return self.is_token(presented)

    def session(self) -> str:
        """A new session cookie's value."""
        expires = int(self.clock()) + SESSION_SECONDS
        return f"{VERSION}.{expires}.{self._signature(expires)}"

    def in_session(self, cookies: Mapping[str, str]) -> bool:
        """Whether ``cookies`` hold a session this token signed that has not expired."""
        version, _, rest = cookies.get(self.cookie_name, "").partition(".")
        expires, _, signature = rest.partition(".")
        if version != VERSION or not expires.isdigit():
            return False
        if int(expires) <= self.clock():
            return False
        return hmac.compare_digest(signature.encode(), self._signature(int(expires)).encode())

    def _signature(self, expires: int) -> str:
        message = f"errord console session {expires}".encode()
        return hmac.new(self.token.encode(), message, hashlib.sha256).hexdigest()


def safe_next(target: str) -> str:
    """Where to send a browser after it logged in: a path of this console, never another
    site (``//host``, ``/\\host``, a scheme)."""
    if not target.startswith("/") or target.startswith(("//", "/\\")):
        return "/"
    if any(character in target for character in "\r\n\t\\"):
        return "/"
    return target
