"""Group configs (GROUP config resources, Kafka's `GroupConfig`): DescribeConfigs and IncrementalAlterConfigs
on resource type 32 with raw frames and confluent-kafka's AdminClient, Kafka's validation and error codes,
durability across a restart, and the values applied: a share group's heartbeat interval, its
share.auto.offset.reset, its delivery-count limit, its lock duration, its RENEW switch, and a consumer
group's heartbeat interval."""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)

from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from groupcoord.protocol.messages.describe_configs import DescribeConfigsRequest, DescribeConfigsResource
from groupcoord.protocol.messages.incremental_alter_configs import (
    IncrementalAlterableConfig,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResource,
)
from groupcoord.protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from groupcoord.protocol.messages.share_acknowledge import (
    AcknowledgePartition,
    AcknowledgeTopic,
    ShareAcknowledgeRequest,
)
from groupcoord.protocol.messages.share_fetch import AcknowledgementBatch
from groupcoord.protocol.messages.share_group_heartbeat import ShareGroupHeartbeatRequest

from .helpers import RawClient, wait_for_sync
from .test_share_fetch_wire import RELEASE, Member, ack_errors, acquired, b, produce, topic_id

pytestmark = [pytest.mark.integration, pytest.mark.owns_server]
GROUP, SET, DELETE = 32, 0, 1
RENEW = 4


def describe(c: RawClient, name: str, keys=None, version: int = 4):  # type: ignore[no-untyped-def]
    req = DescribeConfigsRequest(
        resources=(DescribeConfigsResource(GROUP, name, keys),), include_synonyms=True
    )
    (result,) = c.request(32, version, req).results
    return result


def alter(c: RawClient, name: str, *ops: tuple[str, int, str | None], validate_only: bool = False):  # type: ignore[no-untyped-def]
    req = IncrementalAlterConfigsRequest(
        resources=(
            IncrementalAlterConfigsResource(
                GROUP, name, tuple(IncrementalAlterableConfig(n, op, v) for n, op, v in ops)
            ),
        ),
        validate_only=validate_only,
    )
    (r,) = c.request(44, 1, req).responses
    return r


def values(result) -> dict[str, tuple[str | None, int]]:  # type: ignore[no-untyped-def]
    return {e.name: (e.value, e.config_source) for e in result.configs}


