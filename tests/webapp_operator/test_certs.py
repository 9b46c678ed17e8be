"""The webhook's CA and serving certificate, generated with `cryptography`."""

from __future__ import annotations

import ipaddress
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID

from webapp_operator.certs import CertFiles, ensure_tls, generate_tls, needs_renewal


def test_leaf_is_signed_by_the_ca_for_the_given_hosts() -> None:
    bundle = generate_tls(["127.0.0.1", "webhook.webapp-system.svc"])
    ca = x509.load_pem_x509_certificate(bundle.ca_pem)
    leaf = x509.load_pem_x509_certificate(bundle.cert_pem)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert leaf.issuer == ca.subject
    leaf.verify_directly_issued_by(ca)
    san = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    assert san.get_values_for_type(x509.DNSName) == ["webhook.webapp-system.svc"]
    usage = leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert ExtendedKeyUsageOID.SERVER_AUTH in usage
    assert isinstance(leaf.public_key(), ec.EllipticCurvePublicKey)


def test_renewal_when_expiring_or_hosts_change() -> None:
    bundle = generate_tls(["127.0.0.1"])
    assert not needs_renewal(bundle.cert_pem, ["127.0.0.1"])
    assert needs_renewal(bundle.cert_pem, ["127.0.0.1", "10.0.0.1"])
    later = datetime.now(UTC) + timedelta(days=340)
    assert needs_renewal(bundle.cert_pem, ["127.0.0.1"], now=later)
    assert needs_renewal(b"not a certificate", ["127.0.0.1"])


def test_ensure_writes_once_and_keeps_the_key_private(tmp_path: Path) -> None:
    files = CertFiles(tmp_path / "certs")
    assert ensure_tls(files, ["127.0.0.1"]) is True
    first = files.cert.read_bytes()
    assert ensure_tls(files, ["127.0.0.1"]) is False
    assert files.cert.read_bytes() == first
    assert files.key.stat().st_mode & 0o777 == 0o600
    assert ensure_tls(files, ["127.0.0.1", "::1"]) is True
    assert files.cert.read_bytes() != first
