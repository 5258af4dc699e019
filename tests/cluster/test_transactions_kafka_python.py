"""Issue 27 item 3 with another client: kafka-python's transactional producer over three nodes.

The topic's three partitions are led by the three nodes, so the coordinator writes one marker itself and
forwards two. kafka-python commits, aborts and commits again, bootstrapped at a node that is not the
transactional id's coordinator; a read_committed kafka-python consumer bootstrapped at yet another node reads
the committed records once and no aborted one, a read_uncommitted one reads both (the aborted ones were
written)."""

from __future__ import annotations

import asyncio
import time

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from groupcoord.server.storage.shards import shard_of
from tests.cluster.helpers import shard_owner, start_nodes, wait_balanced, wait_partitions_spread

pytestmark = [pytest.mark.integration]

TXN_ID = "tx-kafka-python"


def run_transactions(bootstrap: str, topic: str, partitions: int) -> None:
    p = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=TXN_ID, acks="all", max_block_ms=90_000)
    try:
        p.init_transactions()
        for n, outcome in enumerate(("commit", "abort", "commit")):
            p.begin_transaction()
            for i in range(30):
                p.send(topic, value=b"%s-%d-%d" % (outcome.encode(), n, i), partition=i % partitions)
            if outcome == "commit":
                p.commit_transaction()
            else:
                p.flush(90)  # the aborted records are in the log before the ABORT markers
                p.abort_transaction()
    finally:
        p.close(30)


def read_all(bootstrap: str, topic: str, partitions: int, isolation: str) -> list[bytes]:
    """Every record from the start to each partition's end as `isolation` sees it (the last stable offset for
    read_committed): a position to reach, not a quiet spell."""
    c = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation, enable_auto_commit=False)
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        c.assign(tps)
        c.seek_to_beginning(*tps)
        end = c.end_offsets(tps)
        out: list[bytes] = []
        deadline = time.monotonic() + 90
        while any(c.position(tp) < end[tp] for tp in tps):
            assert time.monotonic() < deadline, f"{isolation}: {[c.position(tp) for tp in tps]} of {end}"
            for msgs in c.poll(timeout_ms=200).values():
                out += [m.value for m in msgs]
        return out
    finally:
        c.close()


async def test_kafka_python_transactions_over_three_leaders(server_factory, pg_url: str) -> None:
    nodes = start_nodes(server_factory, pg_url, 3, "--topic", "kp:3")
    await wait_balanced(pg_url, list(nodes), timeout=90)
    leaders = await wait_partitions_spread(pg_url, "kp", 3, list(nodes), timeout=60)
    assert {owner for owner, _ in leaders.values()} == set(nodes)  # two of three markers are forwarded
    coordinator = await shard_owner(pg_url, shard_of(TXN_ID, 50))
    producing, reading = (n for n in nodes if n != coordinator)
    await asyncio.to_thread(run_transactions, nodes[producing].bootstrap, "kp", 3)
    committed = sorted(b"commit-%d-%d" % (n, i) for n in (0, 2) for i in range(30))
    got = await asyncio.to_thread(read_all, nodes[reading].bootstrap, "kp", 3, "read_committed")
    assert sorted(got) == committed
    everything = await asyncio.to_thread(read_all, nodes[coordinator].bootstrap, "kp", 3, "read_uncommitted")
    assert sorted(everything) == sorted([*committed, *(b"abort-1-%d" % i for i in range(30))])