def test_describe_defaults_validation_and_restart(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory("--group-share-delivery-count-limit", "3")
    c = RawClient(srv.host, srv.port)
    got = describe(c, "g1")
    assert got.error_code == 0
    v = values(got)
    assert v["share.record.lock.duration.ms"] == ("30000", 5)
    assert v["share.auto.offset.reset"] == ("latest", 5)
    assert v["share.isolation.level"] == ("read_uncommitted", 5)
    assert v["consumer.session.timeout.ms"] == ("45000", 5)
    # a broker value given on the command line is the group's default, shown as a static broker synonym
    assert v["share.delivery.count.limit"] == ("3", 4)
    limit = next(e for e in got.configs if e.name == "share.delivery.count.limit")
    assert [(s.name, s.value, s.source) for s in limit.synonyms] == [
        ("group.share.delivery.count.limit", "3", 4),
        ("group.share.delivery.count.limit", "5", 5),
    ]
    assert describe(c, "").error_code == ErrorCode.INVALID_REQUEST
    assert alter(c, "", ("share.delivery.count.limit", SET, "4")).error_code == ErrorCode.INVALID_REQUEST

    # Kafka's GroupConfig.validate: INVALID_CONFIG with its messages; nothing is changed
    refused = {
        ("nope.config", "1"): "Unknown group config name: nope.config",
        ("share.record.lock.duration.ms", "1000"): "share.record.lock.duration.ms must be greater than or "
        "equal to group.share.min.record.lock.duration.ms",
        ("share.record.lock.duration.ms", "999"): "Value must be at least 1000",
        ("share.delivery.count.limit", "11"): "share.delivery.count.limit must be less than or equal to "
        "group.share.max.delivery.count.limit",
        ("share.heartbeat.interval.ms", "16000"): "share.heartbeat.interval.ms must be less than or equal to "
        "group.share.max.heartbeat.interval.ms",
        ("share.isolation.level", "serializable"): "String must be one of",
        ("share.auto.offset.reset", "sometimes"): "Valid values are earliest, latest, by_duration",
        ("share.auto.offset.reset", "by_duration:yesterday"): "Unable to parse duration",
        ("share.partition.max.record.locks", "abc"): "Not a number of type INT",
    }
    for (name, value), message in refused.items():
        r = alter(c, "g1", (name, SET, value))
        assert r.error_code == ErrorCode.INVALID_CONFIG, (name, value)
        assert message in r.error_message, (r.error_message, message)
    # the session timeout must exceed the heartbeat interval (merged with the broker values)
    r = alter(
        c, "g1", ("share.session.timeout.ms", SET, "45000"), ("share.heartbeat.interval.ms", SET, "15000")
    )
    assert r.error_code == 0
    r = alter(
        c,
        "g2",
        ("consumer.session.timeout.ms", SET, "45000"),
        ("consumer.heartbeat.interval.ms", SET, "5000"),
    )
    assert r.error_code == 0
    assert values(describe(c, "g1"))["share.delivery.count.limit"] == ("3", 4)
    # validate_only changes nothing
    assert alter(c, "g1", ("share.delivery.count.limit", SET, "2"), validate_only=True).error_code == 0
    assert values(describe(c, "g1"))["share.delivery.count.limit"] == ("3", 4)

    ok = alter(
        c,
        "g1",
        ("share.delivery.count.limit", SET, "2"),
        ("share.auto.offset.reset", SET, "by_duration:PT1H"),
        ("share.isolation.level", SET, "read_committed"),
    )
    assert ok.error_code == 0, ok.error_message
    v = values(describe(c, "g1"))
    assert v["share.delivery.count.limit"] == ("2", 8)
    assert v["share.auto.offset.reset"] == ("by_duration:PT1H", 8)
    assert v["share.isolation.level"] == ("read_committed", 8)
    assert v["share.heartbeat.interval.ms"] == ("15000", 8)
    # APPEND on a non-list config is refused as Kafka refuses it
    assert alter(c, "g1", ("share.isolation.level", 2, "x")).error_code == ErrorCode.INVALID_CONFIG
    # durable: still there after a restart; DELETE goes back to the broker value
    c.close()
    srv.restart()
    c = RawClient(srv.host, srv.port)
    v = values(describe(c, "g1"))
    assert v["share.delivery.count.limit"] == ("2", 8)
    assert v["share.isolation.level"] == ("read_committed", 8)
    assert alter(c, "g1", ("share.delivery.count.limit", DELETE, None)).error_code == 0
    assert values(describe(c, "g1"))["share.delivery.count.limit"] == ("3", 4)
    assert values(describe(c, "g1", keys=("share.isolation.level",))) == {
        "share.isolation.level": ("read_committed", 8)
    }


def test_confluent_admin_alters_and_describes_group_configs(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory()
    admin = AdminClient({"bootstrap.servers": srv.bootstrap})
    res = ConfigResource(
        ResourceType.GROUP,
        "cf-group",
        incremental_configs=[
            ConfigEntry(
                "share.record.lock.duration.ms", "20000", incremental_operation=AlterConfigOpType.SET
            ),
            ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET),
        ],
    )
    admin.incremental_alter_configs([res], request_timeout=10)[res].result(timeout=60)
    got = admin.describe_configs([ConfigResource(ResourceType.GROUP, "cf-group")], request_timeout=10)
    entries = next(iter(got.values())).result(timeout=60)
    assert entries["share.record.lock.duration.ms"].value == "20000"
    assert entries["share.record.lock.duration.ms"].source == ConfigSource.GROUP_CONFIG.value
    assert entries["share.auto.offset.reset"].value == "earliest"
    assert entries["share.session.timeout.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    bad = ConfigResource(
        ResourceType.GROUP,
        "cf-group",
        incremental_configs=[
            ConfigEntry("share.delivery.count.limit", "1", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    with pytest.raises(KafkaException) as err:
        admin.incremental_alter_configs([bad], request_timeout=10)[bad].result(timeout=60)
    assert err.value.args[0].code() == ErrorCode.INVALID_CONFIG


def renew_ack(m: Member, batch: AcknowledgementBatch) -> Any:
    """ShareAcknowledge v2 with IsRenewAck (KIP-1222), as Java 4.3 sends a RENEW."""
    part = AcknowledgePartition(partition_index=0, acknowledgement_batches=(batch,))
    req = ShareAcknowledgeRequest(
        group_id=m.group,
        member_id=m.member,
        share_session_epoch=m.epoch,
        topics=(AcknowledgeTopic(topic_id=m.tid, partitions=(part,)),),
        is_renew_ack=True,
    )
    r = m.c.request(79, 2, req)
    if r.error_code == 0:
        m.epoch += 1
    return r


def test_share_group_configs_apply(server_factory) -> None:  # type: ignore[no-untyped-def]
    """The broker says latest, 30 s locks, 5 deliveries; group "q" overrides all three and the RENEW switch,
    group "d" keeps the broker's."""
    srv = server_factory("--topic", "t:1")
    c = RawClient(srv.host, srv.port)
    r = alter(
        c,
        "q",
        ("share.auto.offset.reset", SET, "earliest"),
        ("share.delivery.count.limit", SET, "2"),
        ("share.record.lock.duration.ms", SET, "15000"),
        ("share.heartbeat.interval.ms", SET, "6000"),
        ("share.renew.acknowledge.enable", SET, "false"),
    )
    assert r.error_code == 0, r.error_message
    hb = c.request(76, 1, ShareGroupHeartbeatRequest("q", "m1", 0, None, ("t",)))
    assert hb.error_code == 0 and hb.heartbeat_interval_ms == 6000
    hb = c.request(76, 1, ShareGroupHeartbeatRequest("d", "m1", 0, None, ("t",)))
    assert hb.error_code == 0 and hb.heartbeat_interval_ms == 5000
    produce(srv.bootstrap, 3)
    tid = topic_id(c)
    q, d = Member(srv, "u1", tid, group="q"), Member(srv, "u1", tid, group="d")
    first = q.fetch(max_wait_ms=5000)
    assert first.acquisition_lock_timeout_ms == 15000
    assert acquired(first) == [(0, 2, 1)]  # earliest: the records produced before the first fetch
    dfirst = d.fetch(max_wait_ms=200)
    assert dfirst.acquisition_lock_timeout_ms == 30000
    assert acquired(dfirst) == []  # latest (the broker's): nothing produced before
    # RENEW is refused for q (share.renew.acknowledge.enable=false): INVALID_RECORD_STATE
    renew = renew_ack(q, b(0, 0, RENEW))
    assert ack_errors(renew) == [ErrorCode.INVALID_RECORD_STATE]
    # delivery limit 2: released twice, offset 0 is archived and never delivered again
    assert ack_errors(q.ack(b(0, 2, RELEASE))) == [0]
    assert acquired(q.fetch(max_wait_ms=5000)) == [(0, 2, 2)]
    assert ack_errors(q.ack(b(0, 2, RELEASE))) == [0]
    assert acquired(q.fetch(max_wait_ms=300)) == []
    # the change applies to existing share partitions at once: a higher limit lets the next records
    # be delivered a third time
    assert alter(c, "q", ("share.delivery.count.limit", SET, "3")).error_code == 0
    produce(srv.bootstrap, 1)
    assert acquired(q.fetch(max_wait_ms=5000)) == [(3, 3, 1)]
    assert ack_errors(q.ack(b(3, 3, RELEASE))) == [0]
    assert acquired(q.fetch(max_wait_ms=5000)) == [(3, 3, 2)]
    assert ack_errors(q.ack(b(3, 3, RELEASE))) == [0]
    assert acquired(q.fetch(max_wait_ms=5000)) == [(3, 3, 3)]


def cg_join(group: str) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest(
        group_id=group,
        member_id="m1",
        member_epoch=0,
        rebalance_timeout_ms=60000,
        subscribed_topic_names=("t",),
        topic_partitions=(),
    )


def test_consumer_group_heartbeat_interval_per_group(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory("--topic", "t:1")
    c = RawClient(srv.host, srv.port)
    assert alter(c, "cg", ("consumer.heartbeat.interval.ms", SET, "7000")).error_code == 0
    r = c.request(68, 0, cg_join("cg"))
    assert r.error_code == 0, r.error_message
    assert r.heartbeat_interval_ms == 7000
    r = c.request(68, 0, cg_join("other"))
    assert r.heartbeat_interval_ms == 5000


def wall_ms() -> int:
    return int(time.time() * 1000)


def newest_timestamp(srv: Any) -> int:
    """The newest record timestamp of t-0 (ListOffsets MAX_TIMESTAMP), as the server stored it."""
    c = RawClient(srv.host, srv.port)
    try:
        req = ListOffsetsRequest(
            replica_id=-1,
            isolation_level=0,
            topics=(
                ListOffsetsTopic(
                    name="t", partitions=(ListOffsetsPartition(partition_index=0, timestamp=-3),)
                ),
            ),
        )
        (topic,) = c.request(2, 7, req).topics
        return int(topic.partitions[0].timestamp)
    finally:
        c.close()


def test_share_auto_offset_reset_by_duration(server_factory) -> None:  # type: ignore[no-untyped-def]
    """`by_duration:<d>`: the first offset with a timestamp at or after now - d; with none there (all records
    older), the latest offset, as in Kafka."""
    srv = server_factory("--topic", "t:1")
    c = RawClient(srv.host, srv.port)
    assert alter(c, "hour", ("share.auto.offset.reset", SET, "by_duration:PT1H")).error_code == 0
    assert alter(c, "none", ("share.auto.offset.reset", SET, "by_duration:P0D")).error_code == 0
    produce(srv.bootstrap, 4)
    tid = topic_id(c)
    # every record is younger than an hour: the share partition starts at the first one
    assert acquired(Member(srv, "u1", tid, group="hour").fetch(max_wait_ms=5000)) == [(0, 3, 1)]
    # no record is younger than "now" (a zero duration) once time has moved on: latest, nothing delivered
    wait_for_sync(lambda: wall_ms() > newest_timestamp(srv) + 5, 30, "the clock to pass the records")
    none = Member(srv, "u1", tid, group="none")
    assert acquired(none.fetch(max_wait_ms=300)) == []
    produce(srv.bootstrap, 1)
    assert acquired(none.fetch(max_wait_ms=5000)) == [(4, 4, 1)]
