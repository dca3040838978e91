"""The TLS identity of the secure port: the certificate given, or a self-signed one.

kube-scheduler serves its port over HTTPS only; without ``--tls-cert-file`` it makes itself a
self-signed certificate at start-up. The same happens here: an ECDSA P-256 key and a certificate,
valid for a year, for ``localhost``, the loopback addresses, the host name (the pod's name in a
cluster) and the address served on. Probes and scrapers that do not verify the certificate
(kubelet's HTTPS probes never do; Prometheus scrapes kube-scheduler with
``insecure_skip_verify``) work with it; give a real certificate to have it verified.

Python's ``ssl`` loads certificates only from files. The generated pair goes to an anonymous
in-memory file (``memfd``) on Linux, or a private temporary file elsewhere, read once and closed,
so a container's root filesystem can stay read-only.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import socket
import ssl
import tempfile

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

VALIDITY = datetime.timedelta(days=365)


class ServingCertError(Exception):
    """The certificate or key cannot be used; the message names the file and the problem."""


def server_ssl_context(
    cert_file: str | None, key_file: str | None, *, bind_address: str
) -> ssl.SSLContext:
    """A server context with the given certificate and key, or a self-signed pair if neither."""
    if bool(cert_file) != bool(key_file):
        raise ServingCertError("--tls-cert-file and --tls-private-key-file must be given together")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if cert_file and key_file:
        try:
            context.load_cert_chain(cert_file, key_file)
        except (OSError, ssl.SSLError) as error:
            raise ServingCertError(
                f"cannot use --tls-cert-file={cert_file} with --tls-private-key-file={key_file}: "
                f"{error}"
            ) from None
        return context
    _load_pem(context, self_signed_pem(bind_address))
    return context


def self_signed_pem(bind_address: str, now: datetime.datetime | None = None) -> bytes:
    """A new key and a self-signed certificate for this host, both PEM, certificate first."""
    now = now or datetime.datetime.now(datetime.UTC)
    hostname = socket.gethostname()
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name(
        [x509.NameAttribute(NameOID.COMMON_NAME, f"{hostname}@{int(now.timestamp())}")]
    )
    dns_names = sorted({"localhost", hostname})
    addresses = {ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1")}
    try:
        address = ipaddress.ip_address(bind_address)
    except ValueError:
        pass
    else:
        if not address.is_unspecified:
            addresses.add(address)
    alternative_names: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
    alternative_names += [x509.IPAddress(a) for a in sorted(addresses, key=str)]
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.SubjectAlternativeName(alternative_names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return certificate.public_bytes(serialization.Encoding.PEM) + key_pem


def _load_pem(context: ssl.SSLContext, pem: bytes) -> None:
    memfd_create = getattr(os, "memfd_create", None)
    if memfd_create is not None:
        fd = memfd_create("kopf-scheduler-serving-cert", 0)
        try:
            os.write(fd, pem)
            context.load_cert_chain(f"/proc/self/fd/{fd}")
        finally:
            os.close(fd)
        return
    with tempfile.NamedTemporaryFile(prefix="kopf-scheduler-serving-") as handle:
        handle.write(pem)
        handle.flush()
        context.load_cert_chain(handle.name)
