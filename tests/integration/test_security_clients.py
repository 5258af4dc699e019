"""aiokafka, kafka-python and confluent-kafka over SASL_SSL with SCRAM, SASL_PLAINTEXT with PLAIN and SSL with
client certificates (issue 18): each joins a group, commits and reads its offset back, as against Kafka."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.integration.helpers import describe_group
from tests.integration.security_fixture import (
    PLAIN_PASSWORD,
    PLAIN_USER,
    SCRAM_PASSWORD,
    SCRAM_USER,
    SecureServer,
    start_secure_server,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def secure(tmp_path_factory):  # type: ignore[no-untyped-def]
    s = start_secure_server(tmp_path_factory.mktemp("secure"))
    yield s
    s.srv.kill()


def aiokafka_join_commit(port: int, group: str, **security: object) -> int:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def run() -> int:
        consumer = AIOKafkaConsumer(
            "secure",
            bootstrap_servers=f"127.0.0.1:{port}",
            group_id=group,
            enable_auto_commit=False,
            **security,
        )
        await consumer.start()
        try:
            deadline = time.monotonic() + 30
            while not consumer.assignment() and time.monotonic() < deadline:
                await consumer.getmany(timeout_ms=200)
            assert consumer.assignment() == {TopicPartition("secure", 0), TopicPartition("secure", 1)}
            await consumer.commit({TopicPartition("secure", 0): 5})
            return await consumer.committed(TopicPartition("secure", 0))
        finally:
            await consumer.stop()

    return asyncio.run(run())


def test_aiokafka_over_sasl_ssl_with_scram_sha_256(secure: SecureServer) -> None:
    from aiokafka.helpers import create_ssl_context

    got = aiokafka_join_commit(
        secure.sasl_ssl,
        "aio-scram",
        security_protocol="SASL_SSL",
        sasl_mechanism="SCRAM-SHA-256",
        sasl_plain_username=SCRAM_USER,
        sasl_plain_password=SCRAM_PASSWORD,
        ssl_context=create_ssl_context(cafile=str(secure.certs.ca)),
    )
    assert got == 5


def test_aiokafka_over_mtls_with_a_client_certificate(secure: SecureServer) -> None:
    from aiokafka.helpers import create_ssl_context

    ctx = create_ssl_context(
        cafile=str(secure.certs.ca),
        certfile=str(secure.certs.client_cert),
        keyfile=str(secure.certs.client_key),
    )
    assert aiokafka_join_commit(secure.mtls, "aio-mtls", security_protocol="SSL", ssl_context=ctx) == 5
    assert f"User:{secure.certs.client_subject}" in secure.srv.log()  # Kafka's principal for the certificate


def test_kafka_python_over_sasl_ssl_with_scram_sha_512(secure: SecureServer) -> None:
    from kafka import KafkaConsumer, TopicPartition
    from kafka.errors import RebalanceInProgressError
    from kafka.structs import OffsetAndMetadata

    consumer = KafkaConsumer(
        bootstrap_servers=f"127.0.0.1:{secure.sasl_ssl}",
        group_id="kp-scram",
        enable_auto_commit=False,
        security_protocol="SASL_SSL",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_plain_username=SCRAM_USER,
        sasl_plain_password=SCRAM_PASSWORD,
        ssl_cafile=str(secure.certs.ca),
    )
    try:
        assert (
            "secure" in consumer.topics()
        )  # metadata first: kafka-python's leader assigns from what it knows
        consumer.subscribe(["secure"])
        deadline = time.monotonic() + 30
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(200)
        assert len(consumer.assignment()) == 2
        deadline = time.monotonic() + 60
        while True:  # a rebalance (kafka-python rejoins on a metadata change) fails the commit: poll, retry
            try:
                consumer.commit({TopicPartition("secure", 1): OffsetAndMetadata(8, "", -1)})
                break
            except RebalanceInProgressError:
                if time.monotonic() > deadline:
                    raise
                consumer.poll(200)
        assert consumer.committed(TopicPartition("secure", 1)) == 8
    finally:
        consumer.close()


def test_confluent_kafka_over_sasl_plaintext_with_plain(secure: SecureServer) -> None:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": f"127.0.0.1:{secure.sasl_plain}",
            "group.id": "cf-plain",
            "enable.auto.commit": False,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "PLAIN",
            "sasl.username": PLAIN_USER,
            "sasl.password": PLAIN_PASSWORD,
        }
    )
    try:
        consumer.subscribe(["secure"])
        deadline = time.monotonic() + 30
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
        assert len(consumer.assignment()) == 2
        consumer.commit(offsets=[TopicPartition("secure", 0, 3)], asynchronous=False)
        (got,) = consumer.committed([TopicPartition("secure", 0)], timeout=60)
        assert got.offset == 3
    finally:
        consumer.close()
    assert describe_group("127.0.0.1", secure.plain, "cf-plain")["state"] == "Empty"


def test_confluent_kafka_over_sasl_ssl_with_scram_sha_512(secure: SecureServer) -> None:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": f"127.0.0.1:{secure.sasl_ssl}",
            "group.id": "cf-scram",
            "enable.auto.commit": False,
            "security.protocol": "SASL_SSL",
            "sasl.mechanisms": "SCRAM-SHA-512",
            "sasl.username": SCRAM_USER,
            "sasl.password": SCRAM_PASSWORD,
            "ssl.ca.location": str(secure.certs.ca),
        }
    )
    try:
        consumer.subscribe(["secure"])
        deadline = time.monotonic() + 30
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
        assert len(consumer.assignment()) == 2
        consumer.commit(offsets=[TopicPartition("secure", 1, 4)], asynchronous=False)
        (got,) = consumer.committed([TopicPartition("secure", 1)], timeout=60)
        assert got.offset == 4
    finally:
        consumer.close()


def java_join_commit(port: int, group: str, *settings: str) -> dict:  # type: ignore[type-arg]
    from tests.integration import drivers

    cp = drivers.java_classpath()
    d = drivers.Driver(
        ["java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", cp, "SecureConsumerDriver",
         f"127.0.0.1:{port}", group, "secure", *settings]
    )  # fmt: skip
    try:
        d.finish(90)
    finally:
        d.kill()
    assert not d.of("error"), d.of("error")
    (event,) = d.of("committed")
    return event


def test_java_client_over_sasl_ssl_with_scram_sha_512(secure: SecureServer) -> None:
    event = java_join_commit(
        secure.sasl_ssl,
        "java-scram",
        "security.protocol=SASL_SSL",
        "sasl.mechanism=SCRAM-SHA-512",
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{SCRAM_USER}" password="{SCRAM_PASSWORD}";',
        "ssl.truststore.type=PEM",
        f"ssl.truststore.location={secure.certs.ca}",
    )
    assert event["assigned"] == 2 and event["offset"] == 5


def test_java_client_over_mtls(secure: SecureServer) -> None:
    key = secure.certs.client_key.read_text().strip()
    chain = secure.certs.client_cert.read_text().strip()
    event = java_join_commit(
        secure.mtls,
        "java-mtls",
        "security.protocol=SSL",
        "ssl.truststore.type=PEM",
        f"ssl.truststore.location={secure.certs.ca}",
        "ssl.keystore.type=PEM",
        f"ssl.keystore.key={key}",
        f"ssl.keystore.certificate.chain={chain}",
    )
    assert event["assigned"] == 2 and event["offset"] == 5


def test_a_client_without_a_certificate_is_refused_on_the_mtls_listener(secure: SecureServer) -> None:
    import socket
    import ssl

    from groupcoord.protocol.codec import encode_request
    from groupcoord.protocol.messages.api_versions import ApiVersionsRequest

    ctx = ssl.create_default_context(cafile=str(secure.certs.ca))
    with (
        socket.create_connection(("127.0.0.1", secure.mtls), timeout=10) as raw,
        pytest.raises((ssl.SSLError, ConnectionError)),
        ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        tls.sendall(encode_request(18, 0, 1, ApiVersionsRequest()))
        if not tls.recv(4):  # TLS 1.3: the refusal may arrive after the handshake, as a close
            raise ConnectionError("closed")
    assert secure.srv.alive()
