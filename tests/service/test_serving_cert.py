"""The serving certificate: the files given, or a self-signed one naming this host."""

from __future__ import annotations

import asyncio
import datetime
import pathlib
import socket
import ssl

import pytest
from cryptography import x509
from prometheus_client import CollectorRegistry

from kopf_scheduler.service.health import HealthServer
from kopf_scheduler.service.serving_cert import (
    ServingCertError,
    self_signed_pem,
    server_ssl_context,
)

NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)


def alternative_names(pem: bytes) -> tuple[list[str], list[str]]:
    certificate = x509.load_pem_x509_certificate(pem)
    names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return (
        names.get_values_for_type(x509.DNSName),
        [str(a) for a in names.get_values_for_type(x509.IPAddress)],
    )


@pytest.mark.parametrize(
    ("bind_address", "addresses"),
    [
        pytest.param("0.0.0.0", ["127.0.0.1", "::1"], id="all-interfaces"),
        pytest.param("10.1.2.3", ["10.1.2.3", "127.0.0.1", "::1"], id="one-address"),
        pytest.param("scheduler.example", ["127.0.0.1", "::1"], id="a-name"),
    ],
)
def test_a_self_signed_certificate_names_this_host(bind_address: str, addresses: list[str]) -> None:
    dns, ips = alternative_names(self_signed_pem(bind_address, NOW))

    assert dns == sorted({"localhost", socket.gethostname()})
    assert ips == addresses


def test_a_self_signed_certificate_is_valid_for_a_year() -> None:
    certificate = x509.load_pem_x509_certificate(self_signed_pem("0.0.0.0", NOW))

    assert certificate.not_valid_after_utc == NOW + datetime.timedelta(days=365)
    assert certificate.issuer == certificate.subject


async def test_a_given_certificate_and_key_are_served(tmp_path: pathlib.Path) -> None:
    pem = self_signed_pem("0.0.0.0", NOW)
    split = pem.index(b"-----BEGIN PRIVATE KEY-----")
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    cert.write_bytes(pem[:split])
    key.write_bytes(pem[split:])
    server = HealthServer(
        host="127.0.0.1",
        port=0,
        registry=CollectorRegistry(),
        is_synced=lambda: True,
        is_leader=lambda: True,
        ssl_context=server_ssl_context(str(cert), str(key), bind_address="0.0.0.0"),
    )
    await server.start()
    try:
        served = await asyncio.to_thread(ssl.get_server_certificate, ("127.0.0.1", server.port))
    finally:
        await server.stop()

    assert x509.load_pem_x509_certificate(served.encode()) == x509.load_pem_x509_certificate(pem)


@pytest.mark.parametrize(
    ("cert", "key", "message"),
    [
        pytest.param("tls.crt", None, "must be given together", id="certificate-without-key"),
        pytest.param(None, "tls.key", "must be given together", id="key-without-certificate"),
        pytest.param(
            "missing.crt",
            "missing.key",
            "cannot use --tls-cert-file=missing.crt with --tls-private-key-file=missing.key",
            id="missing-files",
        ),
    ],
)
def test_unusable_files_are_a_one_line_error(
    cert: str | None, key: str | None, message: str
) -> None:
    with pytest.raises(ServingCertError) as info:
        server_ssl_context(cert, key, bind_address="0.0.0.0")

    assert message in str(info.value)
    assert "\n" not in str(info.value)
