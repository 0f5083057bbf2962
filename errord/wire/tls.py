"""TLS for a TCP listener: the certificate, its key, and the CAs of required client certificates.

The files are checked with Python's ``ssl`` module first: grpc reports a bad
certificate or a key that does not match only as "Failed to bind to address".
"""

from __future__ import annotations

import ssl
from pathlib import Path

import grpc

from errord.errors import ConfigError


def server_credentials(cert: Path, key: Path, client_ca: Path | None) -> grpc.ServerCredentials:
    """Credentials for ``add_secure_port``; client certificates are required with ``client_ca``."""
    chain = read("tls_cert_file", cert)
    private_key = read("tls_key_file", key)
    check_pair(cert, chain, key, private_key)
    roots = None
    if client_ca is not None:
        roots = read("tls_client_ca_file", client_ca)
        check_client_ca(client_ca)
    return grpc.ssl_server_credentials(
        [(private_key, chain)], root_certificates=roots, require_client_auth=roots is not None
    )


def read(setting: str, path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise ConfigError(f"{setting}: cannot read {path}: {error.strerror}") from error


def check_pair(cert: Path, chain: bytes, key: Path, private_key: bytes) -> None:
    if b"-----BEGIN CERTIFICATE-----" not in chain:
        raise ConfigError(f"tls_cert_file: {cert} holds no PEM certificate")
    if b"PRIVATE KEY-----" not in private_key:
        raise ConfigError(f"tls_key_file: {key} holds no PEM private key")
    if b"ENCRYPTED" in private_key:
        raise ConfigError(f"tls_key_file: {key} is encrypted; grpc needs an unencrypted key")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        # A password callback, so that a key encrypted after all fails instead of prompting.
        context.load_cert_chain(cert, key, password=lambda: b"")
    except ssl.SSLError as error:
        raise ConfigError(
            f"tls_key_file: {key} does not load as the private key of tls_cert_file {cert} "
            f"({error.reason or error})"
        ) from error


def check_client_ca(client_ca: Path) -> None:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_verify_locations(cafile=client_ca)
    except ssl.SSLError as error:
        raise ConfigError(
            f"tls_client_ca_file: {client_ca} holds no PEM CA certificate ({error.reason or error})"
        ) from error
