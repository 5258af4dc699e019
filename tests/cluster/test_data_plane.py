"""Issue 27: cluster mode's data plane. One leader per partition by lease, named alike by every node; data
requests elsewhere answer NOT_LEADER_OR_FOLLOWER; records in PostgreSQL, read alike by consumers bootstrapped
at different nodes; an acknowledged record survives kill -9 of its leader; a deposed leader cannot append."""

from __future__ import annotations

import asyncio
import logging
import signal
import struct
import time

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from groupcoord.protocol.codec import decode_response, encode_request
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages import delete_records as dr
from groupcoord.protocol.messages import fetch as fe
from groupcoord.protocol.messages import list_offsets as lo
from groupcoord.protocol.messages import offset_for_leader_epoch as ol
from groupcoord.protocol.messages import produce as pr
from groupcoord.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from tests.cluster.helpers import (
    AIOKAFKA_METADATA_MAX_AGE_MS,
    partition_leases,
    start_nodes,
    stored_batches,
    wait_partitions_spread,
)
from tests.conftest import ServerProcess
from tests.integration.helpers import RawClient, stop_aiokafka, wait_for_sync
from tests.log.log_helpers import make_batch

pytestmark = [pytest.mark.integration]
logging.getLogger("aiokafka").setLevel(logging.CRITICAL)


def produce_request(topic: str, partition: int, batch: bytes) -> pr.ProduceRequest:
    data = (
        pr.TopicProduceData(
            name=topic, partition_data=(pr.PartitionProduceData(index=partition, records=batch),)
        ),
    )
    return pr.ProduceRequest(transactional_id=None, acks=-1, timeout_ms=10000, topic_data=data)


def produce_error(c: RawClient, topic: str, partition: int, batch: bytes) -> tuple[int, int]:
    r = c.request(0, 8, produce_request(topic, partition, batch)).responses[0].partition_responses[0]
    return r.error_code, r.base_offset


def data_errors(c: RawClient, topic: str, partition: int) -> dict[str, int]:
    """The partition's error code from each data API, sent to this node."""
    fetched = c.request(
        1, 11,
        fe.FetchRequest(
            max_wait_ms=0, min_bytes=1,
            topics=(fe.FetchTopic(topic=topic, partitions=(
                fe.FetchPartition(partition=partition, fetch_offset=0, partition_max_bytes=1 << 20),)),),
        ),
    )  # fmt: skip
    listed = c.request(
        2, 5,
        lo.ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=(
            lo.ListOffsetsTopic(name=topic, partitions=(lo.ListOffsetsPartition(partition_index=partition, timestamp=-1),)),)),
    )  # fmt: skip
    epochs = c.request(
        23, 3,
        ol.OffsetForLeaderEpochRequest(topics=(
            ol.OffsetForLeaderTopic(topic=topic, partitions=(ol.OffsetForLeaderPartition(partition=partition, leader_epoch=0),)),)),
    )  # fmt: skip
    deleted = c.request(
        21, 1,
        dr.DeleteRecordsRequest(timeout_ms=5000, topics=(
            dr.DeleteRecordsTopic(name=topic, partitions=(dr.DeleteRecordsPartition(partition_index=partition, offset=0),)),)),
    )  # fmt: skip
    return {
        "produce": produce_error(c, topic, partition, make_batch(1))[0],
        "fetch": fetched.responses[0].partitions[0].error_code,
        "list_offsets": listed.topics[0].partitions[0].error_code,
        "offset_for_leader_epoch": epochs.topics[0].partitions[0].error_code,
        "delete_records": deleted.topics[0].partitions[0].error_code,
    }


def metadata_leaders(c: RawClient, topic: str) -> dict[int, tuple[int, int]]:
    meta = c.request(3, 9, MetadataRequest(topics=(MetadataRequestTopic(name=topic),)))
    return {p.partition_index: (p.leader_id, p.leader_epoch) for p in meta.topics[0].partitions}


