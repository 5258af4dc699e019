"""ACLs on the admin APIs of tools (issue 30 item 16), with Kafka's operations and denied answers: DESCRIBE
CLUSTER for DescribeLogDirs and ListPartitionReassignments, READ TOPIC for DescribeProducers, ALTER or
CLUSTER_ACTION CLUSTER for WriteTxnMarkers, ALTER CLUSTER for ElectLeaders and AlterPartitionReassignments.
Raw requests over SCRAM logins, so every denied shape is seen as sent."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from groupcoord.protocol.messages.alter_partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    ReassignablePartition,
    ReassignableTopic,
)
from groupcoord.protocol.messages.describe_log_dirs import DescribeLogDirsRequest
from groupcoord.protocol.messages.describe_producers import (
    DescribeProducersRequest,
    DescribeProducersTopicRequest,
)
from groupcoord.protocol.messages.elect_leaders import ElectLeadersRequest, ElectLeadersTopicPartitions
from groupcoord.protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from groupcoord.protocol.messages.list_partition_reassignments import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsTopics,
)
from groupcoord.protocol.messages.write_txn_markers import (
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
)
from tests.integration.helpers import RawClient
from tests.integration.security_fixture import SecureServer, scram_login, start_secure_server

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]
USERS = (
    ("admin", "admin-secret"),
    ("viewer", "viewer-secret"),  # DESCRIBE cluster, READ orders
    ("operator", "operator-secret"),  # ALTER cluster
    ("broker", "broker-secret"),  # CLUSTER_ACTION cluster
    ("nobody", "nobody-secret"),
)
TOPIC_DENIED, CLUSTER_DENIED, INVALID_TOPIC, ELECTION_NOT_NEEDED = 29, 31, 17, 84


@pytest.fixture(scope="module")
def secure(tmp_path_factory) -> Iterator[SecureServer]:  # type: ignore[no-untyped-def]
    s = start_secure_server(
        tmp_path_factory.mktemp("tools-acls"),
        "--authorizer-class-name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "--super-users", "User:admin",
        "--topic", "orders:1",
        users=USERS,
    )  # fmt: skip
    create_acls(s.sasl_plain)
    yield s
    s.srv.kill()


def create_acls(port: int) -> None:
    from confluent_kafka.admin import AclBinding, AclOperation, AdminClient, ResourcePatternType, ResourceType
    from confluent_kafka.admin import AclPermissionType as P

    lit = ResourcePatternType.LITERAL
    bindings = [
        AclBinding(
            ResourceType.BROKER, "kafka-cluster", lit, "User:viewer", "*", AclOperation.DESCRIBE, P.ALLOW
        ),
        AclBinding(ResourceType.TOPIC, "orders", lit, "User:viewer", "*", AclOperation.READ, P.ALLOW),
        AclBinding(
            ResourceType.BROKER, "kafka-cluster", lit, "User:operator", "*", AclOperation.ALTER, P.ALLOW
        ),
        AclBinding(
            ResourceType.BROKER,
            "kafka-cluster",
            lit,
            "User:broker",
            "*",
            AclOperation.CLUSTER_ACTION,
            P.ALLOW,
        ),
    ]
    admin = AdminClient(
        {
            "bootstrap.servers": f"127.0.0.1:{port}",
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "SCRAM-SHA-256",
            "sasl.username": "admin",
            "sasl.password": "admin-secret",
        }
    )
    for f in admin.create_acls(bindings).values():
        f.result(15)


def login(secure: SecureServer, user: str) -> RawClient:
    c, _, ok = scram_login(secure.sasl_plain, f"{user}-secret", user=user)
    assert ok.error_code == 0
    return c


def call(secure: SecureServer, user: str, api_key: int, version: int, body: Any) -> Any:
    c = login(secure, user)
    try:
        return c.request(api_key, version, body)
    finally:
        c.close()


def end_offset(secure: SecureServer) -> int:
    req = ListOffsetsRequest(
        replica_id=-1,
        topics=(
            ListOffsetsTopic(
                name="orders", partitions=(ListOffsetsPartition(partition_index=0, timestamp=-1),)
            ),
        ),
    )
    [t] = call(secure, "admin", 2, 5, req).topics
    return t.partitions[0].offset


def test_describe_log_dirs_needs_describe_on_the_cluster(secure: SecureServer) -> None:
    denied = call(secure, "nobody", 35, 4, DescribeLogDirsRequest(topics=None))
    assert (denied.error_code, denied.results) == (CLUSTER_DENIED, ())
    assert call(secure, "nobody", 35, 1, DescribeLogDirsRequest(topics=None)).results == ()  # v1: no code
    ok = call(secure, "viewer", 35, 4, DescribeLogDirsRequest(topics=None))
    [result] = ok.results
    assert ok.error_code == 0 and {t.name for t in result.topics} == {"orders", "secure"}


def test_describe_producers_needs_read_on_the_topic(secure: SecureServer) -> None:
    req = DescribeProducersRequest(
        topics=(
            DescribeProducersTopicRequest(name="orders", partition_indexes=(0,)),
            DescribeProducersTopicRequest(name="bad name!", partition_indexes=(0,)),
        )
    )
    denied = {t.name: t.partitions[0].error_code for t in call(secure, "nobody", 61, 0, req).topics}
    assert denied == {"orders": TOPIC_DENIED, "bad name!": INVALID_TOPIC}  # the name is checked first
    allowed = {t.name: t.partitions[0].error_code for t in call(secure, "viewer", 61, 0, req).topics}
    assert allowed == {"orders": 0, "bad name!": INVALID_TOPIC}


def test_write_txn_markers_needs_alter_or_cluster_action(secure: SecureServer) -> None:
    def markers(pid: int) -> WriteTxnMarkersRequest:
        topic = WritableTxnMarkerTopic(name="orders", partition_indexes=(0,))
        marker = WritableTxnMarker(
            producer_id=pid, producer_epoch=0, transaction_result=False, topics=(topic,), coordinator_epoch=0
        )
        return WriteTxnMarkersRequest(markers=(marker,))

    before = end_offset(secure)
    for user in ("nobody", "viewer"):
        [m] = call(secure, user, 27, 1, markers(7001)).markers
        assert (m.producer_id, m.topics[0].name, m.topics[0].partitions[0].error_code) == (7001, "orders", 31)
    assert end_offset(secure) == before  # nothing was written
    for n, user in enumerate(("operator", "broker")):
        [m] = call(secure, user, 27, 2, markers(7002 + n)).markers
        assert m.topics[0].partitions[0].error_code == 0
    assert end_offset(secure) == before + 2


def test_elections_and_reassignments_need_alter_and_the_listing_describe(secure: SecureServer) -> None:
    elect = ElectLeadersRequest(
        election_type=0, topic_partitions=(ElectLeadersTopicPartitions(topic="orders", partitions=(0,)),)
    )
    denied = call(secure, "viewer", 43, 2, elect)
    assert denied.error_code == CLUSTER_DENIED
    assert [p.error_code for p in denied.replica_election_results[0].partition_result] == [CLUSTER_DENIED]
    ok = call(secure, "operator", 43, 2, elect)
    assert ok.error_code == 0
    assert [p.error_code for p in ok.replica_election_results[0].partition_result] == [ELECTION_NOT_NEEDED]

    move = AlterPartitionReassignmentsRequest(
        topics=(ReassignableTopic(name="orders", partitions=(ReassignablePartition(0, (0,)),)),)
    )
    denied = call(secure, "viewer", 45, 1, move)
    assert denied.error_code == CLUSTER_DENIED
    assert denied.responses[0].partitions[0].error_code == CLUSTER_DENIED
    ok = call(secure, "operator", 45, 1, move)
    assert (ok.error_code, ok.responses[0].partitions[0].error_code) == (0, 0)

    listing = ListPartitionReassignmentsRequest(
        topics=(ListPartitionReassignmentsTopics(name="orders", partition_indexes=(0,)),)
    )
    denied = call(secure, "nobody", 46, 0, listing)
    assert denied.error_code == CLUSTER_DENIED
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in denied.topics] == [("orders", [0])]
    ok = call(secure, "viewer", 46, 0, listing)
    assert (ok.error_code, ok.topics) == (0, ())
