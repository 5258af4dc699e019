"""The inter-broker settings (server/security/inter_broker.py): which listener the node registers and
forwards markers to, what Kafka refuses at start, the broker's login read from the JAAS config, and the
client side of the SASL login against a real node (good and bad credentials)."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

import pytest

from groupcoord.protocol.codec import decode_response, encode_request
from groupcoord.protocol.messages.api_versions import ApiVersionsRequest
from groupcoord.server.config import ServerConfig
from groupcoord.server.security import check_settings
from groupcoord.server.security.inter_broker import (
    InterBrokerAuthError,
    InterBrokerClient,
    choose_listener,
    jaas_option,
)
from tests.conftest import ServerProcess, free_port
from tests.integration.certs import make_certs, make_node_cert

LISTENERS = "INTERNAL://127.0.0.1:9093,EXTERNAL://127.0.0.1:9094"
MAP = "INTERNAL:SASL_PLAINTEXT,EXTERNAL:PLAINTEXT"
JAAS = (
    'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="s3\\"cret";'
)


def cfg(**kw: object) -> ServerConfig:
    base: dict[str, object] = {"listeners": LISTENERS, "listener_security_protocol_map": MAP}
    return ServerConfig(**{**base, **kw})  # type: ignore[arg-type]


def test_the_named_listener_is_the_inter_broker_one() -> None:
    c = cfg(inter_broker_listener_name="external")
    assert choose_listener(c, c.listener_list()).name == "EXTERNAL"
    c = cfg()
    assert choose_listener(c, c.listener_list()).name == "INTERNAL"  # neither set: the first listener
    c = ServerConfig(
        listeners="SSL://127.0.0.1:1,PLAINTEXT://127.0.0.1:2", security_inter_broker_protocol="PLAINTEXT"
    )
    assert choose_listener(c, c.listener_list()).name == "PLAINTEXT"


def test_the_broker_login_comes_from_the_jaas_config() -> None:
    assert jaas_option(JAAS, "username") == "admin"
    assert jaas_option(JAAS, "password") == 's3"cret'
    plain = 'PlainLoginModule required user_bob="x" username="admin" password="p";'
    assert jaas_option(plain, "username") == "admin"  # not user_bob's
    assert jaas_option('PlainLoginModule required user_bob="x";', "username") is None


@pytest.mark.parametrize(
    ("kw", "problem"),
    [
        (
            {"inter_broker_listener_name": "INTERNAL", "security_inter_broker_protocol": "PLAINTEXT"},
            "not both",
        ),
        ({"inter_broker_listener_name": "NOPE"}, "NOPE is not one of the listeners"),
        ({"security_inter_broker_protocol": "SSL"}, "SSL is not one of the listeners"),
        ({"security_inter_broker_protocol": "TLS"}, "must be one of PLAINTEXT"),
        ({"sasl_mechanism_inter_broker_protocol": "GSSAPI"}, "must be one of PLAIN, SCRAM"),
        ({"ssl_endpoint_identification_algorithm": "ldap"}, "must be https or empty"),
        ({"cluster": "postgresql://h/db"}, 'username="..." password="..."'),
        (
            {
                "cluster": "postgresql://h/db",
                "sasl_jaas_config": JAAS,
                "sasl_enabled_mechanisms": "SCRAM-SHA-256",
            },
            "PLAIN must be one of --sasl-enabled-mechanisms",
        ),
    ],
)
def test_settings_kafka_refuses(kw: dict[str, object], problem: str) -> None:
    c = cfg(**kw)
    assert any(problem in p for p in check_settings(c, c.listener_list())), check_settings(
        c, c.listener_list()
    )


def test_settings_that_start() -> None:
    for kw in (
        {},  # a single node never connects to another: no login needed
        {"cluster": "postgresql://h/db", "inter_broker_listener_name": "EXTERNAL"},
        {
            "cluster": "postgresql://h/db",
            "sasl_jaas_config": JAAS,
            "sasl_mechanism_inter_broker_protocol": "SCRAM-SHA-512",
        },
    ):
        c = cfg(**kw)  # type: ignore[arg-type]
        assert check_settings(c, c.listener_list()) == []


async def api_versions_over(client: InterBrokerClient, port: int) -> int:
    reader, writer = await client.connect("127.0.0.1", port)
    try:
        writer.write(encode_request(18, 0, 7, ApiVersionsRequest()))
        await writer.drain()
        size = int.from_bytes(await reader.readexactly(4), "big")
        correlation, resp = decode_response(await reader.readexactly(size), 18, 0)
        assert correlation == 7
        return resp.error_code
    finally:
        writer.close()


@pytest.mark.integration
async def test_login_to_a_sasl_listener(tmp_path: Path) -> None:
    """PLAIN and SCRAM-SHA-256/512 logins as the broker, then a request on the connection; a wrong password
    is refused with the node's message."""
    port = free_port()
    users = "SCRAM-SHA-256=[name=admin,password=pw];SCRAM-SHA-512=[name=admin,password=pw]"
    srv = ServerProcess(
        tmp_path / "data",
        (
            "--listeners", f"SASL_PLAINTEXT://127.0.0.1:{port}", "--add-scram", users,
            "--sasl-jaas-config", 'PlainLoginModule required user_admin="pw";',
        ),
        port=port,
    ).start()  # fmt: skip
    try:
        listeners = ServerConfig(listeners=f"SASL_PLAINTEXT://127.0.0.1:{port}").listener_list()
        for mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
            good = InterBrokerClient(listeners[0], mechanism, "admin", "pw", None)
            assert await api_versions_over(good, port) == 0
            bad = InterBrokerClient(listeners[0], mechanism, "admin", "wrong", None)
            with pytest.raises(InterBrokerAuthError, match="refused"):
                await asyncio.wait_for(bad.connect("127.0.0.1", port), 30)
    finally:
        srv.kill()


