"""TLS for a TCP listener: the certificate, its key, and the CAs of required client certificates.

The files are checked with Python's ``ssl`` module first: grpc reports a bad
certificate or a key that does not match only as "Failed to bind to address".
"""

from __future__ import annotations

from pathlib import Path

import grpc

from errord.errors import ConfigError
from errord.pem import PemFile, ca_problem, pair_problem


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
    problem = pair_problem(cert, chain, key, private_key, f"tls_cert_file {cert}")
    if problem is not None:
        which, text = problem
        setting, path = ("tls_cert_file", cert) if which is PemFile.CERT else ("tls_key_file", key)
        raise ConfigError(f"{setting}: {path} {text}")


def check_client_ca(client_ca: Path) -> None:
    problem = ca_problem(client_ca)
    if problem is not None:
        raise ConfigError(f"tls_client_ca_file: {client_ca} {problem}")
