"""docker-compose.cluster.yml as one Kafka cluster: three groupcoord nodes sharing one PostgreSQL, driven by
docker/test-compose-cluster.sh (part of make test-compose), which sets GROUPCOORD_COMPOSE_PHASE; the phases
skip in any other run.

* `cluster-load`: every node lists the three nodes and names the same leader for every partition of a new
  topic; then a producer bootstrapped at all three produces with acks=all. The script SIGKILLs (docker kill)
  the leader of partition 0 once this phase has written `ready` (the victim's id) to the shared directory and
  touches `killed` after; the phase keeps producing until every partition has taken acknowledged records
  after the kill (leadership moved, the producer refreshed its metadata and went on), then writes every
  acknowledged (partition, offset, value) to `acked.json`.
* `cluster-check`: every node given in GROUPCOORD_COMPOSE_BOOTSTRAP names the same leaders (none of them
  GROUPCOORD_COMPOSE_DEAD), a consumer bootstrapped at each one reads every acknowledged record at the offset
  it was acknowledged with and each value once, and a group bootstrapped at one node commits and a second
  group member bootstrapped elsewhere reads the committed offsets back.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.structs import OffsetAndMetadata

from groupcoord.protocol.messages.find_coordinator import FindCoordinatorRequest
from groupcoord.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from tests.integration.helpers import RawClient

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
PHASE = os.environ.get("GROUPCOORD_COMPOSE_PHASE")
RUN = os.environ.get("GROUPCOORD_COMPOSE_RUN", "")
BOOTSTRAP = os.environ.get("GROUPCOORD_COMPOSE_BOOTSTRAP", "")
SHARED = Path(os.environ.get("GROUPCOORD_COMPOSE_SHARED", "/tmp"))
PARTITIONS = 6


def _topic() -> str:
    return f"cluster-{RUN}"


def _addresses() -> list[tuple[str, int]]:
    out = []
    for a in BOOTSTRAP.split(","):
        host, _, port = a.strip().rpartition(":")
        out.append((host, int(port)))
    return out


def _metadata(host: str, port: int, topic: str) -> tuple[set[int], dict[int, tuple[int, int]]]:
    """(node ids listed, partition -> (leader, leader epoch)) as one node answers Metadata v9."""
    c = RawClient(host, port)
    try:
        meta = c.request(3, 9, MetadataRequest(topics=(MetadataRequestTopic(name=topic),)))
    finally:
        c.close()
    brokers = {b.node_id for b in meta.brokers}
    leaders = {p.partition_index: (p.leader_id, p.leader_epoch) for p in meta.topics[0].partitions}
    return brokers, leaders


def _same_view_everywhere(topic: str, nodes: set[int], timeout: float = 90) -> dict[int, tuple[int, int]]:
    """Until every node lists exactly `nodes` and names the same live leader (one of `nodes`) per partition."""
    deadline = time.monotonic() + timeout
    last: list[object] = []
    while True:
        try:
            views = [_metadata(h, p, topic) for h, p in _addresses()]
        except OSError as exc:  # a node still starting
            views, last = [], [repr(exc)]
        if views:
            last = list(views)
            first = views[0][1]
            if (
                all(brokers == nodes and leaders == first for brokers, leaders in views)
                and len(first) == PARTITIONS
                and all(leader in nodes for leader, _ in first.values())
            ):
                return first
        assert time.monotonic() < deadline, f"nodes disagree or lack leaders after {timeout}s: {last}"
        time.sleep(0.5)


@pytest.mark.skipif(PHASE != "cluster-load", reason="compose phase: run by docker/test-compose-cluster.sh")
async def test_a_producer_over_three_nodes_loses_nothing_acknowledged_when_a_leader_is_killed() -> None:
    topic = _topic()
    admin = AIOKafkaAdminClient(bootstrap_servers=BOOTSTRAP)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    finally:
        await admin.close()
    leaders = await asyncio.to_thread(_same_view_everywhere, topic, {1, 2, 3})
    producer = AIOKafkaProducer(
        bootstrap_servers=BOOTSTRAP, acks="all", enable_idempotence=True, request_timeout_ms=15000,
        metadata_max_age_ms=1000, linger_ms=5,
    )  # fmt: skip
    await producer.start()
    acked: list[tuple[int, int, str]] = []
    after_kill: set[int] = set()
    killed = SHARED / "killed"
    i = 0
    try:
        deadline = time.monotonic() + 180
        while not killed.exists() or len(after_kill) < PARTITIONS:
            assert time.monotonic() < deadline, f"partitions with acks after the kill: {sorted(after_kill)}"
            was_killed = killed.exists()
            sends = []
            for _ in range(PARTITIONS * 5):
                value = f"{RUN}-{i}"
                sends.append((value, await producer.send(topic, value.encode(), partition=i % PARTITIONS)))
                i += 1
            for value, fut in sends:
                try:
                    md = await fut
                except Exception:  # not acknowledged: no promise made, nothing to check
                    continue
                acked.append((md.partition, md.offset, value))
                if was_killed:
                    after_kill.add(md.partition)
            if len(acked) >= 200 and not (SHARED / "ready").exists():
                (SHARED / "ready").write_text(str(leaders[0][0]))  # the script kills this node now
    finally:
        await producer.stop()
        (SHARED / "acked.json").write_text(json.dumps(acked))
    assert len({v for _, _, v in acked}) == len(acked)


async def _read_all(bootstrap: str, topic: str, want: int) -> list[tuple[int, int, str]]:
    """Every record of `topic` up to each partition's log end, read from the beginning via `bootstrap`."""
    c = AIOKafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False)
    await c.start()
    try:
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        c.assign(tps)
        ends = await c.end_offsets(tps)
        out: list[tuple[int, int, str]] = []
        deadline = time.monotonic() + 120
        while [tp for tp in tps if await c.position(tp) < ends[tp]] or len(out) < want:
            assert time.monotonic() < deadline, f"read {len(out)} records via {bootstrap}; ends {ends}"
            for tp, records in (await c.getmany(timeout_ms=1000)).items():
                out += [(tp.partition, r.offset, r.value.decode()) for r in records]
        return out
    finally:
        await c.stop()


