"""The share-group offsets admin APIs over the wire against the real server (SHARE_GROUPS_SPEC.md §6.2-§6.4,
scenarios 37-39): DescribeShareGroupOffsets v0/v1 (start offset, Kafka's lag, unknown topics, Topics null),
AlterShareGroupOffsets (NON_EMPTY_GROUP, unknown partitions, the next fetch starting at the new offset, kept
over a kill -9), DeleteShareGroupOffsets (NON_EMPTY_GROUP, no offset information, a fresh start after it),
and their ApiVersions rows."""

from __future__ import annotations

import time
from typing import Any

import pytest

from groupcoord.protocol.messages.alter_share_group_offsets import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsRequestPartition,
    AlterShareGroupOffsetsRequestTopic,
)
from groupcoord.protocol.messages.api_versions import ApiVersionsRequest
from groupcoord.protocol.messages.delete_share_group_offsets import (
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsRequestTopic,
)
from groupcoord.protocol.messages.describe_share_group_offsets import (
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequestGroup,
    DescribeShareGroupOffsetsRequestTopic,
)
from groupcoord.protocol.messages.share_group_heartbeat import ShareGroupHeartbeatRequest

from .helpers import RawClient
from .test_share_fetch_wire import ACCEPT, REJECT, Member, ack_errors, acquired, b, produce, topic_id

pytestmark = [pytest.mark.integration, pytest.mark.owns_server]

NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND, INVALID_GROUP_ID, UNKNOWN_TOPIC = 68, 69, 24, 3


def describe(
    c: RawClient, topics: dict[str, tuple[int, ...]] | None, version: int = 1, group: str = "g"
) -> Any:
    req_topics = (
        None
        if topics is None
        else tuple(
            DescribeShareGroupOffsetsRequestTopic(topic_name=n, partitions=ps) for n, ps in topics.items()
        )
    )
    r = c.request(
        90,
        version,
        DescribeShareGroupOffsetsRequest(
            groups=(DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=req_topics),)
        ),
    )
    [g] = r.groups
    return g


def rows(g: Any) -> dict[tuple[str, int], tuple[int, int, int]]:
    """(topic, partition) -> (start offset, lag, error)."""
    return {
        (t.topic_name, p.partition_index): (p.start_offset, p.lag, p.error_code)
        for t in g.topics
        for p in t.partitions
    }


def alter(c: RawClient, group: str, offsets: dict[str, dict[int, int]]) -> Any:
    return c.request(
        91,
        0,
        AlterShareGroupOffsetsRequest(
            group_id=group,
            topics=tuple(
                AlterShareGroupOffsetsRequestTopic(
                    topic_name=n,
                    partitions=tuple(
                        AlterShareGroupOffsetsRequestPartition(partition_index=p, start_offset=o)
                        for p, o in ps.items()
                    ),
                )
                for n, ps in offsets.items()
            ),
        ),
    )


def delete(c: RawClient, group: str, *topics: str) -> Any:
    return c.request(
        92,
        0,
        DeleteShareGroupOffsetsRequest(
            group_id=group, topics=tuple(DeleteShareGroupOffsetsRequestTopic(topic_name=t) for t in topics)
        ),
    )


def fetch_until(m: Member) -> list[tuple[int, int, int]]:
    got: list[tuple[int, int, int]] = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not got:
        got = acquired(m.fetch(max_wait_ms=1000))
    return got


