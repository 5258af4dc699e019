"""The admin APIs operator tools call (issue 30 item 16), through the Java AdminClient 4.3 (what
kafka-log-dirs.sh, kafka-transactions.sh, kafka-leader-election.sh and kafka-reassign-partitions.sh use) and
kafka-python's admin client: DescribeLogDirs, DescribeProducers, WriteTxnMarkers (abortTransaction),
ElectLeaders, List/AlterPartitionReassignments and the broker's listener configs."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from kafka import KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import UnknownTopicOrPartitionError

from groupcoord.protocol.messages.write_txn_markers import (
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
)
from tests.integration import drivers
from tests.integration.helpers import RawClient
from tests.integration.names import unique

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]
logging.getLogger("kafka").setLevel(logging.CRITICAL)
UNKNOWN_TOPIC_OR_PARTITION = 3


@pytest.fixture
def run_java() -> Iterator:
    cp = drivers.java_classpath()
    started: list[drivers.Driver] = []

    def run(main: str, *args: str) -> drivers.Driver:
        d = drivers.Driver(["java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", cp, main, *args])
        started.append(d)
        return d

    yield run
    for d in started:
        d.kill()


@pytest.mark.owns_server  # reads the data directory
def test_java_admin_tools(groupcoord_server, run_java) -> None:  # type: ignore[no-untyped-def]
    topic = unique("java-tools")
    d = run_java("ToolsDriver", groupcoord_server.bootstrap, topic, unique("java-tools-tx"))
    d.finish(timeout=150)
    calls = {e["call"]: e for e in d.of("admin")}
    failed = {k: v for k, v in calls.items() if not v["ok"]}
    assert not failed, failed

    [log_dir] = calls["log_dirs"]["result"]
    assert log_dir["path"] == str((groupcoord_server.data_dir / "topics").absolute())
    assert log_dir["error"] is None and log_dir["total"] > 0 and 0 <= log_dir["usable"] <= log_dir["total"]
    replicas = {k: v for k, v in log_dir["replicas"].items() if k.startswith(topic + "-")}
    assert set(replicas) == {f"{topic}-0", f"{topic}-1"}
    assert all(r["size"] > 0 and r["lag"] == 0 and r["future"] is False for r in replicas.values())

    # partition 0: records 0, 2, 4 (offsets 0-2) from the idempotent producer, then the open transaction's one
    assert calls["lso_before"]["result"] == 3
    producers = calls["producers"]["result"]
    idempotent, transactional = sorted(producers[f"{topic}-0"], key=lambda p: p["txn_start"] is not None)
    assert (idempotent["last_sequence"], idempotent["txn_start"], idempotent["epoch"]) == (2, None, 0)
    assert idempotent["last_timestamp"] > 0
    assert (transactional["last_sequence"], transactional["txn_start"]) == (0, 3)
    assert transactional["last_timestamp"] >= idempotent["last_timestamp"]
    [only] = producers[f"{topic}-1"]
    assert only["producer_id"] == idempotent["producer_id"] and only["last_sequence"] == 2

    # Admin.abortTransaction (WriteTxnMarkers ABORT): the transaction closes and the LSO moves past its marker
    after = {p["producer_id"]: p for p in calls["producers_after_abort"]["result"][f"{topic}-0"]}
    assert after[transactional["producer_id"]]["txn_start"] is None
    assert calls["lso_after"]["result"] == 5

    assert calls["elect_preferred"]["result"] == {
        f"{topic}-0": "ElectionNotNeededException",
        f"{topic}-1": "ElectionNotNeededException",
        f"{topic}-missing-0": "UnknownTopicOrPartitionException",
    }
    assert calls["elect_unclean"]["result"] == {f"{topic}-1": "ElectionNotNeededException"}
    assert calls["elect_all"]["result"] == {}  # Kafka leaves out partitions that need no election
    assert calls["list_reassignments"]["result"] == [] and calls["list_reassignments_of"]["result"] == []
    assert calls["reassign"]["result"] == {
        f"{topic}-0": "ok",  # onto its own replica set: nothing to move
        f"{topic}-1": "InvalidReplicaAssignmentException",  # broker 7 is not registered
        f"{topic}-5": "UnknownTopicOrPartitionException",
    }
    assert calls["reassign_cancel"]["result"] == {f"{topic}-0": "NoReassignmentInProgressException"}

    listeners = calls["broker_listeners"]["result"]
    assert listeners["listeners"]["value"] == f"PLAINTEXT://127.0.0.1:{groupcoord_server.port}"
    assert listeners["listeners"]["source"] == "STATIC_BROKER_CONFIG"
    assert listeners["advertised.listeners"] == {"value": None, "source": "DEFAULT_CONFIG", "read_only": True}
    assert listeners["listener.security.protocol.map"]["value"] == (
        "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"
    )
    assert listeners["inter.broker.listener.name"]["value"] is None


def test_kafka_python_admin_tools(groupcoord_server) -> None:  # type: ignore[no-untyped-def]
    topic = unique("kp-tools")
    admin = KafkaAdminClient(bootstrap_servers=groupcoord_server.bootstrap, request_timeout_ms=10000)
    try:
        admin.create_topics([NewTopic(topic, 2, 1)])
        producer = KafkaProducer(bootstrap_servers=groupcoord_server.bootstrap, enable_idempotence=True)
        for i in range(4):
            producer.send(topic, b"v%d" % i, partition=i % 2).get(timeout=20)
        producer.close()

        [broker] = admin.describe_log_dirs({topic: [0, 1, 7]})
        [log_dir] = broker["log_dirs"]
        assert log_dir["error_code"] == 0 and log_dir["log_dir"].endswith("topics")
        [t] = log_dir["topics"]
        assert t["name"] == topic
        assert sorted(p["partition_index"] for p in t["partitions"]) == [0, 1]  # 7 is not hosted: left out
        assert all(p["partition_size"] > 0 and p["offset_lag"] == 0 for p in t["partitions"])

        states = admin.describe_producers([TopicPartition(topic, 0), TopicPartition(topic, 1)])
        for tp in (TopicPartition(topic, 0), TopicPartition(topic, 1)):
            [p] = states[tp].active_producers
            assert (p.last_sequence, p.current_transaction_start_offset) == (1, -1)
            assert p.last_timestamp > 0

        # sent to the broker directly (the Java client first waits for the unknown partition's leader)
        with pytest.raises(UnknownTopicOrPartitionError):
            admin.describe_producers([TopicPartition(topic, 9)], broker_id=0)

        elected = admin.elect_leaders(0, {topic: [0, 1]})  # ELECTION_NOT_NEEDED is not an error here
        codes = {
            (r.topic, p.partition_id): p.error_code
            for r in elected.replica_election_results
            for p in r.partition_result
        }
        assert codes == {(topic, 0): 84, (topic, 1): 84}

        assert admin.list_partition_reassignments() == {}
        results = admin.alter_partition_reassignments(
            {TopicPartition(topic, 0): [0], TopicPartition(topic, 1): [1]}
        )
        assert results[TopicPartition(topic, 0)] is None
        assert results[TopicPartition(topic, 1)].errno == 39  # INVALID_REPLICA_ASSIGNMENT
        assert admin.find_hanging_transactions() == []
    finally:
        admin.close()


def test_write_txn_markers_answers_every_partition_per_producer(groupcoord_server) -> None:  # type: ignore[no-untyped-def]
    """A marker for a partition this node hosts is written (NONE), one for an unknown partition gets
    UNKNOWN_TOPIC_OR_PARTITION; the answer groups the partitions by producer id, as Kafka's does."""
    topic = unique("markers")
    admin = KafkaAdminClient(bootstrap_servers=groupcoord_server.bootstrap)
    try:
        admin.create_topics([NewTopic(topic, 1, 1)])
    finally:
        admin.close()
    c = RawClient(groupcoord_server.host, groupcoord_server.port)
    try:
        req = WriteTxnMarkersRequest(
            markers=(
                WritableTxnMarker(
                    producer_id=4242,
                    producer_epoch=0,
                    transaction_result=True,
                    topics=(WritableTxnMarkerTopic(name=topic, partition_indexes=(0, 3)),),
                    coordinator_epoch=0,
                ),
                WritableTxnMarker(
                    producer_id=4243,
                    producer_epoch=1,
                    transaction_result=False,
                    topics=(WritableTxnMarkerTopic(name=unique("nope"), partition_indexes=(0,)),),
                    coordinator_epoch=0,
                ),
            )
        )
        for version in (1, 2):
            resp = c.request(27, version, req)
            by_pid = {
                m.producer_id: {
                    (t.name, p.partition_index): p.error_code for t in m.topics for p in t.partitions
                }
                for m in resp.markers
            }
            assert by_pid[4242] == {(topic, 0): 0, (topic, 3): UNKNOWN_TOPIC_OR_PARTITION}
            assert list(by_pid[4243].values()) == [UNKNOWN_TOPIC_OR_PARTITION]
    finally:
        c.close()
