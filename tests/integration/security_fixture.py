"""A server with four listeners (SASL_SSL, SASL_PLAINTEXT, SSL with client certificates, PLAINTEXT), SCRAM
users made with --add-scram and PLAIN users from --sasl-jaas-config; the certificates are made per test."""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass

from groupcoord.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from groupcoord.protocol.messages.sasl_handshake import SaslHandshakeRequest
from tests.conftest import ServerProcess, free_port
from tests.integration.certs import Certs, make_certs
from tests.integration.helpers import RawClient

SCRAM_USER, SCRAM_PASSWORD = "alice", "alice-secret"
PLAIN_USER, PLAIN_PASSWORD = "bob", "bob-secret"


@dataclass
class SecureServer:
    srv: ServerProcess
    certs: Certs
    sasl_ssl: int
    sasl_plain: int
    mtls: int
    plain: int


def start_secure_server(tmp_path, *extra: str, users: tuple[tuple[str, str], ...] = ()) -> SecureServer:  # type: ignore[no-untyped-def]
    """`users` are more SCRAM-SHA-256 users (name, password)."""
    certs = make_certs(tmp_path / "certs")
    more = "".join(f";SCRAM-SHA-256=[name={u},password={p}]" for u, p in users)
    ports = [free_port() for _ in range(4)]
    listeners = ",".join(
        f"{name}://127.0.0.1:{port}"
        for name, port in zip(("SASL_SSL", "SASL_PLAINTEXT", "SSL", "PLAINTEXT"), ports, strict=True)
    )
    srv = ServerProcess(
        tmp_path / "data",
        (
            "--listeners", listeners,
            "--ssl-keystore-location", str(certs.server_keystore),
            "--ssl-truststore-location", str(certs.ca),
            "--ssl-client-auth", "required",
            "--add-scram",
            f"SCRAM-SHA-256=[name={SCRAM_USER},password={SCRAM_PASSWORD}];"
            f"SCRAM-SHA-512=[name={SCRAM_USER},password={SCRAM_PASSWORD}]{more}",
            "--sasl-jaas-config",
            f'org.apache.kafka.common.security.plain.PlainLoginModule required user_{PLAIN_USER}="{PLAIN_PASSWORD}";',
            "--topic", "secure:2",
            *extra,
        ),
        port=ports[3],
    )  # fmt: skip
    srv.start()
    return SecureServer(srv, certs, *ports)


def handshake(port: int, mechanism: str) -> RawClient:
    c = RawClient("127.0.0.1", port)
    resp = c.request(17, 1, SaslHandshakeRequest(mechanism=mechanism))
    assert resp.error_code == 0 and mechanism in resp.mechanisms
    return c


def authenticate(c: RawClient, token: bytes):  # type: ignore[no-untyped-def]
    return c.request(36, 2, SaslAuthenticateRequest(auth_bytes=token))


def scram_client_final(server_first: bytes, client_first_bare: str, password: str) -> bytes:
    """The client side of RFC 5802 for SCRAM-SHA-256, written out for the tests."""
    attrs = dict(kv.split("=", 1) for kv in server_first.decode().split(","))
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), base64.b64decode(attrs["s"]), int(attrs["i"]))
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    without_proof = f"c=biws,r={attrs['r']}"
    auth = f"{client_first_bare},{server_first.decode()},{without_proof}".encode()
    signature = hmac.new(hashlib.sha256(client_key).digest(), auth, "sha256").digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()


def scram_login(port: int, password: str, nonce: str = "fyko+d2lbbFgONRv9qkxdawL", user: str = SCRAM_USER):  # type: ignore[no-untyped-def]
    """(connection, client-final, SaslAuthenticate answer to it) of a SCRAM-SHA-256 login."""
    c = handshake(port, "SCRAM-SHA-256")
    bare = f"n={user},r={nonce}"
    first = authenticate(c, f"n,,{bare}".encode())
    assert first.error_code == 0
    final = scram_client_final(first.auth_bytes, bare, password)
    return c, final, authenticate(c, final)