def test_describe_alter_delete_share_group_offsets(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory(
        "--topic", "t:1", "--topic", "t2:2", "--share-auto-offset-reset", "earliest", "--storage", "disk"
    )
    produce(srv.bootstrap, 20)
    c = RawClient(srv.host, srv.port)
    versions = {
        k.api_key: (k.min_version, k.max_version)
        for k in c.request(18, 3, ApiVersionsRequest("groupcoord-test", "1")).api_keys
    }
    assert versions[90] == (0, 1) and versions[91] == (0, 0) and versions[92] == (0, 0)
    tid = topic_id(c)
    # no state yet: start offset -1, no error; an unknown topic: zero id, -1, no error
    assert rows(describe(c, {"t": (0,), "nope": (0,)})) == {("t", 0): (-1, -1, 0), ("nope", 0): (-1, -1, 0)}
    u1 = Member(srv, "u1", tid)
    assert acquired(u1.fetch(max_wait_ms=5000)) == [(0, 19, 1)]
    assert ack_errors(u1.ack(b(0, 4, ACCEPT), b(10, 11, REJECT))) == [0]
    # SPSO 5; lag = end 20 - SPSO 5 - 2 records done above it (Kafka's formula)
    g = describe(c, {"t": (0,)})
    assert g.error_code == 0 and rows(g) == {("t", 0): (5, 13, 0)}
    assert g.topics[0].topic_id == tid
    assert rows(describe(c, {"t": (0,)}, version=0)) == {("t", 0): (5, -1, 0)}  # v0 has no Lag
    assert rows(describe(c, None)) == {("t", 0): (5, 13, 0)}  # Topics null: the group's share partitions

    # a group with a member: alter and delete are refused at the top level
    assert c.request(76, 1, ShareGroupHeartbeatRequest("g", "m1", 0, None, ("t",))).error_code == 0
    r = alter(c, "g", {"t": {0: 15}})
    assert r.error_code == NON_EMPTY_GROUP and r.responses == ()
    assert delete(c, "g", "t").error_code == NON_EMPTY_GROUP
    assert c.request(76, 1, ShareGroupHeartbeatRequest("g", "m1", -1, None, None)).error_code == 0
    assert alter(c, "", {"t": {0: 1}}).error_code == INVALID_GROUP_ID

    # empty: alter t-0 to 15; t-5 and an unknown topic are UNKNOWN_TOPIC_OR_PARTITION per partition
    r = alter(c, "g", {"t": {0: 15, 5: 1}, "nope": {0: 1}})
    assert r.error_code == 0
    got = {(t.topic_name, p.partition_index): p.error_code for t in r.responses for p in t.partitions}
    assert got == {("t", 0): 0, ("t", 5): UNKNOWN_TOPIC, ("nope", 0): UNKNOWN_TOPIC}
    assert rows(describe(c, {"t": (0,)})) == {("t", 0): (15, 5, 0)}
    # the prior state is gone (u1's records 5-19 included): the next fetch starts at 15
    u1.c.close()
    u2 = Member(srv, "u2", tid)
    assert fetch_until(u2) == [(15, 19, 1)]

    # the altered start survives kill -9 (u2's acquisition is not stored: 15-19 come again)
    srv.kill()
    srv.start()
    c = RawClient(srv.host, srv.port)
    deadline = time.monotonic() + 30
    while rows(describe(c, {"t": (0,)}))[("t", 0)][2] != 0 and time.monotonic() < deadline:
        time.sleep(0.2)  # COORDINATOR_LOAD_IN_PROGRESS while loading
    assert rows(describe(c, {"t": (0,)})) == {("t", 0): (15, 5, 0)}
    alter_on_new = alter(c, "fresh", {"t": {0: 3}})  # alter creates the (empty) group, as Kafka does
    assert alter_on_new.error_code == 0 and rows(describe(c, None, group="fresh")) == {("t", 0): (3, 17, 0)}
    # -1 is Kafka's uninitialized start offset: the state goes, the next fetch resolves share.auto.offset.reset
    assert alter(c, "fresh", {"t": {0: -1}}).error_code == 0
    assert rows(describe(c, {"t": (0,)}, group="fresh")) == {("t", 0): (-1, -1, 0)}

    # delete: t goes; t2 has no state; an unknown topic; an unknown group
    r = delete(c, "g", "t", "t2", "nope")
    assert r.error_code == 0
    got_d = {t.topic_name: (t.error_code, t.error_message) for t in r.responses}
    assert got_d["t"] == (0, None)
    assert got_d["t2"] == (UNKNOWN_TOPIC, "There is no offset information to delete.")
    assert got_d["nope"][0] == UNKNOWN_TOPIC
    assert rows(describe(c, {"t": (0,)})) == {("t", 0): (-1, -1, 0)}
    assert rows(describe(c, None)) == {}
    assert delete(c, "nobody", "t").error_code == GROUP_ID_NOT_FOUND
    # a later fetch initializes the partition again from share.auto.offset.reset (earliest)
    assert fetch_until(Member(srv, "u3", tid)) == [(0, 19, 1)]
    c.close()


def test_share_partition_metrics(server_factory) -> None:  # type: ignore[no-untyped-def]
    """/metrics: Kafka's InFlightMessageCount and our start offset, acquired records and lag per share
    partition, read from the live share-partition state at scrape time."""
    from tests.conftest import free_port
    from tests.integration.test_ops_metrics import value

    mport = free_port()
    srv = server_factory(
        "--topic", "t:1", "--share-auto-offset-reset", "earliest", "--metrics-port", str(mport)
    )
    produce(srv.bootstrap, 20)
    c = RawClient(srv.host, srv.port)
    u1 = Member(srv, "u1", topic_id(c))
    assert acquired(u1.fetch(max_wait_ms=5000)) == [(0, 19, 1)]
    assert ack_errors(u1.ack(b(0, 4, ACCEPT), b(10, 11, REJECT))) == [0]
    labels = {"group": "g", "topic": "t", "partition": "0"}
    assert value(mport, "kafka_server_sharepartitionmetrics_inflightmessagecount", **labels) == 15  # 5-19
    assert value(mport, "groupcoord_share_partition_start_offset", **labels) == 5
    assert value(mport, "groupcoord_share_partition_acquired_records", **labels) == 13  # 5-9, 12-19
    assert value(mport, "groupcoord_share_partition_lag", **labels) == 13  # 20 - 5 - 2
    assert value(mport, "groupcoord_share_group_lag_sum", group="g", topic="t") == 13
    c.close()