@pytest.mark.integration
async def test_login_over_tls_to_a_sasl_ssl_listener(tmp_path: Path) -> None:
    """SASL_SSL: the node's TLS context from its settings (trust store, host name checked), then SCRAM-SHA-512
    as the JAAS config's username; a node that trusts another CA cannot connect."""
    certs = make_certs(tmp_path / "certs")
    other = make_certs(tmp_path / "other")
    port = free_port()
    listeners = f"SASL_SSL://127.0.0.1:{port}"
    jaas = 'ScramLoginModule required username="admin" password="pw";'
    srv = ServerProcess(
        tmp_path / "data",
        (
            "--listeners", listeners, "--add-scram", "SCRAM-SHA-512=[name=admin,password=pw]",
            "--ssl-keystore-location", str(certs.server_keystore),
        ),
        port=port,
    ).start()  # fmt: skip
    try:
        for ca, ok in ((certs.ca, True), (other.ca, False)):
            node = ServerConfig(
                listeners=listeners,
                ssl_truststore_location=str(ca),
                sasl_jaas_config=jaas,
                sasl_mechanism_inter_broker_protocol="SCRAM-SHA-512",
            )
            client = InterBrokerClient.from_config(node, node.listener_list(), jaas)
            if ok:
                assert await api_versions_over(client, port) == 0
            else:
                with pytest.raises(ssl.SSLCertVerificationError):
                    await client.connect("127.0.0.1", port)
    finally:
        srv.kill()


@pytest.mark.integration
async def test_host_name_checked_unless_the_algorithm_is_empty(tmp_path: Path) -> None:
    """Kafka's ssl.endpoint.identification.algorithm: https (the default) refuses a certificate that does not
    name the host connected to; empty accepts it (it still chains to the trust store)."""
    certs = make_certs(tmp_path / "certs")
    keystore, _ = make_node_cert(tmp_path / "certs", "elsewhere", san="DNS:elsewhere.example")
    port = free_port()
    listeners = f"SSL://127.0.0.1:{port}"
    srv = ServerProcess(
        tmp_path / "data", ("--listeners", listeners, "--ssl-keystore-location", str(keystore)), port=port
    ).start()
    try:
        for algorithm, ok in (("https", False), ("", True)):
            node = ServerConfig(
                listeners=listeners,
                ssl_truststore_location=str(certs.ca),
                ssl_endpoint_identification_algorithm=algorithm,
            )
            client = InterBrokerClient.from_config(node, node.listener_list(), "")
            if ok:
                assert await api_versions_over(client, port) == 0
            else:
                with pytest.raises(
                    ssl.SSLCertVerificationError, match=r"Hostname mismatch|IP address mismatch"
                ):
                    await client.connect("127.0.0.1", port)
    finally:
        srv.kill()
