"""ShareFetch/ShareAcknowledge over the wire against the real server (SHARE_GROUPS_SPEC.md §3-§5): share
sessions and epochs, acknowledgements piggy-backed and acknowledgement-only, exclusivity between members,
release and redelivery, a dropped connection releasing what it held, the long poll woken by a produce, and
kill -9 durability (an acknowledged record is never delivered again, an unacknowledged one is not lost)."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest
from confluent_kafka import Producer

from groupcoord.protocol.messages.metadata import MetadataRequest
from groupcoord.protocol.messages.share_acknowledge import (
    AcknowledgePartition,
    AcknowledgeTopic,
    ShareAcknowledgeRequest,
)
from groupcoord.protocol.messages.share_fetch import (
    AcknowledgementBatch,
    ShareFetchPartition,
    ShareFetchRequest,
    ShareFetchTopic,
)

from .helpers import RawClient

pytestmark = [pytest.mark.integration, pytest.mark.owns_server]

ACCEPT, RELEASE, REJECT = 1, 2, 3


def produce(bootstrap: str, n: int, topic: str = "t") -> None:
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(n):
        p.produce(topic, value=f"v{i}".encode(), partition=0)
    assert p.flush(30) == 0


def topic_id(c: RawClient, name: str = "t") -> uuid.UUID:
    md = c.request(3, 12, MetadataRequest(topics=None))
    return next(t.topic_id for t in md.topics if t.name == name)


class Member:
    """One share-group member speaking ShareFetch v2 / ShareAcknowledge v2 on its own connection."""

    def __init__(self, srv: Any, member_id: str, tid: uuid.UUID, group: str = "g") -> None:
        self.c = RawClient(srv.host, srv.port, timeout=90)
        self.member, self.tid, self.group, self.epoch = member_id, tid, group, 0

    def fetch(
        self, acks: tuple[AcknowledgementBatch, ...] = (), max_wait_ms: int = 0, max_records: int = 500
    ) -> Any:
        part = ShareFetchPartition(partition_index=0, acknowledgement_batches=acks)
        r = self.c.request(
            78,
            2,
            ShareFetchRequest(
                group_id=self.group,
                member_id=self.member,
                share_session_epoch=self.epoch,
                max_wait_ms=max_wait_ms,
                min_bytes=1,
                max_records=max_records,
                batch_size=max_records,
                topics=(ShareFetchTopic(topic_id=self.tid, partitions=(part,)),),
            ),
        )
        if r.error_code == 0 and self.epoch != -1:
            self.epoch += 1
        return r

    def ack(self, *batches: AcknowledgementBatch, epoch: int | None = None) -> Any:
        r = self.c.request(
            79,
            2,
            ShareAcknowledgeRequest(
                group_id=self.group,
                member_id=self.member,
                share_session_epoch=self.epoch if epoch is None else epoch,
                topics=(
                    AcknowledgeTopic(
                        topic_id=self.tid,
                        partitions=(
                            AcknowledgePartition(partition_index=0, acknowledgement_batches=batches),
                        ),
                    ),
                ),
            ),
        )
        if r.error_code == 0 and epoch is None:
            self.epoch += 1
        return r


def acquired(r: Any) -> list[tuple[int, int, int]]:
    return [
        (a.first_offset, a.last_offset, a.delivery_count)
        for t in r.responses
        for p in t.partitions
        for a in p.acquired_records
    ]


def ack_errors(r: Any) -> list[int]:
    return [
        p.acknowledge_error_code if hasattr(p, "acknowledge_error_code") else p.error_code
        for t in r.responses
        for p in t.partitions
    ]


def b(first: int, last: int, *types: int) -> AcknowledgementBatch:
    return AcknowledgementBatch(first_offset=first, last_offset=last, acknowledge_types=types)


def test_sessions_acks_release_and_exclusivity(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory("--topic", "t:1", "--share-auto-offset-reset", "earliest")
    produce(srv.bootstrap, 10)
    c = RawClient(srv.host, srv.port)
    tid = topic_id(c)
    u1, u2 = Member(srv, "u1", tid), Member(srv, "u2", tid)
    r = u1.fetch(max_wait_ms=5000)
    assert r.error_code == 0 and r.acquisition_lock_timeout_ms == 30000
    assert acquired(r) == [(0, 9, 1)]
    assert u2.fetch(max_wait_ms=200).responses[0].partitions[0].acquired_records == ()  # all held by u1
    # acks at epoch 0 are refused at the top level
    bad = Member(srv, "u3", tid)
    assert bad.fetch(acks=(b(0, 0, ACCEPT),)).error_code == 42
    # not the owner: INVALID_RECORD_STATE, nothing changes
    assert ack_errors(u2.ack(b(0, 9, ACCEPT))) == [121]
    # accept 0-4 and release 5 (piggy-backed on an ack-only fetch: zero limits, as Java sends), then u2 gets
    # 5 again with delivery count 2
    r = u1.fetch(acks=(b(0, 4, ACCEPT), b(5, 5, RELEASE)), max_records=0)
    assert acquired(r) == []
    assert ack_errors(r) == [0]
    r = u2.fetch(max_wait_ms=5000)
    assert acquired(r) == [(5, 5, 2)]
    # wrong session epoch: top-level INVALID_SHARE_SESSION_EPOCH; unknown session: SHARE_SESSION_NOT_FOUND
    assert u1.ack(b(6, 6, ACCEPT), epoch=u1.epoch + 5).error_code == 123
    assert Member(srv, "u9", tid).ack(b(0, 0, ACCEPT), epoch=3).error_code == 122
    assert Member(srv, "u9", tid).ack(b(0, 0, ACCEPT), epoch=0).error_code == 123
    # u1 closes its session with epoch -1: 6-9 accepted-or-released as acked, the rest released
    r = u1.ack(b(6, 7, REJECT), epoch=-1)
    assert r.error_code == 0 and ack_errors(r) == [0]
    assert u1.ack(b(8, 8, ACCEPT)).error_code == 122  # the session is gone
    r = u2.fetch(acks=(b(5, 5, ACCEPT),), max_wait_ms=5000)
    assert acquired(r) == [(8, 9, 2)]
    c.close()


def test_dropped_connection_releases_and_long_poll_wakes_on_produce(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory("--topic", "t:1")  # latest: records produced before the first fetch are skipped
    produce(srv.bootstrap, 3)
    c = RawClient(srv.host, srv.port)
    tid = topic_id(c)
    u1, u2 = Member(srv, "u1", tid), Member(srv, "u2", tid)
    assert acquired(u1.fetch()) == []
    result: dict[str, Any] = {}
    waiter = threading.Thread(target=lambda: result.setdefault("r", u1.fetch(max_wait_ms=60000)))
    started = time.monotonic()
    waiter.start()
    time.sleep(0.5)
    produce(srv.bootstrap, 4)
    waiter.join(90)
    first = acquired(result["r"])
    assert first and first[0][:1] == (3,)  # woken by the first append (the producer may send >1 batch)
    assert time.monotonic() - started < 45  # woken by the produce, not by the 60 s wait
    held = {o for f, la, _ in first for o in range(f, la + 1)}
    deadline = time.monotonic() + 20
    while held != {3, 4, 5, 6} and time.monotonic() < deadline:
        held |= {o for f, la, _ in acquired(u1.fetch(max_wait_ms=1000)) for o in range(f, la + 1)}
    assert held == {3, 4, 5, 6}
    u1.c.close()  # its session ends with the connection: 3-6 become available to u2
    deadline = time.monotonic() + 20
    got: list[tuple[int, int, int]] = []
    while time.monotonic() < deadline and not got:
        got = acquired(u2.fetch(max_wait_ms=1000))
    assert got == [(3, 6, 2)]
    c.close()


@pytest.mark.parametrize("storage", ["disk", "postgresql"])
def test_kill_9_keeps_acknowledged_and_unacknowledged(server_factory, request, storage: str) -> None:  # type: ignore[no-untyped-def]
    url = request.getfixturevalue("pg_url") if storage == "postgresql" else "disk"
    srv = server_factory("--topic", "t:1", "--share-auto-offset-reset", "earliest", "--storage", url)
    produce(srv.bootstrap, 20)
    c = RawClient(srv.host, srv.port)
    tid = topic_id(c)
    u1 = Member(srv, "u1", tid)
    assert acquired(u1.fetch(max_wait_ms=5000)) == [(0, 19, 1)]
    assert ack_errors(u1.ack(b(10, 19, ACCEPT))) == [0]  # answered only once durable
    assert ack_errors(u1.ack(b(0, 1, ACCEPT))) == [0]
    srv.kill()
    srv.start()
    c = RawClient(srv.host, srv.port)
    u2 = Member(srv, "u2", tid)
    got: list[tuple[int, int, int]] = []
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not got:
        got = acquired(u2.fetch(max_wait_ms=1000))
    # 0-1 and 10-19 were accepted: never again; 2-9 were acquired only: delivered again (count not kept)
    assert got == [(2, 9, 1)]
    c.close()


def test_delete_group_deletes_share_state(server_factory) -> None:  # type: ignore[no-untyped-def]
    """DeleteGroups on a share group: NON_EMPTY_GROUP with members; once empty the group and its share-partition
    state go, so a new group of that id starts afresh (share.auto.offset.reset again)."""
    from groupcoord.protocol.messages.delete_groups import DeleteGroupsRequest
    from groupcoord.protocol.messages.list_groups import ListGroupsRequest
    from groupcoord.protocol.messages.share_group_heartbeat import ShareGroupHeartbeatRequest

    srv = server_factory("--topic", "t:1", "--share-auto-offset-reset", "earliest")
    produce(srv.bootstrap, 5)
    c = RawClient(srv.host, srv.port)
    tid = topic_id(c)
    assert c.request(76, 1, ShareGroupHeartbeatRequest("g", "u1", 0, None, ("t",))).error_code == 0
    u1 = Member(srv, "u1", tid)
    assert acquired(u1.fetch(max_wait_ms=5000)) == [(0, 4, 1)]
    assert ack_errors(u1.ack(b(0, 4, ACCEPT))) == [0]
    assert c.request(42, 2, DeleteGroupsRequest(groups_names=("g",))).results[0].error_code == 68
    assert c.request(76, 1, ShareGroupHeartbeatRequest("g", "u1", -1, None, None)).error_code == 0
    assert c.request(42, 2, DeleteGroupsRequest(groups_names=("g",))).results[0].error_code == 0
    listed = c.request(16, 5, ListGroupsRequest(types_filter=("share",))).groups
    assert [g.group_id for g in listed] == []
    u2 = Member(srv, "u2", tid)
    assert acquired(u2.fetch(max_wait_ms=5000)) == [(0, 4, 1)]  # the accepted records: state was deleted
    c.close()