def produced_ok(c: RawClient, topic: str, partition: int, batch: bytes, timeout: float = 30) -> int:
    """Produce until the leader answers NONE (it may still be loading the partition); the base offset."""
    deadline = time.monotonic() + timeout
    while True:
        code, base = produce_error(c, topic, partition, batch)
        if code == ErrorCode.NONE:
            return base
        assert code == ErrorCode.NOT_LEADER_OR_FOLLOWER, code
        assert time.monotonic() < deadline, "the leader never accepted the produce"
        time.sleep(0.1)


async def test_every_node_names_the_same_leaders_and_only_the_leader_serves_data(
    server_factory, pg_url: str
) -> None:
    nodes = start_nodes(server_factory, pg_url, 3, "--topic", "orders:3")
    leases = await wait_partitions_spread(pg_url, "orders", 3, list(nodes))
    clients = {n: RawClient(s.host, s.port) for n, s in nodes.items()}
    try:
        for n, c in clients.items():  # each node's map is refreshed every lease tick
            wait_for_sync(lambda c=c: metadata_leaders(c, "orders") == leases, 15, f"node {n}'s Metadata")
            assert all(epoch >= 1 for _, epoch in leases.values())
        for p, (leader, _) in leases.items():
            assert produced_ok(clients[leader], "orders", p, make_batch(2)) == 0
            for n, c in clients.items():
                if n != leader:
                    assert data_errors(c, "orders", p) == dict.fromkeys(
                        ("produce", "fetch", "list_offsets", "offset_for_leader_epoch", "delete_records"),
                        ErrorCode.NOT_LEADER_OR_FOLLOWER,
                    )
            assert await stored_batches(pg_url, "orders", p) == [(0, 1)]
    finally:
        for c in clients.values():
            c.close()


async def _consume(bootstrap: str, topic: str, partitions: int, count: int) -> list[tuple[int, int, bytes]]:
    """(partition, offset, value) of the first `count` records of `topic`, read from the beginning."""
    c = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        metadata_max_age_ms=AIOKAFKA_METADATA_MAX_AGE_MS,
    )
    await c.start()
    try:
        c.assign([TopicPartition(topic, p) for p in range(partitions)])
        out: list[tuple[int, int, bytes]] = []
        deadline = time.monotonic() + 60
        while len(out) < count:
            assert time.monotonic() < deadline, f"read {len(out)} of {count} records via {bootstrap}"
            got = await c.getmany(timeout_ms=1000)
            for tp, records in got.items():
                out += [(tp.partition, r.offset, r.value) for r in records]
        return sorted(out)
    finally:
        await stop_aiokafka(c)


async def test_consumers_at_different_nodes_read_the_same_records_and_they_survive_kill_9_of_a_leader(
    server_factory, pg_url: str
) -> None:
    nodes = start_nodes(server_factory, pg_url, 3, "--topic", "events:3")
    before = await wait_partitions_spread(pg_url, "events", 3, list(nodes))
    producer = AIOKafkaProducer(bootstrap_servers=nodes[1].bootstrap, acks="all", enable_idempotence=True)
    await producer.start()
    try:
        for i in range(30):
            await producer.send_and_wait("events", b"v%d" % i, partition=i % 3)
    finally:
        await producer.stop()
    seen = [await _consume(nodes[n].bootstrap, "events", 3, 30) for n in (2, 3)]
    assert seen[0] == seen[1]
    assert sorted(v for _, _, v in seen[0]) == sorted(b"v%d" % i for i in range(30))
    assert {(p, o) for p, o, _ in seen[0]} == {(p, o) for p in range(3) for o in range(10)}

    running = AIOKafkaProducer(
        bootstrap_servers=",".join(n.bootstrap for n in nodes.values()), acks="all", enable_idempotence=True
    )
    await running.start()
    await running.partitions_for("events")
    victim = before[0][0]  # the leader of partition 0 dies with everything on its disk
    nodes[victim].kill()
    survivors = [n for n in nodes if n != victim]
    after = await wait_partitions_spread(pg_url, "events", 3, survivors, timeout=60)
    for p, (leader, epoch) in after.items():
        if before[p][0] == victim:
            assert leader != victim and epoch > before[p][1]  # leader epochs move forward on takeover
    try:
        for i in range(30, 36):  # the running producer refreshes its metadata and goes on
            await running.send_and_wait("events", b"v%d" % i, partition=i % 3)
    finally:
        await running.stop()
    seen_after = await _consume(nodes[survivors[0]].bootstrap, "events", 3, 36)
    assert set(seen[0]) <= set(seen_after)  # every acknowledged record, at the offset it was given
    assert sorted(v for _, _, v in seen_after) == sorted(b"v%d" % i for i in range(36))


