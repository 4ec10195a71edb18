"""Client-side NATS credentials and TLS: creds files (never a password on a command line), files that hold
a secret (mode 0600), and a generated CA with a server certificate for `kpilot up --tls`.

A service started by `kpilot up` gets `--nats nats://127.0.0.1:PORT` on its command line and the path
of its creds file in `KPILOT_NATS_CREDS` (or `--creds-file`); with TLS, the CA in `KPILOT_NATS_CA`.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import ssl
from pathlib import Path

import msgspec

CREDS_ENV = "KPILOT_NATS_CREDS"
CA_ENV = "KPILOT_NATS_CA"


class AuthError(RuntimeError):
    """A creds or TLS file is missing, unreadable or too open; the message says how to fix it."""


def write_secret(path: Path, data: bytes) -> None:
    """Write a file that holds a secret: created mode 0600 (never world-readable, not even briefly),
    and an existing file's mode is narrowed to 0600 before it is rewritten."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


class UserCreds(msgspec.Struct):
    """What a creds file holds: one NATS user and its password."""

    user: str
    password: str


def read_creds_file(path: str | Path) -> UserCreds:
    """Load a creds file; refuse one that others can read."""
    p = Path(path)
    try:
        mode = p.stat().st_mode & 0o777
        data = p.read_bytes()
    except OSError as e:
        raise AuthError(f"cannot read the NATS creds file {p}: {e.strerror}. Fix: pass the file `kpilot up` "
                        f"wrote under <state-dir>/creds/ (--creds-file or ${CREDS_ENV}).") from None
    if mode & 0o077:
        raise AuthError(f"the NATS creds file {p} is readable by others (mode {mode:o}). Fix: chmod 600 {p}")
    try:
        return msgspec.json.decode(data, type=UserCreds)
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        raise AuthError(f"the NATS creds file {p} is not {{\"user\": ..., \"password\": ...}}: {e}. Fix: use "
                        f"the file `kpilot up` wrote under <state-dir>/creds/.") from None


def client_tls(ca_file: str | Path) -> ssl.SSLContext:
    """A client TLS context that trusts only `ca_file` (the CA `kpilot up --tls` generated)."""
    try:
        return ssl.create_default_context(cafile=str(ca_file))
    except (OSError, ssl.SSLError) as e:
        raise AuthError(f"cannot load the NATS CA {ca_file}: {e}. Fix: pass the ca.pem `kpilot up --tls` "
                        f"wrote under <state-dir>/tls/ (--tls-ca or ${CA_ENV}).") from None


class TlsFiles(msgspec.Struct, frozen=True):
    ca: str
    cert: str
    key: str


def make_tls(directory: Path, hosts: tuple[str, ...] = ("127.0.0.1", "localhost")) -> TlsFiles:
    """A new CA and a server certificate for `hosts` signed by it (EC P-256, 1 year), under `directory`;
    the two private keys mode 0600. Reused when they are already there."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    files = TlsFiles(ca=str(directory / "ca.pem"), cert=str(directory / "server.pem"),
                     key=str(directory / "server-key.pem"))
    if all(Path(f).exists() for f in (files.ca, files.cert, files.key)):
        return files
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kernelpilot stack CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=365))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False, encipher_only=False,
                                       decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = []
    for h in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            names.append(x509.DNSName(h))
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kernelpilot nats-server")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=365))
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    private = {"encoding": pem, "format": serialization.PrivateFormat.PKCS8,
               "encryption_algorithm": serialization.NoEncryption()}
    write_secret(directory / "ca-key.pem", ca_key.private_bytes(**private))
    write_secret(Path(files.key), key.private_bytes(**private))
    Path(files.ca).write_bytes(ca.public_bytes(pem))
    Path(files.cert).write_bytes(cert.public_bytes(pem))
    return files
