"""A server with four listeners (SASL_SSL, SASL_PLAINTEXT, SSL with client certificates, PLAINTEXT), SCRAM
users made with --add-scram and PLAIN users from --sasl-jaas-config; the certificates are made per test."""

from __future__ import annotations

from dataclasses import dataclass

from tests.conftest import ServerProcess, free_port
from tests.integration.certs import Certs, make_certs

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


def start_secure_server(tmp_path, *extra: str) -> SecureServer:  # type: ignore[no-untyped-def]
    certs = make_certs(tmp_path / "certs")
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
            f"SCRAM-SHA-512=[name={SCRAM_USER},password={SCRAM_PASSWORD}]",
            "--sasl-jaas-config",
            f'org.apache.kafka.common.security.plain.PlainLoginModule required user_{PLAIN_USER}="{PLAIN_PASSWORD}";',
            "--topic", "secure:2",
            *extra,
        ),
        port=ports[3],
    )  # fmt: skip
    srv.start()
    return SecureServer(srv, certs, *ports)
