"""TLS for the operator commands' channel: the files, checked before connecting, and what a
failed handshake means.

The files are checked with Python's ``ssl`` module first: grpc reports an
unreadable CA or a key that does not match only as "Failed to create security
handshaker". Each file remembers where it was named (``--tls-ca``, or the
config's ``client.tls_ca_file``), so that a problem names the flag or the setting.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import grpc

from errord.client_config import ClientSettings
from errord.errors import ErrordError
from errord.pem import PemFile, ca_problem, pair_problem

FLAGS = {"tls_ca_file": "--tls-ca", "tls_cert_file": "--tls-cert", "tls_key_file": "--tls-key"}
"""The flag of each ``[client]`` setting."""
_OPENSSL_REASON = re.compile(r"OPENSSL_internal:(?P<code>[A-Z0-9_]+)(?:: (?P<text>[^:]+))?")
_CLOSED = ("Socket closed", "Connection reset by peer", "Broken pipe", "Connection closed")
"""What grpc says of a connection the daemon closed before answering."""


class TLSFileError(ErrordError):
    """A TLS file of the commands cannot be read or does not hold what it should."""


@dataclass(frozen=True)
class TLSFile:
    """A PEM file, and what named it: a flag, or a setting in a file."""

    path: Path
    named_by: str
    """``--tls-ca``, or ``/etc/errord/errord.toml: client.tls_ca_file``."""

    def read(self) -> bytes:
        try:
            return self.path.read_bytes()
        except OSError as error:
            raise TLSFileError(f"{self}: cannot read: {error.strerror}") from None

    def __str__(self) -> str:
        return f"{self.named_by} {self.path}"


@dataclass(frozen=True)
class ClientTLS:
    """The CA to trust (None: the system's) and the client certificate to present."""

    ca: TLSFile | None = None
    cert: TLSFile | None = None
    key: TLSFile | None = None

    @classmethod
    def chosen(
        cls, flags: ClientSettings, config: ClientSettings, config_file: Path | None
    ) -> ClientTLS | None:
        """The files the flags name, else those of the config's ``[client]`` table; None for
        plaintext. The certificate and its key come together, from the flags or the config."""
        ca = _file(flags, "tls_ca_file", None) or _file(config, "tls_ca_file", config_file)
        pair, source = (flags, None) if flags.tls_cert_file else (config, config_file)
        tls = cls(ca, _file(pair, "tls_cert_file", source), _file(pair, "tls_key_file", source))
        return None if tls == cls() else tls

    def credentials(self) -> grpc.ChannelCredentials:
        """Channel credentials from the files, each checked first; raises TLSFileError."""
        roots = None
        if self.ca is not None:
            roots = self.ca.read()
            _check_ca(self.ca)
        chain = private_key = None
        if self.cert is not None and self.key is not None:
            chain, private_key = self.cert.read(), self.key.read()
            _check_pair(self.cert, chain, self.key, private_key)
        return grpc.ssl_channel_credentials(roots, private_key, chain)


def _file(settings: ClientSettings, setting: str, config_file: Path | None) -> TLSFile | None:
    """The file ``setting`` names: given by its flag (no ``config_file``) or in ``config_file``."""
    path: Path | None = getattr(settings, setting)
    if path is None:
        return None
    return TLSFile(path, f"{config_file}: client.{setting}" if config_file else FLAGS[setting])


def _check_ca(ca: TLSFile) -> None:
    problem = ca_problem(ca.path)
    if problem is not None:
        raise TLSFileError(f"{ca}: {problem}")


def _check_pair(cert: TLSFile, chain: bytes, key: TLSFile, private_key: bytes) -> None:
    problem = pair_problem(cert.path, chain, key.path, private_key, str(cert))
    if problem is not None:
        which, text = problem
        raise TLSFileError(f"{cert if which is PemFile.CERT else key}: {text}")


def unreachable(target: str, details: str, tls: ClientTLS | None) -> str:
    """What an UNAVAILABLE from connecting to ``target`` means, in one sentence."""
    if "handshake" in details.lower() or "Hostname Verification" in details:
        return _handshake_failed(target, details, tls)
    if details.startswith("failed to connect") and any(word in details for word in _CLOSED):
        return _closed(target, tls)
    return f"no errord answering at {target} ({details})"


def _handshake_failed(target: str, details: str, tls: ClientTLS | None) -> str:
    failed = f"TLS handshake with {target} failed"
    reason = _OPENSSL_REASON.search(details)
    code = reason["code"] if reason else ""
    if reason and code == "CERTIFICATE_VERIFY_FAILED":
        unsigned = f"{failed}: its certificate is not signed by a CA"
        why = reason["text"] or code
        if tls and tls.ca:
            return f"{unsigned} in {tls.ca} ({why})"
        return f"{unsigned} the system trusts ({why}); give --tls-ca"
    if "Hostname Verification" in details:
        return f"{failed}: its certificate is not for the host of {target}"
    if code == "WRONG_VERSION_NUMBER":
        return f"{failed}: it does not serve TLS; leave out --tls-ca, --tls-cert and --tls-key"
    return f"{failed} ({code or details})"


def _closed(target: str, tls: ClientTLS | None) -> str:
    closed = f"{target} closed the connection"
    if tls is None:
        return (
            f"{closed} without answering; if it serves TLS, give --tls-ca (and --tls-cert "
            "and --tls-key if it requires client certificates)"
        )
    if tls.cert is None:
        return (
            f"{closed} during the TLS handshake; if it requires client certificates, "
            "give --tls-cert and --tls-key"
        )
    return (
        f"{closed} during the TLS handshake; it may not accept {tls.cert}, which its "
        "tls_client_ca_file must have signed"
    )
