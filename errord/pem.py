"""TLS files checked with Python's ``ssl`` module before grpc reads them: grpc reports a
bad certificate, or a key that is not the certificate's, only as a failure to bind or to
connect. The daemon's listener and the operator commands name the files their own way;
the problems are worded here once.
"""

from __future__ import annotations

import ssl
from enum import Enum
from pathlib import Path


class PemFile(Enum):
    """Which file of a certificate and its key a problem is in."""

    CERT = "cert"
    KEY = "key"


def pair_problem(
    cert: Path, chain: bytes, key: Path, private_key: bytes, cert_name: str
) -> tuple[PemFile, str] | None:
    """What is wrong with the certificate chain ``chain`` (read from ``cert``, named
    ``cert_name`` in the text) and the private key ``private_key`` (read from ``key``): the
    file and the problem; None when they load as a pair."""
    if b"-----BEGIN CERTIFICATE-----" not in chain:
        return PemFile.CERT, "holds no PEM certificate"
    if b"PRIVATE KEY-----" not in private_key:
        return PemFile.KEY, "holds no PEM private key"
    if b"ENCRYPTED" in private_key:
        return PemFile.KEY, "is encrypted; grpc needs an unencrypted key"
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        # A password callback, so that a key encrypted after all fails instead of prompting.
        context.load_cert_chain(cert, key, password=lambda: b"")
    except ssl.SSLError as error:
        return PemFile.KEY, f"is not the private key of {cert_name} ({error.reason or error})"
    return None


def ca_problem(ca: Path) -> str | None:
    """What is wrong with ``ca`` as a file of CA certificates; None when it loads."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        context.load_verify_locations(cafile=ca)
    except ssl.SSLError as error:
        return f"holds no PEM CA certificate ({error.reason or error})"
    return None
