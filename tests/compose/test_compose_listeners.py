"""The compose stack serves clients in containers and on the host at once, through Kafka-style listeners:
INTERNAL://0.0.0.0:9092 advertised as coordinator:9092 (the compose network) and EXTERNAL://0.0.0.0:19092
advertised as localhost:19092 (published on 127.0.0.1:19092). make test-compose runs this from the clients
container (bootstrap coordinator:9092) and from the host's network (bootstrap localhost:19092), with
GROUPCOORD_COMPOSE_PHASE=listeners and the address that listener must advertise; it skips elsewhere."""

from __future__ import annotations

import os
import time

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic

from tests.integration.names import unique

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]
PHASE = os.environ.get("GROUPCOORD_COMPOSE_PHASE")


@pytest.mark.skipif(PHASE != "listeners", reason="compose phase: run by make test-compose per listener")
def test_a_client_consumes_as_a_group_through_the_listener_it_bootstrapped_from() -> None:
    bootstrap = os.environ["GROUPCOORD_COMPOSE_LISTENER"]
    advertised = os.environ["GROUPCOORD_COMPOSE_ADVERTISED"]
    topic, group = unique("listener"), unique("listener-g")
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, 2, 1)])
        brokers = admin.describe_cluster()["brokers"]
        assert [f"{b['host']}:{b['port']}" for b in brokers] == [advertised]
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        for i in range(20):
            producer.send(topic, value=b"m%d" % i, partition=i % 2)
        producer.flush(30)
    finally:
        producer.close()
    # a group member: FindCoordinator, JoinGroup, SyncGroup and Fetch all go to the advertised address
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        metadata_max_age_ms=500,  # a leader that joined before its metadata had the topic rejoins soon
    )
    seen: list[bytes] = []
    try:
        deadline = time.monotonic() + 60
        while len(seen) < 20:
            assert time.monotonic() < deadline, f"consumed {len(seen)} of 20 through {bootstrap}"
            for records in consumer.poll(500).values():
                seen += [r.value for r in records]
        consumer.commit()
    finally:
        consumer.close()
    assert sorted(seen) == sorted(b"m%d" % i for i in range(20))
