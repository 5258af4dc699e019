"""confluent-kafka (librdkafka) transactions against groupcoord: the exactly-once loop with
send_offsets_to_transaction, an aborted transaction, and read_committed vs read_uncommitted consumers."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.integration.names import unique

pytestmark = [pytest.mark.integration]


def consume_all(bootstrap: str, topic: str, isolation: str, settle: float = 1.5) -> list[bytes]:
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{isolation}-{time.monotonic_ns()}",
            "isolation.level": isolation,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    c.assign([TopicPartition(topic, 0, 0)])
    got: list[bytes] = []
    quiet_until = time.monotonic() + settle
    try:
        while time.monotonic() < quiet_until:
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                got.append(m.value())
                quiet_until = time.monotonic() + settle
    finally:
        c.close()
    return got


def test_confluent_exactly_once_loop_and_abort(groupcoord_server) -> None:
    srv = groupcoord_server
    t_in, t_out, group, txid = unique("ck-in"), unique("ck-out"), unique("ck-eos"), unique("ck-app")
    plain = Producer({"bootstrap.servers": srv.bootstrap})
    for i in range(5):
        plain.produce(t_in, f"in-{i}".encode(), partition=0)
    assert plain.flush(10) == 0

    consumer = Consumer(
        {
            "bootstrap.servers": srv.bootstrap,
            "group.id": group,
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([t_in])
    producer = Producer({"bootstrap.servers": srv.bootstrap, "transactional.id": txid})
    producer.init_transactions(20)
    try:
        got = []
        deadline = time.monotonic() + 30
        while len(got) < 5 and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m)
        assert len(got) == 5
        producer.begin_transaction()
        for m in got:
            producer.produce(t_out, m.value().replace(b"in", b"out"), partition=0)
        producer.send_offsets_to_transaction(
            [TopicPartition(t_in, 0, got[-1].offset() + 1)], consumer.consumer_group_metadata(), 20
        )
        producer.commit_transaction(20)

        producer.begin_transaction()
        producer.produce(t_out, b"doomed", partition=0)
        assert producer.flush(20) == 0  # written (librdkafka purges unsent messages on abort)
        producer.send_offsets_to_transaction(
            [TopicPartition(t_in, 0, 42)], consumer.consumer_group_metadata(), 20
        )
        producer.abort_transaction(20)
        (committed,) = consumer.committed([TopicPartition(t_in, 0)], timeout=60)
        assert committed.offset == 5
    finally:
        consumer.close()
    assert consume_all(srv.bootstrap, t_out, "read_committed") == [f"out-{i}".encode() for i in range(5)]
    assert consume_all(srv.bootstrap, t_out, "read_uncommitted")[-1] == b"doomed"
