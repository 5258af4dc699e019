"""The tools' admin APIs over raw frames, for the versions and inputs no client library sends on purpose:
ElectLeaders v0 and bad election types, every kind of bad reassignment target, DescribeLogDirs of in-memory
storage, DescribeProducers of invalid and internal topics, and a WriteTxnMarkers COMMIT for
`__consumer_offsets` completing a transaction's pending offsets (what Kafka's group coordinator does)."""

from __future__ import annotations

import logging

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.structs import OffsetAndMetadata, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from groupcoord.protocol.errors import ErrorCode as E
from groupcoord.protocol.messages import alter_partition_reassignments as apr
from groupcoord.protocol.messages import describe_log_dirs as dld
from groupcoord.protocol.messages import describe_producers as dp
from groupcoord.protocol.messages import describe_transactions as dtx
from groupcoord.protocol.messages import elect_leaders as el
from groupcoord.protocol.messages import write_txn_markers as wm
from groupcoord.protocol.messages.api_versions import ApiVersionsRequest
from tests.integration.helpers import RawClient
from tests.integration.names import unique

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]
logging.getLogger("aiokafka").setLevel(logging.CRITICAL)


def create(bootstrap: str, topic: str, partitions: int) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        admin.close()


def test_api_versions_advertises_the_tools_apis(groupcoord_server) -> None:  # type: ignore[no-untyped-def]
    c = RawClient(groupcoord_server.host, groupcoord_server.port)
    try:
        resp = c.request(18, 3, ApiVersionsRequest("t", "1"))
    finally:
        c.close()
    ranges = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    assert {k: ranges.get(k) for k in (27, 35, 43, 45, 46, 61)} == {
        27: (1, 2),  # WriteTxnMarkers
        35: (1, 5),  # DescribeLogDirs
        43: (0, 2),  # ElectLeaders
        45: (0, 1),  # AlterPartitionReassignments
        46: (0, 0),  # ListPartitionReassignments
        61: (0, 0),  # DescribeProducers
    }


def test_elections_and_reassignments_over_the_wire(groupcoord_server) -> None:  # type: ignore[no-untyped-def]
    topic = unique("wire-elect")
    create(groupcoord_server.bootstrap, topic, 2)
    c = RawClient(groupcoord_server.host, groupcoord_server.port)
    try:
        asked = (el.ElectLeadersTopicPartitions(topic=topic, partitions=(0, 1, 2)),)
        v0 = c.request(
            43, 0, el.ElectLeadersRequest(topic_partitions=asked)
        )  # v0: preferred, no ElectionType
        [r] = v0.replica_election_results
        assert [(p.partition_id, p.error_code) for p in r.partition_result] == [
            (0, E.ELECTION_NOT_NEEDED),
            (1, E.ELECTION_NOT_NEEDED),
            (2, E.UNKNOWN_TOPIC_OR_PARTITION),
        ]
        bad = c.request(43, 2, el.ElectLeadersRequest(election_type=5, topic_partitions=asked))
        assert bad.error_code == E.INVALID_REQUEST
        assert {p.error_code for p in bad.replica_election_results[0].partition_result} == {E.INVALID_REQUEST}
        every = c.request(43, 1, el.ElectLeadersRequest(election_type=1, topic_partitions=None))
        listed = {r.topic: r.partition_result for r in every.replica_election_results}
        assert (
            listed[topic] == () and listed["__consumer_offsets"] == ()
        )  # every topic, no partition needs one

        def reassign(
            replicas: tuple[int, ...] | None, partition: int = 0, version: int = 0
        ) -> tuple[int, str]:
            req = apr.AlterPartitionReassignmentsRequest(
                allow_replication_factor_change=version == 0,
                topics=(
                    apr.ReassignableTopic(
                        name=topic, partitions=(apr.ReassignablePartition(partition, replicas),)
                    ),
                ),
            )
            resp = c.request(45, version, req)
            assert resp.error_code == 0
            p = resp.responses[0].partitions[0]
            return p.error_code, p.error_message

        assert reassign((0,)) == (0, None)
        assert reassign((0,), version=1) == (0, None)  # no replication factor change
        assert reassign(())[0] == E.INVALID_REPLICA_ASSIGNMENT
        assert reassign((0, 0)) == (
            E.INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes the broker 0 more than once.",
        )
        assert reassign((2, 0)) == (
            E.INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes broker 2, but no such broker is registered.",
        )
        assert reassign(None)[0] == E.NO_REASSIGNMENT_IN_PROGRESS
        assert reassign((0,), partition=9)[0] == E.UNKNOWN_TOPIC_OR_PARTITION
    finally:
        c.close()


