"""Topic administration as real admin clients drive it (issue 10, defects 3, 4, 5 and 7).

- Manual replica assignments naming this broker once per partition are accepted by CreateTopics and
  CreatePartitions, as a one-broker Kafka accepts them; other assignments get Kafka's codes and messages.
- CreateTopics configs: known names are kept (and survive a restart, as DescribeConfigs shows), unknown names
  get INVALID_CONFIG.
- `__consumer_offsets` is listed as an internal topic; producing to it, creating, deleting or growing it is
  refused with Kafka's codes, and naming it in Metadata does not create an ordinary topic.
- Deleting a topic whose name is 249 characters long is answered and leaves no directory behind.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.errors import InvalidTopicError as AioInvalidTopicError
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
from kafka.errors import (
    InvalidConfigurationError,
    InvalidReplicationAssignmentError,
    InvalidRequestError,
    TopicAlreadyExistsError,
)

from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages.create_partitions import (
    CreatePartitionsAssignment,
    CreatePartitionsRequest,
    CreatePartitionsTopic,
)
from groupcoord.protocol.messages.delete_topics import DeleteTopicsRequest
from groupcoord.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from tests.integration.helpers import RawClient
from tests.integration.names import unique

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

OFFSETS = "__consumer_offsets"


def admin(server) -> KafkaAdminClient:  # type: ignore[no-untyped-def]
    return KafkaAdminClient(bootstrap_servers=server.bootstrap, request_timeout_ms=15000)


def partition_counts(server) -> dict[str, int]:  # type: ignore[no-untyped-def]
    raw = RawClient(server.host, server.port)
    try:
        md = raw.request(3, 12, MetadataRequest(topics=None))
    finally:
        raw.close()
    return {t.name: len(t.partitions) for t in md.topics}


def registry(server) -> dict:  # type: ignore[no-untyped-def]
    return json.loads((Path(server.data_dir) / "topics" / "topics.json").read_text())["topics"]


# --- defect 4: manual replica assignments --------------------------------------------------------------


def test_kafka_python_create_topics_with_assignments_naming_this_broker(groupcoord_server) -> None:
    topic = unique("manual")  # a shared server keeps other tests' topics
    a = admin(groupcoord_server)
    try:
        result = a.create_topics({topic: {"assignments": {0: [0], 1: [0], 2: [0]}}})
        assert [(t["name"], t["error_code"]) for t in result["topics"]] == [(topic, 0)]
    finally:
        a.close()
    assert partition_counts(groupcoord_server)[topic] == 3


def test_kafka_python_create_partitions_with_assignments_naming_this_broker(groupcoord_server) -> None:
    topic = unique("grow")  # a shared server keeps other tests' topics
    a = admin(groupcoord_server)
    try:
        a.create_topics({topic: {"num_partitions": 1, "replication_factor": 1}})
        a.create_partitions({topic: {"count": 3, "assignments": [[0], [0]]}})
    finally:
        a.close()
    assert partition_counts(groupcoord_server)[topic] == 3


@pytest.mark.parametrize(
    ("assignments", "message"),
    [
        ({0: [1]}, "The manual partition assignment includes broker 1, but no such broker is registered."),
        ({0: [0, 0]}, "The manual partition assignment includes the broker 0 more than once."),
        ({0: []}, "The manual partition assignment includes an empty replica list."),
        ({0: [0], 2: [0]}, "partitions should be a consecutive 0-based integer sequence"),
    ],
    ids=["other-broker", "twice", "empty", "gap"],
)
def test_create_topics_with_bad_assignments_gets_kafkas_refusal(
    groupcoord_server, assignments: dict[int, list[int]], message: str
) -> None:
    a = admin(groupcoord_server)
    try:
        result = a.create_topics({"bad-manual": {"assignments": assignments}}, raise_errors=False)
        t = result["topics"][0]
        assert (t["error_code"], t["error_message"]) == (ErrorCode.INVALID_REPLICA_ASSIGNMENT, message)
        with pytest.raises(InvalidReplicationAssignmentError):
            a.create_topics({"bad-manual": {"assignments": assignments}})
    finally:
        a.close()
    assert "bad-manual" not in partition_counts(groupcoord_server)


def test_assignments_with_a_replication_factor_get_invalid_request(groupcoord_server) -> None:
    a = admin(groupcoord_server)
    try:
        with pytest.raises(InvalidRequestError):
            a.create_topics({"both": {"replication_factor": 1, "assignments": {0: [0]}}})
    finally:
        a.close()


def test_create_partitions_with_wrong_assignments_is_refused(groupcoord_server) -> None:
    topic = unique("grow2")  # a shared server keeps other tests' topics
    raw = RawClient(groupcoord_server.host, groupcoord_server.port)
    a = admin(groupcoord_server)
    try:
        a.create_topics({topic: {"num_partitions": 1, "replication_factor": 1}})
        cases = [
            ((CreatePartitionsAssignment(broker_ids=(0,)),), "but only 1 assignment(s) were specified"),
            ((CreatePartitionsAssignment(broker_ids=(7,)),) * 2, "includes broker 7"),
        ]
        for assignments, text in cases:
            r = raw.request(
                37, 3,
                CreatePartitionsRequest(topics=(CreatePartitionsTopic(name=topic, count=3, assignments=assignments),),
                                        timeout_ms=5000),
            )  # fmt: skip
            assert r.results[0].error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
            assert text in r.results[0].error_message
    finally:
        a.close()
        raw.close()
    assert partition_counts(groupcoord_server)[topic] == 1


# --- defect 5: CreateTopics configs ---------------------------------------------------------------------


@pytest.mark.owns_server
def test_create_topics_keeps_known_configs_across_a_restart(groupcoord_server) -> None:
    a = admin(groupcoord_server)
    try:
        result = a.create_topics(
            {
                "changelog": {
                    "num_partitions": 2,
                    "configs": {"cleanup.policy": "compact", "retention.ms": "1000"},
                }
            }
        )
        topic = result["topics"][0]
        assert topic["error_code"] == 0
        # v5+ lists every topic config: the given ones as topic configs, the rest with the broker's defaults
        given = {
            n: c["value"] for n, c in topic["configs"].items() if c["config_source"] == "DYNAMIC_TOPIC_CONFIG"
        }
        assert given == {"cleanup.policy": "compact", "retention.ms": "1000"}
        assert topic["configs"]["segment.bytes"]["value"] == "1073741824"
        assert topic["configs"]["segment.bytes"]["config_source"] == "DEFAULT_CONFIG"
    finally:
        a.close()
    groupcoord_server.restart()
    a = admin(groupcoord_server)
    try:
        described = a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "changelog")])
        assert {n: c["value"] for n, c in described["topic"]["changelog"].items()} == {
            "cleanup.policy": "compact",
            "retention.ms": "1000",
        }
    finally:
        a.close()
    assert registry(groupcoord_server)["changelog"]["configs"] == {
        "cleanup.policy": "compact",
        "retention.ms": "1000",
    }
    assert partition_counts(groupcoord_server)["changelog"] == 2


def test_create_topics_with_an_unknown_config_gets_invalid_config(groupcoord_server) -> None:
    a = admin(groupcoord_server)
    try:
        result = a.create_topics({"typo": {"configs": {"cleanup.polcy": "compact"}}}, raise_errors=False)
        t = result["topics"][0]
        assert (t["error_code"], t["error_message"]) == (
            ErrorCode.INVALID_CONFIG,
            "Unknown topic config name: cleanup.polcy",
        )
        with pytest.raises(InvalidConfigurationError):
            a.create_topics({"typo": {"configs": {"cleanup.polcy": "compact"}}})
    finally:
        a.close()
    assert "typo" not in partition_counts(groupcoord_server)


# --- defect 3: __consumer_offsets ----------------------------------------------------------------------


def test_consumer_offsets_is_listed_as_internal_with_the_configured_partitions(server_factory) -> None:
    server = server_factory("--offsets-topic-num-partitions", "7")
    raw = RawClient(server.host, server.port)
    try:
        md = raw.request(3, 12, MetadataRequest(topics=None))
        (offsets,) = [t for t in md.topics if t.name == OFFSETS]
        assert offsets.is_internal and offsets.error_code == 0 and len(offsets.partitions) == 7
        assert not any(t.is_internal for t in md.topics if t.name != OFFSETS)
        # by name: the same entry, and nothing is auto-created
        named = raw.request(3, 9, MetadataRequest(topics=(MetadataRequestTopic(name=OFFSETS),)))
        assert [(t.name, t.is_internal, len(t.partitions)) for t in named.topics] == [(OFFSETS, True, 7)]
        # by id (v12)
        by_id = raw.request(3, 12, MetadataRequest(topics=(MetadataRequestTopic(topic_id=offsets.topic_id),)))
        assert [(t.name, t.topic_id) for t in by_id.topics] == [(OFFSETS, offsets.topic_id)]
    finally:
        raw.close()
    assert not (Path(server.data_dir) / "topics" / f"{OFFSETS}-0").exists()
    server.restart()
    raw = RawClient(server.host, server.port)
    try:
        again = raw.request(3, 12, MetadataRequest(topics=None))
        assert [t.topic_id for t in again.topics if t.name == OFFSETS] == [offsets.topic_id]  # stable id
    finally:
        raw.close()


def test_kafka_python_list_topics_shows_consumer_offsets_as_internal(groupcoord_server) -> None:
    a = admin(groupcoord_server)
    try:
        topics = {t["name"]: t for t in a.describe_topics()}
    finally:
        a.close()
    assert topics[OFFSETS]["is_internal"] is True
    assert len(topics[OFFSETS]["partitions"]) == 50


async def test_aiokafka_produce_to_consumer_offsets_gets_invalid_topic(groupcoord_server) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=groupcoord_server.bootstrap)
    await producer.start()
    try:
        with pytest.raises(AioInvalidTopicError):
            await producer.send_and_wait(OFFSETS, b"not an offset record", partition=0)
    finally:
        await producer.stop()


def test_create_delete_and_grow_consumer_offsets_are_refused(groupcoord_server) -> None:
    a = admin(groupcoord_server)
    raw = RawClient(groupcoord_server.host, groupcoord_server.port)
    try:
        with pytest.raises(TopicAlreadyExistsError):
            a.create_topics({OFFSETS: {"num_partitions": 1}})
        r = raw.request(20, 5, DeleteTopicsRequest(topic_names=(OFFSETS,)))
        assert r.responses[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
        assert r.responses[0].error_message == f"Cannot delete internal topic {OFFSETS}"
        grown = raw.request(
            37,
            3,
            CreatePartitionsRequest(topics=(CreatePartitionsTopic(name=OFFSETS, count=60),), timeout_ms=5000),
        )
        assert grown.results[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    finally:
        raw.close()
        a.close()
    assert partition_counts(groupcoord_server)[OFFSETS] == 50


# --- defect 7: deleting a topic with a long name --------------------------------------------------------


@pytest.mark.owns_server
@pytest.mark.parametrize("length", [240, 249])
def test_delete_of_a_topic_with_a_long_name_is_answered_and_leaves_nothing(
    groupcoord_server, length: int
) -> None:
    name = ("long-" * 60)[:length]
    a = admin(groupcoord_server)
    try:
        a.create_topics({name: {"num_partitions": 2, "replication_factor": 1}})
        topics_dir = Path(groupcoord_server.data_dir) / "topics"
        assert (topics_dir / f"{name}-1").is_dir()
        result = a.delete_topics([name])
        assert [(t["name"], t["error_code"]) for t in result["topics"]] == [(name, 0)]
    finally:
        a.close()
    assert name not in partition_counts(groupcoord_server)
    assert [p.name for p in topics_dir.iterdir() if p.name.startswith("long-")] == []


async def test_consuming_consumer_offsets_sees_an_empty_topic(groupcoord_server) -> None:
    """Its records are not exposed (docs/differences.md): a consumer assigned to it gets no records and no
    errors, its end offset is 0, and a long-poll Fetch on it alone is answered (after max_wait_ms)."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    from groupcoord.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic

    tp = TopicPartition(OFFSETS, 3)
    consumer = AIOKafkaConsumer(bootstrap_servers=groupcoord_server.bootstrap, auto_offset_reset="earliest")
    await consumer.start()
    try:
        consumer.assign([tp])
        batches = await consumer.getmany(timeout_ms=1000)
        assert batches == {} or all(not records for records in batches.values())
        assert await consumer.position(tp) == 0
        assert (await consumer.end_offsets([tp]))[tp] == 0
    finally:
        await consumer.stop()
    raw = RawClient(groupcoord_server.host, groupcoord_server.port)
    try:
        fetch = FetchRequest(
            replica_id=-1,
            max_wait_ms=300,
            min_bytes=1,
            max_bytes=1 << 20,
            topics=(
                FetchTopic(
                    topic=OFFSETS,
                    partitions=(FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20),),
                ),
            ),
        )
        r = raw.request(1, 12, fetch)
        (part,) = r.responses[0].partitions
        assert (part.error_code, part.high_watermark, part.records or b"") == (0, 0, b"")
    finally:
        raw.close()
