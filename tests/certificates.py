"""Certificates made at test time with the ``openssl`` command: a CA, and the certificates
it signs for a server on localhost and 127.0.0.1 and for a client; or a self-signed one.

Each is an EC P-256 key, valid for a day, in PEM files in a test's own directory.
"""

from __future__ import annotations

import secrets
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

OPENSSL_TIMEOUT = 60.0
SERVER_EXTENSIONS = "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"
CLIENT_EXTENSIONS = "extendedKeyUsage=clientAuth\n"


@dataclass(frozen=True)
class Certificate:
    cert: Path
    key: Path

    @property
    def pair(self) -> tuple[bytes, bytes]:
        """The private key and the certificate, as grpc's credentials take them."""
        return self.key.read_bytes(), self.cert.read_bytes()


@dataclass(frozen=True)
class Authority:
    """A CA and what it signed: a server certificate and a client certificate."""

    ca: Certificate
    server: Certificate
    client: Certificate


def authority(directory: Path, name: str) -> Authority:
    """A CA named ``name`` in ``directory``, with a server and a client certificate it signed."""
    directory.mkdir(parents=True, exist_ok=True)
    ca = _certificate_authority(directory, name)
    return Authority(
        ca,
        _signed(directory, f"{name}-server", ca, SERVER_EXTENSIONS),
        _signed(directory, f"{name}-client", ca, CLIENT_EXTENSIONS),
    )


def self_signed(directory: Path, name: str) -> Certificate:
    """A self-signed certificate (its own CA) for localhost and 127.0.0.1."""
    made = Certificate(directory / f"{name}.pem", directory / f"{name}.key")
    _openssl(
        *("req", "-x509", *_new_key(made.key), "-days", "1", "-subj", f"/CN={name}"),
        *("-out", str(made.cert), "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"),
    )
    return made


def _certificate_authority(directory: Path, name: str) -> Certificate:
    ca = Certificate(directory / f"{name}-ca.pem", directory / f"{name}-ca.key")
    _openssl(
        *("req", "-x509", *_new_key(ca.key), "-days", "1", "-subj", f"/CN={name} test CA"),
        *("-addext", "basicConstraints=critical,CA:TRUE"),
        *("-addext", "keyUsage=critical,keyCertSign,cRLSign", "-out", str(ca.cert)),
    )
    return ca


def _signed(directory: Path, name: str, ca: Certificate, extensions: str) -> Certificate:
    signed = Certificate(directory / f"{name}.pem", directory / f"{name}.key")
    request, extension_file = directory / f"{name}.csr", directory / f"{name}.ext"
    extension_file.write_text(extensions)
    _openssl("req", *_new_key(signed.key), "-subj", f"/CN={name}", "-out", str(request))
    _openssl(
        *("x509", "-req", "-in", str(request), "-CA", str(ca.cert), "-CAkey", str(ca.key)),
        *("-set_serial", str(secrets.randbits(63)), "-days", "1"),
        *("-extfile", str(extension_file), "-out", str(signed.cert)),
    )
    return signed


def _new_key(path: Path) -> tuple[str, ...]:
    return ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", str(path))


def _openssl(*args: str) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("the openssl command is not installed")
    subprocess.run([openssl, *args], check=True, capture_output=True, timeout=OPENSSL_TIMEOUT)