def test_describe_log_dirs_with_in_memory_storage(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory("--storage", "memory")
    topic = unique("mem-dirs")
    create(srv.bootstrap, topic, 1)
    c = RawClient(srv.host, srv.port)
    try:
        asked = (dld.DescribableLogDirTopic(topic=topic, partitions=(0,)),)
        for version in (1, 3, 4, 5):
            resp = c.request(35, version, dld.DescribeLogDirsRequest(topics=asked))
            [result] = resp.results
            assert result.error_code == 0 and result.log_dir.endswith("topics")
            assert [(t.name, [p.partition_index for p in t.partitions]) for t in result.topics] == [
                (topic, [0])
            ]
            if version >= 4:
                assert (result.total_bytes, result.usable_bytes) == (-1, -1)  # no volume: unknown
        none = c.request(
            35,
            4,
            dld.DescribeLogDirsRequest(topics=(dld.DescribableLogDirTopic(topic="x", partitions=(0,)),)),
        )
        assert none.results[0].topics == ()
    finally:
        c.close()


def test_describe_producers_of_invalid_unknown_and_internal_topics(groupcoord_server) -> None:  # type: ignore[no-untyped-def]
    c = RawClient(groupcoord_server.host, groupcoord_server.port)
    try:
        req = dp.DescribeProducersRequest(
            topics=(
                dp.DescribeProducersTopicRequest(name="", partition_indexes=(0,)),
                dp.DescribeProducersTopicRequest(name=unique("absent"), partition_indexes=(0, 1)),
                dp.DescribeProducersTopicRequest(name="__consumer_offsets", partition_indexes=(0,)),
            )
        )
        codes = [
            [(p.partition_index, p.error_code, p.active_producers) for p in t.partitions]
            for t in c.request(61, 0, req).topics
        ]
        assert codes == [
            [(0, E.INVALID_TOPIC_EXCEPTION, ())],
            [(0, E.UNKNOWN_TOPIC_OR_PARTITION, ()), (1, E.UNKNOWN_TOPIC_OR_PARTITION, ())],
            [(0, E.NONE, ())],
        ]
    finally:
        c.close()


async def test_a_commit_marker_for_the_offsets_topic_completes_pending_transactional_offsets(
    groupcoord_server,
) -> None:
    srv = groupcoord_server
    txid, topic, group = unique("wire-mk"), unique("wire-mk-t"), unique("wire-mk-g")
    create(srv.bootstrap, topic, 1)
    p = AIOKafkaProducer(bootstrap_servers=srv.bootstrap, transactional_id=txid)
    await p.start()
    admin = KafkaAdminClient(bootstrap_servers=srv.bootstrap)
    c = RawClient(srv.host, srv.port)
    try:
        await p.begin_transaction()
        await p.send_offsets_to_transaction({TopicPartition(topic, 0): OffsetAndMetadata(7, "")}, group)
        (state,) = c.request(
            65, 0, dtx.DescribeTransactionsRequest(transactional_ids=(txid,))
        ).transaction_states
        assert admin.list_group_offsets(group)[group] == {}  # pending until the marker
        marker = wm.WritableTxnMarker(
            producer_id=state.producer_id,
            producer_epoch=state.producer_epoch,
            transaction_result=True,
            topics=(wm.WritableTxnMarkerTopic(name="__consumer_offsets", partition_indexes=(0,)),),
            coordinator_epoch=0,
        )
        [m] = c.request(27, 1, wm.WriteTxnMarkersRequest(markers=(marker,))).markers
        assert [(t.name, p.partition_index, p.error_code) for t in m.topics for p in t.partitions] == [
            ("__consumer_offsets", 0, 0)
        ]
        offsets = admin.list_group_offsets(group)[group]
        assert {(tp.topic, tp.partition): om.offset for tp, om in offsets.items()} == {(topic, 0): 7}
    finally:
        c.close()
        admin.close()
        await p.stop()
