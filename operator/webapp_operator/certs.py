"""The webhook's TLS material, generated with `cryptography`: a private CA and a serving cert.

The kube-apiserver only calls admission webhooks over HTTPS and verifies the server against
the `caBundle` of the ValidatingWebhookConfiguration. kopf can self-sign, but only through
oscrypto, which fails on OpenSSL 3; so the project makes its own: an ECDSA P-256 CA and a leaf
certificate whose SANs are the webhook's addresses (127.0.0.1 locally, the Service's DNS names
in a cluster).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["CertFiles", "TlsBundle", "ensure_tls", "generate_tls", "needs_renewal"]

VALIDITY = timedelta(days=365)
# Renew well before expiry, so a long-running local operator never serves an expired cert.
RENEW_BEFORE = timedelta(days=30)


@dataclass(frozen=True)
class TlsBundle:
    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes


@dataclass(frozen=True)
class CertFiles:
    """Where a bundle lives on disk: the files kopf's WebhookServer and the installer read."""

    directory: Path

    @property
    def ca(self) -> Path:
        return self.directory / "ca.crt"

    @property
    def cert(self) -> Path:
        return self.directory / "tls.crt"

    @property
    def key(self) -> Path:
        return self.directory / "tls.key"

    def exists(self) -> bool:
        return self.ca.is_file() and self.cert.is_file() and self.key.is_file()


_CA_KEY_USAGE = x509.KeyUsage(
    digital_signature=True,
    key_cert_sign=True,
    crl_sign=True,
    content_commitment=False,
    key_encipherment=False,
    data_encipherment=False,
    key_agreement=False,
    encipher_only=False,
    decipher_only=False,
)


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _san(hosts: Sequence[str]) -> x509.SubjectAlternativeName:
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return x509.SubjectAlternativeName(names)


def generate_tls(hosts: Sequence[str], *, now: datetime | None = None) -> TlsBundle:
    """A fresh CA and a serving certificate for `hosts` (IP addresses or DNS names)."""
    if not hosts:
        raise ValueError("a serving certificate needs at least one host")
    now = now or datetime.now(UTC)
    ca_key, leaf_key = _key(), _key()
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "webapp-operator webhook CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_CA_KEY_USAGE, critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]))
        .issuer_name(ca_name)
        .public_key(leaf_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(_san(hosts), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return TlsBundle(
        ca_pem=ca.public_bytes(serialization.Encoding.PEM),
        cert_pem=leaf.public_bytes(serialization.Encoding.PEM),
        key_pem=leaf_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )


def needs_renewal(cert_pem: bytes, hosts: Sequence[str], *, now: datetime | None = None) -> bool:
    """True when the cert expires soon or does not cover exactly these hosts."""
    now = now or datetime.now(UTC)
    try:
        cert = x509.load_pem_x509_certificate(cert_pem)
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (ValueError, x509.ExtensionNotFound):
        return True
    if cert.not_valid_after_utc - now < RENEW_BEFORE:
        return True
    return set(san) != set(_san(hosts))


def ensure_tls(files: CertFiles, hosts: Sequence[str]) -> bool:
    """Write a new bundle unless a valid one for `hosts` is there; True when written.

    The key is written owner-only; the files are replaced atomically so a running webhook
    server (which re-reads them) never sees half a certificate.
    """
    if files.exists() and not needs_renewal(files.cert.read_bytes(), hosts):
        return False
    bundle = generate_tls(hosts)
    files.directory.mkdir(parents=True, exist_ok=True)
    for path, data, mode in (
        (files.key, bundle.key_pem, 0o600),
        (files.cert, bundle.cert_pem, 0o644),
        (files.ca, bundle.ca_pem, 0o644),
    ):
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_bytes(data)
        tmp.chmod(mode)
        tmp.replace(path)
    return True
