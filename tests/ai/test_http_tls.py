"""The shared client's SSL context (``DeferredTrustContext``) trusts exactly what httpx's default
context trusts, loads it before the first handshake and not before, and really verifies: real
TLS handshakes with a loopback server whose certificate is trusted or not."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from loopback import LoopbackServer, sse

from pi_notebook.ai.http import DeferredTrustContext, get_client

SETTINGS = ("protocol", "verify_mode", "check_hostname", "options", "verify_flags")


@pytest.fixture(autouse=True)
def _no_trust_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)


def test_it_has_httpxs_settings_and_certificates_once_loaded() -> None:
    deferred, reference = DeferredTrustContext(), httpx.create_ssl_context()
    assert deferred.cert_store_stats()["x509_ca"] == 0  # nothing parsed yet
    deferred.load_trust()
    for name in (*SETTINGS, "minimum_version", "maximum_version", "keylog_filename"):
        assert getattr(deferred, name) == getattr(reference, name), name
    assert deferred.cert_store_stats() == reference.cert_store_stats()
    assert sorted(deferred.get_ca_certs(binary_form=True)) == sorted(reference.get_ca_certs(binary_form=True))


async def test_a_plain_http_request_loads_no_certificate(loopback: LoopbackServer) -> None:
    loopback.queue_sse([sse({"ok": True})])
    client = get_client()
    response = await client.get(f"{loopback.url}/v1/x")
    assert response.status_code == 200
    context = client._transport._pool._ssl_context  # type: ignore[attr-defined]
    assert isinstance(context, DeferredTrustContext)
    assert context.cert_store_stats()["x509_ca"] == 0


def _self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 that is its own authority, and its key (PEM files)."""
    pytest.importorskip("cryptography")
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    loopback_name = x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "pi-notebook test")])
    now = datetime.datetime.now(datetime.UTC)
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(loopback_name, critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(ski, critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path


@pytest.fixture
async def tls_server(tmp_path: Path) -> AsyncIterator[tuple[str, Path]]:
    """``(url, certificate)`` of a loopback HTTPS server that answers every request with 200."""
    cert_path, key_path = _self_signed(tmp_path)
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(cert_path, key_path)

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok")
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=server_context)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"https://127.0.0.1:{port}/", cert_path
    finally:
        server.close()
        await server.wait_closed()


async def test_a_server_it_does_not_trust_fails_the_handshake(tls_server: tuple[str, Path]) -> None:
    url, _ = tls_server
    async with httpx.AsyncClient(verify=DeferredTrustContext()) as client:
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await client.get(url)


async def test_ssl_cert_file_is_read_at_the_first_handshake(
    tls_server: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, cert_path = tls_server
    context = DeferredTrustContext()  # built before the variable is set, as a client may be
    monkeypatch.setenv("SSL_CERT_FILE", str(cert_path))
    async with httpx.AsyncClient(verify=context) as client:
        response = await client.get(url)
    assert (response.status_code, response.text) == (200, "ok")
    assert context.cert_store_stats()["x509_ca"] == 1
