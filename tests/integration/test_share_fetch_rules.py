"""More ShareFetch rules over the wire: RENEW (v2 IsRenewAck with zero limits; refused with limits, and in v1),
incremental responses that leave idle partitions out, and the in-flight limit (a head record never
acknowledged stalls the partition until its lock expires)."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer

from groupcoord.protocol.messages.share_fetch import (
    ShareFetchPartition,
    ShareFetchRequest,
    ShareFetchTopic,
)

from .helpers import RawClient
from .test_share_fetch_wire import Member, acquired, b, topic_id

pytestmark = [pytest.mark.integration, pytest.mark.owns_server]
ACCEPT, RENEW = 1, 4


def produce(bootstrap: str, per_partition: dict[int, int], topic: str = "t") -> None:
    p = Producer({"bootstrap.servers": bootstrap})
    for part, n in per_partition.items():
        for i in range(n):
            p.produce(topic, value=f"p{part}-{i}".encode(), partition=part)
    assert p.flush(30) == 0


def raw_fetch(m: Member, version: int, **kw: object) -> object:
    part = ShareFetchPartition(partition_index=0, acknowledgement_batches=kw.pop("acks", ()))  # type: ignore[arg-type]
    req = ShareFetchRequest(
        group_id=m.group,
        member_id=m.member,
        share_session_epoch=m.epoch,
        topics=(ShareFetchTopic(topic_id=m.tid, partitions=(part,)),),
        **kw,  # type: ignore[arg-type]
    )
    r = m.c.request(78, version, req)
    if r.error_code == 0:
        m.epoch += 1
    return r


def test_renew_keeps_the_lock(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory(
        "--topic",
        "t:1",
        "--share-auto-offset-reset",
        "earliest",
        "--group-share-record-lock-duration-ms",
        "10000",
    )
    produce(srv.bootstrap, {0: 5})
    c = RawClient(srv.host, srv.port)
    tid = topic_id(c)
    u1, u2 = Member(srv, "u1", tid), Member(srv, "u2", tid)
    assert acquired(u1.fetch(max_wait_ms=5000)) == [(0, 4, 1)]
    # renewing with non-zero limits is a top-level INVALID_REQUEST
    bad = raw_fetch(u1, 2, is_renew_ack=True, max_bytes=0, max_records=10, acks=(b(0, 4, RENEW),))
    assert bad.error_code == 42  # type: ignore[attr-defined]
    # renew 6 s into the 10 s lock, then look 6 s later (past the first deadline): the lock still holds
    time.sleep(6)
    r = raw_fetch(u1, 2, is_renew_ack=True, max_bytes=0, acks=(b(0, 4, RENEW),))
    assert r.error_code == 0  # type: ignore[attr-defined]
    assert [p.acknowledge_error_code for t in r.responses for p in t.partitions] == [0]  # type: ignore[attr-defined]
    assert acquired(r) == []  # a renew fetches nothing
    time.sleep(6)
    assert acquired(u2.fetch(max_wait_ms=0)) == []
    # v1 has no RENEW: type 4 is INVALID_REQUEST for the partition
    r = raw_fetch(u1, 1, acks=(b(0, 0, RENEW),))
    assert [p.acknowledge_error_code for t in r.responses for p in t.partitions] == [42]  # type: ignore[attr-defined]
    assert u1.ack(b(0, 4, ACCEPT)).error_code == 0
    c.close()


def test_incremental_response_leaves_idle_partitions_out(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory("--topic", "t:2", "--share-auto-offset-reset", "earliest")
    produce(srv.bootstrap, {0: 3})
    c = RawClient(srv.host, srv.port)
    tid = topic_id(c)
    m = Member(srv, "u1", tid)
    parts = tuple(ShareFetchPartition(partition_index=i) for i in (0, 1))
    full = m.c.request(
        78,
        2,
        ShareFetchRequest(
            group_id="g", member_id="u1", share_session_epoch=0, max_wait_ms=3000, min_bytes=1, max_records=100,
            batch_size=100, topics=(ShareFetchTopic(topic_id=tid, partitions=parts),),
        ),
    )  # fmt: skip
    assert sorted(p.partition_index for t in full.responses for p in t.partitions) == [0, 1]  # full: both
    produce(srv.bootstrap, {0: 2})
    inc = m.c.request(
        78,
        2,
        ShareFetchRequest(
            group_id="g", member_id="u1", share_session_epoch=1, max_wait_ms=3000, min_bytes=1, max_records=100,
            batch_size=100,
        ),
    )  # fmt: skip
    listed = [
        (p.partition_index, [(a.first_offset, a.last_offset) for a in p.acquired_records])
        for t in inc.responses
        for p in t.partitions
    ]
    assert listed == [(0, [(3, 4)])]  # partition 1 is idle: left out at epoch 1
    c.close()


def test_in_flight_limit_stalls_until_the_head_lock_expires(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory(
        "--topic", "t:1", "--share-auto-offset-reset", "earliest",
        "--group-share-partition-max-record-locks", "100", "--group-share-record-lock-duration-ms", "2000",
    )  # fmt: skip
    produce(srv.bootstrap, {0: 150})
    c = RawClient(srv.host, srv.port)
    tid = topic_id(c)
    u1, u2 = Member(srv, "u1", tid), Member(srv, "u2", tid)
    assert acquired(u1.fetch(max_wait_ms=5000)) == [(0, 99, 1)]
    assert u1.ack(b(1, 99, ACCEPT)).error_code == 0
    started = time.monotonic()
    assert acquired(u2.fetch(max_wait_ms=500)) == []  # offset 0 holds the window: nothing new
    assert time.monotonic() - started >= 0.4  # it waited (without spinning) instead of answering at once
    got: list[tuple[int, int, int]] = []
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not got:
        got = acquired(u2.fetch(max_wait_ms=3000))
    assert got == [(0, 0, 2)]  # the expired head again; the window (0-99) is still full
    r = u2.fetch(acks=(b(0, 0, ACCEPT),), max_wait_ms=3000)
    assert acquired(r) == [(100, 149, 1)]  # SPSO passed 99: new records past the window
    c.close()


def test_record_limit_mode_acquires_exactly_max_records(server_factory) -> None:  # type: ignore[no-untyped-def]
    """ShareFetch v2 ShareAcquireMode 1 (record_limit, KIP-1206): never more than MaxRecords acquired, even
    inside one log batch; the rest of the batch stays AVAILABLE for the next fetch or member. v1 and
    batch_optimized (0) get the same exact budget here (docs/differences.md 66)."""
    srv = server_factory("--topic", "t:1", "--share-auto-offset-reset", "earliest")
    p = Producer({"bootstrap.servers": srv.bootstrap, "linger.ms": 200})
    for i in range(10):
        p.produce("t", value=f"r{i}".encode(), partition=0)
    assert p.flush(30) == 0
    c = RawClient(srv.host, srv.port)
    tid = topic_id(c)
    u1, u2 = Member(srv, "u1", tid), Member(srv, "u2", tid)
    common = {"max_wait_ms": 5000, "min_bytes": 1, "batch_size": 500}
    r = raw_fetch(u1, 2, share_acquire_mode=1, max_records=3, **common)
    assert acquired(r) == [(0, 2, 1)]
    r = raw_fetch(u2, 2, share_acquire_mode=1, max_records=4, **common)
    assert acquired(r) == [(3, 6, 1)]
    r = raw_fetch(u1, 2, share_acquire_mode=0, max_records=2, **common)
    assert acquired(r) == [(7, 8, 1)]
    r = raw_fetch(u2, 1, max_records=5, **common)
    assert acquired(r) == [(9, 9, 1)]
