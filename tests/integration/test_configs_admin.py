"""Configs and the admin APIs through real clients: DescribeConfigs, AlterConfigs, IncrementalAlterConfigs,
DescribeCluster, OffsetDelete and ListGroups v5, with kafka-python, confluent-kafka, aiokafka and raw frames
for what no client sends (DescribeConfigs v0 IsDefault, v3 documentation, other resource types)."""

from __future__ import annotations

import logging

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin import NewTopic as AioNewTopic
from aiokafka.admin.config_resource import ConfigResource as AioResource
from aiokafka.admin.config_resource import ConfigResourceType as AioType
from aiokafka.structs import TopicPartition as AioTP
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AclOperation,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
)
from confluent_kafka.admin import NewTopic as CfNewTopic
from kafka import TopicPartition
from kafka.admin import ConfigResource as KpResource
from kafka.admin import ConfigResourceType as KpType
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import GroupSubscribedToTopicError

from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages.alter_configs import (
    AlterableConfig,
    AlterConfigsRequest,
    AlterConfigsResource,
)
from groupcoord.protocol.messages.create_topics import (
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from groupcoord.protocol.messages.describe_configs import DescribeConfigsRequest, DescribeConfigsResource
from groupcoord.protocol.messages.incremental_alter_configs import (
    IncrementalAlterableConfig,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResource,
)
from groupcoord.protocol.messages.list_groups import ListGroupsRequest
from tests.integration.helpers import RawClient, wait_for
from tests.integration.names import unique

pytestmark = [pytest.mark.integration]
logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
TOPIC, BROKER = 2, 4


def kp_admin(server) -> KafkaAdminClient:  # type: ignore[no-untyped-def]
    return KafkaAdminClient(bootstrap_servers=server.bootstrap, request_timeout_ms=10000)


def cf_admin(server) -> AdminClient:  # type: ignore[no-untyped-def]
    return AdminClient({"bootstrap.servers": server.bootstrap})


def cf_describe(admin: AdminClient, resource: ConfigResource) -> dict:
    return admin.describe_configs([resource], request_timeout=10)[resource].result(timeout=60)


def describe_raw(raw: RawClient, version: int, rtype: int, name: str, keys=None, **kw):  # type: ignore[no-untyped-def]
    req = DescribeConfigsRequest(resources=(DescribeConfigsResource(rtype, name, keys),), **kw)
    (result,) = raw.request(32, version, req).results
    return result


# ---------------------------------------------------------------------------------------- DescribeConfigs


def test_quixstreams_style_describe_of_retention_on_every_topic_used(groupcoord_server) -> None:
    """quixstreams cannot start without this call: retention.ms and retention.bytes of each topic."""
    topic = unique("qx-in")  # a shared server keeps other tests' topics
    a = cf_admin(groupcoord_server)
    a.create_topics([CfNewTopic(topic, 2, 1)])[topic].result(timeout=60)
    configs = cf_describe(a, ConfigResource("topic", topic))
    assert configs["retention.ms"].value == "604800000"
    assert configs["retention.bytes"].value == "-1"
    assert configs["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    assert configs["cleanup.policy"].value == "delete" and not configs["cleanup.policy"].is_read_only


def test_describe_configs_every_version_reports_like_kafka(groupcoord_server) -> None:
    topic = unique("dv")  # a shared server keeps other tests' topics
    a = kp_admin(groupcoord_server)
    try:
        a.create_topics([NewTopic(topic, 1, 1, topic_configs={"retention.ms": "1000"})])
    finally:
        a.close()
    raw = RawClient(groupcoord_server.host, groupcoord_server.port)
    try:
        v0 = describe_raw(raw, 0, TOPIC, topic, ("retention.ms", "segment.bytes"))
        assert v0.error_code == 0
        assert {c.name: (c.value, c.is_default) for c in v0.configs} == {
            "retention.ms": ("1000", False),
            "segment.bytes": ("1073741824", True),
        }
        v1 = describe_raw(raw, 1, TOPIC, topic, ("retention.ms",), include_synonyms=True)
        (c,) = v1.configs
        assert (c.value, c.config_source) == ("1000", 1)
        assert [(s.name, s.value, s.source) for s in c.synonyms] == [
            ("retention.ms", "1000", 1),
            ("log.retention.hours", "168", 5),
        ]
        for version in (3, 4):
            full = describe_raw(raw, version, TOPIC, topic, None, include_documentation=True)
            by_name = {c.name: c for c in full.configs}
            assert len(by_name) >= 30 and "min.insync.replicas" in by_name
            assert by_name["retention.ms"].config_type == 5  # LONG
            assert by_name["cleanup.policy"].config_type == 7  # LIST
            assert "retention" in by_name["retention.ms"].documentation
            assert not any(c.synonyms for c in full.configs)  # not asked for
        unknown = describe_raw(raw, 4, TOPIC, "nope")
        assert (unknown.error_code, unknown.configs) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ())
        other_broker = describe_raw(raw, 4, BROKER, "7")
        assert other_broker.error_code == ErrorCode.INVALID_REQUEST
        assert describe_raw(raw, 4, 8, "root").error_code == ErrorCode.INVALID_REQUEST  # BROKER_LOGGER
    finally:
        raw.close()


def test_broker_configs_are_static_read_only_or_dynamic(server_factory) -> None:
    server = server_factory("--log-retention-hours", "24")
    a = cf_admin(server)
    configs = cf_describe(a, ConfigResource("broker", "0"))
    assert configs["node.id"].is_read_only and configs["node.id"].value == "0"
    hours = configs["log.retention.hours"]
    assert (hours.value, hours.source, hours.is_read_only) == (
        "24",
        ConfigSource.STATIC_BROKER_CONFIG.value,
        False,
    )
    assert configs["group.max.session.timeout.ms"].value == "1800000"
    refused = a.incremental_alter_configs(
        [ConfigResource("broker", "0", incremental_configs=[ConfigEntry("node.id", "5", incremental_operation=AlterConfigOpType.SET)])]
    )  # fmt: skip
    with pytest.raises(KafkaException, match="Cannot update these configs dynamically"):
        next(iter(refused.values())).result(timeout=60)


# ------------------------------------------------------------------------------- altering, durably


@pytest.mark.owns_server
def test_incremental_alter_set_delete_append_subtract_survive_a_restart(groupcoord_server) -> None:
    a = cf_admin(groupcoord_server)
    a.create_topics([CfNewTopic("inc", 1, 1)])["inc"].result(timeout=60)
    res = ConfigResource("topic", "inc")

    def alter(*entries: ConfigEntry) -> None:
        r = ConfigResource("topic", "inc", incremental_configs=list(entries))
        a.incremental_alter_configs([r])[r].result(timeout=60)

    alter(
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
        ConfigEntry("retention.ms", "5000", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("segment.bytes", "2097152", incremental_operation=AlterConfigOpType.SET),
    )
    configs = cf_describe(a, res)
    assert configs["cleanup.policy"].value == "delete,compact"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    alter(
        ConfigEntry("cleanup.policy", "delete", incremental_operation=AlterConfigOpType.SUBTRACT),
        ConfigEntry("segment.bytes", None, incremental_operation=AlterConfigOpType.DELETE),
    )
    bad = ConfigResource("topic", "inc", incremental_configs=[
        ConfigEntry("retention.ms", "soon", incremental_operation=AlterConfigOpType.SET)])  # fmt: skip
    with pytest.raises(KafkaException, match="Not a number of type LONG"):
        a.incremental_alter_configs([bad])[bad].result(timeout=60)
    groupcoord_server.restart()
    a = cf_admin(groupcoord_server)
    configs = cf_describe(a, res)
    assert configs["cleanup.policy"].value == "compact"
    assert (configs["retention.ms"].value, configs["segment.bytes"].value) == ("5000", "1073741824")
    assert configs["segment.bytes"].source == ConfigSource.DEFAULT_CONFIG.value


@pytest.mark.owns_server
def test_a_cluster_default_feeds_every_topic_and_survives_a_restart(groupcoord_server) -> None:
    a = cf_admin(groupcoord_server)
    a.create_topics([CfNewTopic("bd", 1, 1)])["bd"].result(timeout=60)
    # confluent-kafka and kafka-python refuse an empty broker name (the cluster-wide default): raw frames
    raw = RawClient(groupcoord_server.host, groupcoord_server.port)
    try:
        op = IncrementalAlterableConfig("log.retention.ms", 0, "60000")
        req = IncrementalAlterConfigsRequest(
            resources=(IncrementalAlterConfigsResource(BROKER, "", (op,)),), validate_only=False
        )
        (r,) = raw.request(44, 1, req).responses
        assert (r.error_code, r.resource_name) == (0, "")
    finally:
        raw.close()
    groupcoord_server.restart()
    a = cf_admin(groupcoord_server)
    retention = cf_describe(a, ConfigResource("topic", "bd"))["retention.ms"]
    assert (retention.value, retention.source) == ("60000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
    raw = RawClient(groupcoord_server.host, groupcoord_server.port)
    try:
        listed = describe_raw(raw, 4, BROKER, "")
        assert [(c.name, c.value, c.config_source) for c in listed.configs] == [
            ("log.retention.ms", "60000", 3)
        ]
    finally:
        raw.close()


def test_legacy_alter_configs_replaces_the_set_and_validate_only_changes_nothing(groupcoord_server) -> None:
    """AlterConfigs (33) replaces a resource's whole set, as in Kafka; kafka-python therefore sends the other
    modified keys along (it describes first), so its alteration keeps them."""
    topic = unique("legacy")  # a shared server keeps other tests' topics
    a = kp_admin(groupcoord_server)
    try:
        a.create_topics([NewTopic(topic, 1, 1, topic_configs={"retention.ms": "1000"})])
        a.alter_configs(
            [KpResource(KpType.TOPIC, topic, configs={"max.message.bytes": "2000"})], incremental=False
        )
        described = a.describe_configs([KpResource(KpType.TOPIC, topic)])["topic"][topic]
        assert {n: c["value"] for n, c in described.items()} == {
            "max.message.bytes": "2000",
            "retention.ms": "1000",
        }
        a.alter_configs(
            [KpResource(KpType.TOPIC, topic, configs={"max.message.bytes": "3000"})],
            validate_only=True,
            incremental=False,
        )
        described = a.describe_configs([KpResource(KpType.TOPIC, topic)])["topic"][topic]
        assert described["max.message.bytes"]["value"] == "2000"
    finally:
        a.close()
    raw = RawClient(groupcoord_server.host, groupcoord_server.port)
    try:
        for version in (0, 1, 2):
            req = AlterConfigsRequest(
                resources=(AlterConfigsResource(TOPIC, topic, (AlterableConfig("segment.ms", "60000"),)),),
                validate_only=False,
            )
            (r,) = raw.request(33, version, req).responses
            assert (r.error_code, r.error_message, r.resource_name) == (0, None, topic)
        assert {
            (c.name, c.value) for c in describe_raw(raw, 4, TOPIC, topic).configs if c.config_source == 1
        } == {("segment.ms", "60000")}
        bad = AlterConfigsRequest(
            resources=(AlterConfigsResource(TOPIC, topic, (AlterableConfig("segment.ms", "0"),)),),
            validate_only=False,
        )
        (r,) = raw.request(33, 2, bad).responses
        assert (r.error_code, r.error_message) == (
            ErrorCode.INVALID_CONFIG,
            "Invalid value 0 for configuration segment.ms: Value must be at least 1",
        )
    finally:
        raw.close()


async def test_aiokafka_admin_describes_and_alters_configs_and_the_cluster(groupcoord_server) -> None:
    topic = unique("aio-cfg")  # a shared server keeps other tests' topics
    admin = AIOKafkaAdminClient(bootstrap_servers=groupcoord_server.bootstrap)
    await admin.start()
    try:
        await admin.create_topics([AioNewTopic(topic, 1, 1)])
        await admin.alter_configs([AioResource(AioType.TOPIC, topic, {"retention.bytes": "123456"})])
        (resp,) = await admin.describe_configs([AioResource(AioType.TOPIC, topic, {"retention.bytes": None})])
        (result,) = resp.to_object()["resources"]
        (entry,) = result["config_entries"]
        assert (entry["config_names"], entry["config_value"], entry["config_source"]) == (
            "retention.bytes",
            "123456",
            1,  # TOPIC_CONFIG
        )
        cluster = await admin.describe_cluster()
        assert cluster["cluster_id"] == "groupcoord-cluster" and cluster["controller_id"] == 0
        assert [b["node_id"] for b in cluster["brokers"]] == [0]
    finally:
        await admin.close()


# ------------------------------------------------------------------------- CreateTopics v5+, validate_only


def test_create_topics_validate_only_checks_values_and_creates_nothing(groupcoord_server) -> None:
    topic_name = unique("vo")  # a shared server keeps other tests' topics
    raw = RawClient(groupcoord_server.host, groupcoord_server.port)
    try:

        def create(configs: dict[str, str], validate_only: bool):  # type: ignore[no-untyped-def]
            topic = CreatableTopic(
                name=topic_name, num_partitions=1, replication_factor=1, assignments=(),
                configs=tuple(CreatableTopicConfig(n, v) for n, v in configs.items()),
            )  # fmt: skip
            req = CreateTopicsRequest(topics=(topic,), timeout_ms=5000, validate_only=validate_only)
            return raw.request(19, 7, req).topics[0]

        bad = create({"retention.ms": "-7"}, True)
        assert (bad.error_code, bad.error_message) == (
            ErrorCode.INVALID_CONFIG,
            "Invalid value -7 for configuration retention.ms: Value must be at least -1",
        )
        ok = create({"cleanup.policy": "compact"}, True)
        assert ok.error_code == 0
        assert {c.name: (c.value, c.config_source) for c in ok.configs}["cleanup.policy"] == ("compact", 1)
        described = describe_raw(raw, 4, TOPIC, topic_name)
        assert described.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    finally:
        raw.close()


# --------------------------------------------------------------------------------------- DescribeCluster


def test_describe_cluster_reports_the_node_and_cluster_operations(groupcoord_server) -> None:
    a = cf_admin(groupcoord_server)
    desc = a.describe_cluster(include_authorized_operations=True, request_timeout=10).result(timeout=60)
    assert desc.cluster_id == "groupcoord-cluster" and desc.controller.id == 0
    # the advertised address: 127.0.0.1 locally, the compose service name (coordinator) in compose
    assert [(n.id, n.host, n.port) for n in desc.nodes] == [
        (0, groupcoord_server.host, groupcoord_server.port)
    ]
    assert set(desc.authorized_operations) == {
        AclOperation.CREATE, AclOperation.ALTER, AclOperation.DESCRIBE, AclOperation.CLUSTER_ACTION,
        AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS, AclOperation.IDEMPOTENT_WRITE,
    }  # fmt: skip
    kp = kp_admin(groupcoord_server)
    try:
        assert kp.describe_cluster()["cluster_id"] == "groupcoord-cluster"
    finally:
        kp.close()


# ------------------------------------------------------------------------------- OffsetDelete, ListGroups


async def test_offset_delete_refuses_subscribed_topics_until_the_group_is_empty(groupcoord_server) -> None:
    # a shared server keeps other tests' topics
    topic, other, group = unique("od"), unique("od-other"), unique("odg")
    bs = groupcoord_server.bootstrap
    kp = kp_admin(groupcoord_server)
    kp.create_topics([NewTopic(topic, 1, 1), NewTopic(other, 1, 1)])
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=bs, group_id=group, enable_auto_commit=False, session_timeout_ms=6000,
        heartbeat_interval_ms=500,
    )  # fmt: skip
    await consumer.start()
    try:
        await wait_for(lambda: len(consumer.assignment()) == 1, 30, "the consumer to own od-0")
        await consumer.commit({AioTP(topic, 0): 4})
        result = kp.delete_group_offsets(group, [TopicPartition(topic, 0)])
        assert result == {TopicPartition(topic, 0): GroupSubscribedToTopicError}
        assert await consumer.committed(AioTP(topic, 0)) == 4
    finally:
        await consumer.stop()
    await wait_for(
        lambda: kp.describe_groups([group])[group]["group_state"] == "Empty", 60, "the group to be Empty"
    )
    result = kp.delete_group_offsets(group, [TopicPartition(topic, 0)])
    assert [e.errno for e in result.values()] == [0], result
    assert TopicPartition(topic, 0) not in kp.list_group_offsets(group)[group]
    kp.close()


def test_list_groups_v5_types_filter(groupcoord_server) -> None:
    topic, group = unique("lg"), unique("simple")  # a shared server lists other tests' groups too
    kp = kp_admin(groupcoord_server)
    try:
        kp.create_topics([NewTopic(topic, 1, 1)])
    finally:
        kp.close()
    raw = RawClient(groupcoord_server.host, groupcoord_server.port)
    try:
        from groupcoord.protocol.messages.offset_commit import (
            OffsetCommitRequest,
            OffsetCommitRequestPartition,
            OffsetCommitRequestTopic,
        )

        commit = OffsetCommitRequest(
            group_id=group, generation_id_or_member_epoch=-1, member_id="",
            topics=(OffsetCommitRequestTopic(name=topic, partitions=(OffsetCommitRequestPartition(0, 1),)),),
        )  # fmt: skip
        assert raw.request(8, 8, commit).topics[0].partitions[0].error_code == 0
        classic = raw.request(16, 5, ListGroupsRequest(types_filter=("classic",)))
        assert (group, "classic") in [(g.group_id, g.group_type) for g in classic.groups]
        assert {g.group_type for g in classic.groups} == {"classic"}
        consumer = raw.request(16, 5, ListGroupsRequest(types_filter=("consumer",))).groups
        assert group not in [g.group_id for g in consumer]
        assert group in [g.group_id for g in raw.request(16, 5, ListGroupsRequest()).groups]
    finally:
        raw.close()