async def test_a_paused_deposed_leader_cannot_append(server_factory, pg_url: str) -> None:
    """SIGSTOP the leader past its lease; the other node takes the partition; a produce that reached the
    paused node is refused once it resumes and never lands in PostgreSQL, at the offset now free."""
    nodes = start_nodes(server_factory, pg_url, 2, "--topic", "t:1", "--cluster-lease-ttl-ms", "2000")
    leases = await wait_partitions_spread(pg_url, "t", 1, list(nodes))
    old_id, old_epoch = leases[0]
    new_id = next(n for n in nodes if n != old_id)
    old: ServerProcess = nodes[old_id]
    c = RawClient(old.host, old.port, timeout=60)
    try:
        assert produced_ok(c, "t", 0, make_batch(1)) == 0
        old.proc.send_signal(signal.SIGSTOP)
        try:
            c.correlation += 1  # a produce that waits in the paused node's socket buffer
            c.send_raw(encode_request(0, 8, c.correlation, produce_request("t", 0, make_batch(1))))
            deadline = time.monotonic() + 30
            while (await partition_leases(pg_url, "t")).get(0, (None, 0))[0] != new_id:
                assert time.monotonic() < deadline, "the other node did not take the partition over"
                await asyncio.sleep(0.2)
            assert (await partition_leases(pg_url, "t"))[0][1] > old_epoch
            new = nodes[new_id]
            c2 = RawClient(new.host, new.port)
            try:  # the new leader has loaded the partition: it serves the log end
                wait_for_sync(
                    lambda: _latest(c2, "t", 0) == (ErrorCode.NONE, 1), 30, "the new leader to load"
                )
            finally:
                c2.close()
        finally:
            old.proc.send_signal(signal.SIGCONT)
        size = struct.unpack(">i", c._read(4))[0]
        _, resp = decode_response(c._read(size), 0, 8)
        assert resp.responses[0].partition_responses[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    finally:
        c.close()
    assert await stored_batches(pg_url, "t", 0) == [(0, 0)]  # offset 1 was never taken by the deposed leader


def _latest(c: RawClient, topic: str, partition: int) -> tuple[int, int]:
    r = c.request(
        2, 5,
        lo.ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=(
            lo.ListOffsetsTopic(name=topic, partitions=(lo.ListOffsetsPartition(partition_index=partition, timestamp=-1),)),)),
    ).topics[0].partitions[0]  # fmt: skip
    return r.error_code, r.offset


async def test_two_members_of_one_group_bootstrapped_at_different_nodes_share_one_copy_of_the_data(
    server_factory, pg_url: str
) -> None:
    """The issue's complaint: members bootstrapped at different nodes read different data. Now the group's
    members together read each produced record exactly once, whichever node each one knows."""
    nodes = start_nodes(server_factory, pg_url, 3, "--topic", "work:4")
    await wait_partitions_spread(pg_url, "work", 4, list(nodes))
    producer = AIOKafkaProducer(bootstrap_servers=nodes[1].bootstrap, acks="all")
    await producer.start()
    try:
        for i in range(40):
            await producer.send_and_wait("work", b"w%d" % i, partition=i % 4)
    finally:
        await producer.stop()
    members = [
        AIOKafkaConsumer(
            "work", bootstrap_servers=nodes[n].bootstrap, group_id="shared", auto_offset_reset="earliest",
            enable_auto_commit=False, metadata_max_age_ms=AIOKAFKA_METADATA_MAX_AGE_MS,
        )
        for n in (2, 3)
    ]  # fmt: skip
    for m in members:
        await m.start()
    try:
        seen: list[list[tuple[int, int, bytes]]] = [[], []]
        deadline = time.monotonic() + 60
        while sum(map(len, seen)) < 40 or not all(m.assignment() for m in members):
            assert time.monotonic() < deadline, f"read {[len(x) for x in seen]} of 40"
            for i, m in enumerate(members):
                for tp, records in (await m.getmany(timeout_ms=200)).items():
                    seen[i] += [(tp.partition, r.offset, r.value) for r in records]
        assert not members[0].assignment() & members[1].assignment()
        values = sorted(v for part in seen for _, _, v in part)
        assert values == sorted(b"w%d" % i for i in range(40))  # each record once: one copy of the data
    finally:
        await stop_aiokafka(*members)