@pytest.mark.skipif(PHASE != "cluster-check", reason="compose phase: run by docker/test-compose-cluster.sh")
async def test_every_node_serves_every_acknowledged_record_and_the_same_metadata() -> None:
    topic = _topic()
    dead = {int(n) for n in os.environ.get("GROUPCOORD_COMPOSE_DEAD", "").split(",") if n}
    live = {1, 2, 3} - dead
    await asyncio.to_thread(_same_view_everywhere, topic, live)
    acked = {(p, o, v) for p, o, v in json.loads((SHARED / "acked.json").read_text())}
    assert acked, "the load phase acknowledged nothing"
    for address in BOOTSTRAP.split(","):
        got = await _read_all(address, topic, len(acked))
        values = [v for _, _, v in got]
        assert len(values) == len(set(values)), f"a value read twice via {address}"
        missing = acked - set(got)
        assert not missing, (
            f"{len(missing)} acknowledged records missing via {address}: {sorted(missing)[:5]}"
        )

    # a group bootstrapped at one node commits; one bootstrapped at another reads the same offsets back
    group = f"cluster-g-{RUN}-{'-'.join(map(str, sorted(live)))}"
    first, *rest = BOOTSTRAP.split(",")
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    committer = AIOKafkaConsumer(bootstrap_servers=first, group_id=group, enable_auto_commit=False)
    await committer.start()
    try:
        committer.assign(tps)
        await committer.commit({tp: OffsetAndMetadata(tp.partition + 1, "m") for tp in tps})
    finally:
        await committer.stop()
    reader = AIOKafkaConsumer(bootstrap_servers=rest[-1] if rest else first, group_id=group)
    await reader.start()
    try:
        deadline = time.monotonic() + 60
        for tp in tps:
            while (got := await reader.committed(tp)) is None:  # aiokafka: None while the group moves
                assert time.monotonic() < deadline, f"no committed offset for {tp}"
                await asyncio.sleep(0.25)
            assert got == tp.partition + 1
    finally:
        await reader.stop()


def _txn_id_coordinated_elsewhere(prefix: str, leaders: set[int], timeout: float = 90) -> str:
    """A transactional id whose coordinator (FindCoordinator, key type 1) is not the only leader in
    `leaders`: some of the transaction's markers then go to another node."""
    host, port = _addresses()[0]
    candidates = tuple(f"{prefix}-tx-{i}" for i in range(32))
    deadline = time.monotonic() + timeout
    while True:
        c = RawClient(host, port)
        try:
            found = c.request(10, 4, FindCoordinatorRequest(key_type=1, coordinator_keys=candidates))
        finally:
            c.close()
        for co in found.coordinators:
            if co.error_code == 0 and leaders - {co.node_id}:
                return co.key
        assert time.monotonic() < deadline, f"no transactional id coordinated away from {leaders}"
        time.sleep(0.5)


@pytest.mark.skipif(PHASE != "cluster-check", reason="compose phase: run by docker/test-compose-cluster.sh")
async def test_a_transaction_across_nodes_commits_and_an_aborted_one_stays_hidden() -> None:
    """Markers of partitions led by another node than the transaction's coordinator travel between the
    containers over the INTERNAL listener (inter.broker.listener.name): with a node advertising 127.0.0.1
    there, the marker would go back into the sender's own container and the commit would fail."""
    live = sorted({1, 2, 3} - {int(n) for n in os.environ.get("GROUPCOORD_COMPOSE_DEAD", "").split(",") if n})
    topic = f"cluster-txn-{RUN}-{'-'.join(map(str, live))}"
    admin = AIOKafkaAdminClient(bootstrap_servers=BOOTSTRAP)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    finally:
        await admin.close()
    leaders = await asyncio.to_thread(_same_view_everywhere, topic, set(live))
    # a new topic's partitions may all land on one node (each node aims at its share of every partition):
    # pick a transactional id whose coordinator leads none or only some of them, so markers are forwarded
    tid = await asyncio.to_thread(
        _txn_id_coordinated_elsewhere, topic, {lead for lead, _ in leaders.values()}
    )
    producer = AIOKafkaProducer(bootstrap_servers=BOOTSTRAP, transactional_id=tid, request_timeout_ms=30000)
    await producer.start()
    try:
        await producer.begin_transaction()  # aborted: must never be read committed
        for p in range(PARTITIONS):
            await producer.send_and_wait(topic, f"aborted-{p}".encode(), partition=p)
        await producer.abort_transaction()
        await producer.begin_transaction()
        for p in range(PARTITIONS):
            await producer.send_and_wait(topic, f"committed-{p}".encode(), partition=p)
        await producer.commit_transaction()
    finally:
        await producer.stop()
    reader = AIOKafkaConsumer(
        bootstrap_servers=BOOTSTRAP, auto_offset_reset="earliest", isolation_level="read_committed",
        enable_auto_commit=False,
    )  # fmt: skip
    await reader.start()
    try:
        reader.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
        seen: list[str] = []
        deadline = time.monotonic() + 120
        while len(seen) < PARTITIONS:
            assert time.monotonic() < deadline, f"read committed {seen}"
            for records in (await reader.getmany(timeout_ms=1000)).values():
                seen += [r.value.decode() for r in records]
        assert sorted(seen) == sorted(f"committed-{p}" for p in range(PARTITIONS))
    finally:
        await reader.stop()
