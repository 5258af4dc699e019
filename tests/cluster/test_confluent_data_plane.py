"""Issue 27 with librdkafka (confluent-kafka 2.16): an idempotent producer bootstrapped at one node follows the
partition leaders, goes on across the kill -9 of a leader (leader epochs, NOT_LEADER_OR_FOLLOWER), and a
consumer bootstrapped at another node reads every acknowledged record once."""

from __future__ import annotations

import asyncio
import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from tests.cluster.helpers import start_nodes, wait_partitions_spread

pytestmark = [pytest.mark.integration]


def produce(p: Producer, topic: str, values: range, partitions: int) -> list[tuple[int, int]]:
    """Send v<i> to partition i % partitions; (partition, offset) of each acknowledgement, in send order."""
    acks: dict[int, tuple[int, int] | KafkaError] = {}
    for i in values:

        def done(err, msg, i=i):  # type: ignore[no-untyped-def]
            acks[i] = err if err is not None else (msg.partition(), msg.offset())

        p.produce(topic, value=b"v%d" % i, partition=i % partitions, on_delivery=done)
    deadline = time.monotonic() + 120
    while len(acks) < len(values):
        assert time.monotonic() < deadline, f"{len(acks)} of {len(values)} acknowledged"
        p.poll(0.2)
    failed = {i: a for i, a in acks.items() if isinstance(a, KafkaError)}
    assert not failed, failed
    return [acks[i] for i in values]  # type: ignore[misc]


def consume(bootstrap: str, topic: str, partitions: int, count: int) -> list[tuple[int, int, bytes]]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        out: list[tuple[int, int, bytes]] = []
        deadline = time.monotonic() + 60
        while len(out) < count:
            assert time.monotonic() < deadline, f"read {len(out)} of {count}"
            msg = c.poll(0.5)
            if msg is not None and msg.error() is None:
                out.append((msg.partition(), msg.offset(), msg.value()))
        return sorted(out)
    finally:
        c.close()


async def test_librdkafka_follows_partition_leaders_across_a_kill(server_factory, pg_url: str) -> None:
    nodes = start_nodes(server_factory, pg_url, 3, "--topic", "rd:3")
    before = await wait_partitions_spread(pg_url, "rd", 3, list(nodes))
    victim = before[0][0]
    first = next(n for n in nodes if n != victim)  # bootstrapped at a survivor: it learns the rest from it
    p = Producer({"bootstrap.servers": nodes[first].bootstrap, "enable.idempotence": True, "acks": "all"})
    acked = await asyncio.to_thread(produce, p, "rd", range(30), 3)
    assert sorted(acked) == [(q, o) for q in range(3) for o in range(10)]
    nodes[victim].kill()
    survivors = [n for n in nodes if n != victim]
    after = await wait_partitions_spread(pg_url, "rd", 3, survivors, timeout=60)
    assert after[0][1] > before[0][1]
    acked = await asyncio.to_thread(produce, p, "rd", range(30, 60), 3)
    assert sorted(acked) == [(q, o) for q in range(3) for o in range(10, 20)]
    assert p.flush(30) == 0
    other = next(n for n in survivors if n != first)
    records = await asyncio.to_thread(consume, nodes[other].bootstrap, "rd", 3, 60)
    assert sorted(v for _, _, v in records) == sorted(b"v%d" % i for i in range(60))
    assert {(q, o) for q, o, _ in records} == {(q, o) for q in range(3) for o in range(20)}