def _delete_records(c: RawClient, topic: str, partition: int, offset: int) -> tuple[int, int]:
    r = c.request(
        21, 1,
        dr.DeleteRecordsRequest(timeout_ms=5000, topics=(
            dr.DeleteRecordsTopic(name=topic, partitions=(dr.DeleteRecordsPartition(partition_index=partition, offset=offset),)),)),
    ).topics[0].partitions[0]  # fmt: skip
    return r.error_code, r.low_watermark


def _earliest(c: RawClient, topic: str, partition: int) -> tuple[int, int]:
    r = c.request(
        2, 5,
        lo.ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=(
            lo.ListOffsetsTopic(name=topic, partitions=(lo.ListOffsetsPartition(partition_index=partition, timestamp=-2),)),)),
    ).topics[0].partitions[0]  # fmt: skip
    return r.error_code, r.offset


async def test_delete_records_and_topic_deletion_hold_across_nodes(server_factory, pg_url: str) -> None:
    """DeleteRecords is durable in PostgreSQL: the next leader starts the log where it was cut; a topic
    deleted at one node is gone from every node's Metadata and from the database."""
    nodes = start_nodes(server_factory, pg_url, 2, "--topic", "cut:1")
    leases = await wait_partitions_spread(pg_url, "cut", 1, list(nodes))
    leader = leases[0][0]
    c = RawClient(nodes[leader].host, nodes[leader].port)
    try:
        for _ in range(4):
            produced_ok(c, "cut", 0, make_batch(2))
        assert _delete_records(c, "cut", 0, 5) == (ErrorCode.NONE, 5)
        assert _delete_records(c, "cut", 0, -1) == (ErrorCode.NONE, 8)  # up to the high watermark
    finally:
        c.close()
    assert await stored_batches(pg_url, "cut", 0) == [(6, 7)]  # the last batch stays: it holds the log end
    nodes[leader].kill()
    other = next(n for n in nodes if n != leader)
    await wait_partitions_spread(pg_url, "cut", 1, [other], timeout=60)
    c = RawClient(nodes[other].host, nodes[other].port)
    try:
        wait_for_sync(lambda: _earliest(c, "cut", 0) == (ErrorCode.NONE, 8), 30, "the new leader's log start")
        assert _latest(c, "cut", 0) == (ErrorCode.NONE, 8)
        assert produced_ok(c, "cut", 0, make_batch(1)) == 8
    finally:
        c.close()

    from groupcoord.protocol.messages import delete_topics as dt

    third = server_factory("--cluster", pg_url, "--node-id", "3")
    c = RawClient(nodes[other].host, nodes[other].port)
    c3 = RawClient(third.host, third.port)
    try:
        wait_for_sync(lambda: 0 in metadata_leaders(c3, "cut"), 30, "node 3 to know the topic")
        deleted = c.request(20, 4, dt.DeleteTopicsRequest(topic_names=("cut",), timeout_ms=5000))
        assert deleted.responses[0].error_code == ErrorCode.NONE
        wait_for_sync(
            lambda: _topic_error(c3, "cut") == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 30, "node 3 to forget it"
        )
    finally:
        c.close()
        c3.close()
    assert await stored_batches(pg_url, "cut", 0) == []
    assert await partition_leases(pg_url, "cut") == {}


def _topic_error(c: RawClient, topic: str) -> int:
    request = MetadataRequest(topics=(MetadataRequestTopic(name=topic),), allow_auto_topic_creation=False)
    return c.request(3, 9, request).topics[0].error_code
