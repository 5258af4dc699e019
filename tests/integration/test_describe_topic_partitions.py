"""DescribeTopicPartitions (75) with raw frames: Kafka's paging (partition limit, cursor, NextCursor), empty
ELR lists, unknown and invalid names, the cursor checks, and the answer agreeing with Metadata."""

from __future__ import annotations

import pytest

from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from groupcoord.protocol.messages.describe_topic_partitions import (
    Cursor,
    DescribeTopicPartitionsRequest,
    TopicRequest,
)

from .helpers import RawClient
from .names import unique

pytestmark = pytest.mark.integration


def ask(*names: str, limit: int = 2000, cursor: Cursor | None = None) -> DescribeTopicPartitionsRequest:
    return DescribeTopicPartitionsRequest(
        topics=tuple(TopicRequest(n) for n in names), response_partition_limit=limit, cursor=cursor
    )


def create(c: RawClient, name: str, partitions: int) -> None:
    req = CreateTopicsRequest(topics=(CreatableTopic(name, partitions, -1),), timeout_ms=5000)
    assert c.request(19, 5, req).topics[0].error_code == 0


def test_pages_elr_and_errors(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory()
    c = RawClient(srv.host, srv.port)
    try:
        a, b = sorted((unique("dtp-a"), unique("dtp-b")))
        create(c, a, 3)
        create(c, b, 2)
        resp = c.request(75, 0, ask(b, a, "nope-" + a, "bad/name"))
        by_name = {t.name: t for t in resp.topics}
        assert [t.name for t in resp.topics] == sorted([a, b, "bad/name", "nope-" + a])  # in name order
        assert by_name["nope-" + a].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert by_name["bad/name"].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
        ta = by_name[a]
        assert (ta.error_code, ta.is_internal, [p.partition_index for p in ta.partitions]) == (
            0,
            False,
            [0, 1, 2],
        )
        assert ta.topic_id.int != 0 and ta.topic_authorized_operations > 0
        for p in ta.partitions:
            assert (p.error_code, p.eligible_leader_replicas, p.last_known_elr, p.offline_replicas) == (
                0,
                (),
                (),
                (),
            )
            assert p.replica_nodes == p.isr_nodes == (p.leader_id,)
        assert resp.next_cursor is None

        # paging: 2 partitions per page, the cursor goes on where the last page stopped
        page = c.request(75, 0, ask(a, b, limit=2))
        assert [(t.name, [p.partition_index for p in t.partitions]) for t in page.topics] == [(a, [0, 1])]
        assert page.next_cursor == Cursor(a, 2)
        page = c.request(75, 0, ask(a, b, limit=2, cursor=page.next_cursor))
        assert [(t.name, [p.partition_index for p in t.partitions]) for t in page.topics] == [
            (a, [2]),
            (b, [0]),
        ]
        assert page.next_cursor == Cursor(b, 1)
        page = c.request(75, 0, ask(a, b, limit=3, cursor=Cursor(b, 0)))
        assert [(t.name, len(t.partitions)) for t in page.topics] == [(b, 2)] and page.next_cursor is None
        # a full page stops before the next topic, naming it
        page = c.request(75, 0, ask(a, b, limit=3))
        assert [t.name for t in page.topics] == [a] and page.next_cursor == Cursor(b, 0)

        # every topic when none is named; a cursor outside the named topics, or negative, is refused
        every = c.request(75, 0, ask())
        assert {a, b, "__consumer_offsets"} <= {t.name for t in every.topics}
        assert next(t for t in every.topics if t.name == "__consumer_offsets").is_internal
        for bad in (ask(a, cursor=Cursor(b, 0)), ask(a, cursor=Cursor(a, -1))):
            refused = c.request(75, 0, bad)
            assert [(t.name, t.error_code) for t in refused.topics] == [(a, ErrorCode.INVALID_REQUEST)]
    finally:
        c.close()
