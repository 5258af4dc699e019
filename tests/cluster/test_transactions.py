"""Issue 27 item 3: transactions in cluster mode, with librdkafka (confluent-kafka) over three nodes.

The transactional id's coordinator is the owner of its shard; the topic's partitions are led by all three
nodes, so most markers are written through another node's lease (a forwarded WriteTxnMarkers). Committed
records are read once by read_committed consumers bootstrapped at every node, aborted ones never (a
read_uncommitted consumer proves they were written)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from groupcoord.server.storage.shards import shard_of
from tests.cluster.helpers import shard_owner, start_nodes, wait_balanced, wait_partitions_spread

pytestmark = [pytest.mark.integration]


def read_all(bootstrap: str | dict[str, Any], topic: str, partitions: int, isolation: str) -> list[bytes]:
    """Every record of `topic` up to each partition's end as `isolation` sees it (polls until the end);
    `bootstrap` is the servers, or a whole librdkafka config (security settings included)."""
    c = Consumer(
        {
            **(bootstrap if isinstance(bootstrap, dict) else {"bootstrap.servers": bootstrap}),
            "group.id": f"reader-{isolation}",
            "enable.auto.commit": False,
            "isolation.level": isolation,
            "enable.partition.eof": True,
        }
    )
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        out: list[bytes] = []
        at_end: set[int] = set()
        deadline = time.monotonic() + 90
        while len(at_end) < partitions:
            assert time.monotonic() < deadline, f"{isolation}: only partitions {at_end} reached their end"
            msg = c.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                if msg.error().code() == -191:  # _PARTITION_EOF
                    at_end.add(msg.partition())
                continue
            at_end.discard(msg.partition())
            out.append(msg.value())
        return out
    finally:
        c.close()


def run_transactions(bootstrap: str, topic: str, partitions: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "tx-spread", "acks": "all"})
    p.init_transactions(60)
    for n, outcome in enumerate(("commit", "abort", "commit")):
        p.begin_transaction()
        for i in range(30):
            p.produce(topic, value=b"%s-%d-%d" % (outcome.encode(), n, i), partition=i % partitions)
        if outcome == "commit":
            p.commit_transaction(60)
        else:
            p.flush(60)  # the aborted records are in the log before the ABORT markers
            p.abort_transaction(60)
    assert p.flush(30) == 0


async def test_transaction_over_partitions_led_by_three_nodes(server_factory, pg_url: str) -> None:
    nodes = start_nodes(server_factory, pg_url, 3, "--topic", "tx:3")
    await wait_balanced(pg_url, list(nodes))
    leaders = await wait_partitions_spread(pg_url, "tx", 3, list(nodes))
    assert {owner for owner, _ in leaders.values()} == set(nodes)  # every node leads one partition
    coordinator = await shard_owner(pg_url, shard_of("tx-spread", 50))
    bootstrap = next(n for n in nodes if n != coordinator)  # the client finds the coordinator itself
    await asyncio.to_thread(run_transactions, nodes[bootstrap].bootstrap, "tx", 3)
    committed = sorted(b"commit-%d-%d" % (n, i) for n in (0, 2) for i in range(30))
    for node in nodes.values():
        got = await asyncio.to_thread(read_all, node.bootstrap, "tx", 3, "read_committed")
        assert sorted(got) == committed
    everything = await asyncio.to_thread(read_all, nodes[coordinator].bootstrap, "tx", 3, "read_uncommitted")
    assert sorted(everything) == sorted([*committed, *(b"abort-1-%d" % i for i in range(30))])
