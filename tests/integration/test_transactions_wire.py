"""Transaction APIs no client library here sends, over raw wire frames against a live transaction of
aiokafka's: DescribeTransactions, ListTransactions (filters), AddPartitionsToTxn v4 VerifyOnly, the
PRODUCER_FENCED → INVALID_PRODUCER_EPOCH mapping of old versions, ListOffsets with read_committed."""

from __future__ import annotations

import logging

import pytest
from aiokafka import AIOKafkaProducer

from groupcoord.protocol.errors import ErrorCode as E
from groupcoord.protocol.messages import add_partitions_to_txn as ap
from groupcoord.protocol.messages import describe_transactions as dtx
from groupcoord.protocol.messages import end_txn as et
from groupcoord.protocol.messages import list_offsets as lo
from groupcoord.protocol.messages import list_transactions as ltx
from tests.integration.helpers import RawClient
from tests.integration.names import unique
from tests.integration.test_transactions_aiokafka import produce_plain

pytestmark = [pytest.mark.integration]
logging.getLogger("aiokafka").setLevel(logging.CRITICAL)


async def test_operator_views_verify_only_and_isolated_list_offsets_during_a_transaction(
    groupcoord_server,
) -> None:
    srv = groupcoord_server
    txid, topic = unique("wire-app"), unique("wire-t")
    p = AIOKafkaProducer(bootstrap_servers=srv.bootstrap, transactional_id=txid)
    await p.start()
    raw = RawClient(srv.host, srv.port)
    try:
        await produce_plain(srv.bootstrap, topic, [b"before"])  # outside any transaction
        await p.begin_transaction()
        await p.send_and_wait(topic, b"inside", partition=0)

        (state,) = raw.request(
            65, 0, dtx.DescribeTransactionsRequest(transactional_ids=(txid,))
        ).transaction_states
        assert (state.error_code, state.transaction_state) == (0, "Ongoing")
        assert [(t.topic, t.partitions) for t in state.topics] == [(topic, (0,))]
        pid, epoch = state.producer_id, state.producer_epoch
        (unknown,) = raw.request(
            65, 0, dtx.DescribeTransactionsRequest(transactional_ids=("nope",))
        ).transaction_states
        assert unknown.error_code == E.TRANSACTIONAL_ID_NOT_FOUND

        listed = raw.request(66, 1, ltx.ListTransactionsRequest(state_filters=("Ongoing", "Bogus")))
        mine = [
            (t.transactional_id, t.producer_id)
            for t in listed.transaction_states
            if t.transactional_id == txid
        ]
        assert mine == [(txid, pid)]  # others' leftovers may be listed too on a shared server
        assert all(t.transaction_state == "Ongoing" for t in listed.transaction_states)
        assert listed.unknown_state_filters == ("Bogus",)
        assert (
            raw.request(66, 0, ltx.ListTransactionsRequest(producer_id_filters=(2**62,))).transaction_states
            == ()
        )
        bad = raw.request(66, 2, ltx.ListTransactionsRequest(transactional_id_pattern="(")).error_code
        assert bad == E.INVALID_REGULAR_EXPRESSION

        verify = ap.AddPartitionsToTxnRequest(
            transactions=(
                ap.AddPartitionsToTxnTransaction(
                    transactional_id=txid,
                    producer_id=pid,
                    producer_epoch=epoch,
                    verify_only=True,
                    topics=(ap.AddPartitionsToTxnTopic(name=topic, partitions=(0,)),),
                ),
            )
        )
        (result,) = raw.request(24, 4, verify).results_by_transaction
        assert result.topic_results[0].results_by_partition[0].partition_error_code == 0

        stale = ap.AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=txid,
            v3_and_below_producer_id=pid,
            v3_and_below_producer_epoch=epoch - 1 if epoch > 0 else epoch + 5,
            v3_and_below_topics=(ap.AddPartitionsToTxnTopic(name=topic, partitions=(0,)),),
        )
        for version, code in ((1, E.INVALID_PRODUCER_EPOCH), (3, E.PRODUCER_FENCED)):
            r = raw.request(24, version, stale).results_by_topic_v3_and_below[0].results_by_partition[0]
            assert r.partition_error_code == code
        assert raw.request(26, 3, et.EndTxnRequest(
            transactional_id="nope", producer_id=pid, producer_epoch=epoch, committed=True)).error_code == (
            E.INVALID_PRODUCER_ID_MAPPING)  # fmt: skip

        def latest(isolation: int) -> int:
            req = lo.ListOffsetsRequest(replica_id=-1, isolation_level=isolation, topics=(
                lo.ListOffsetsTopic(name=topic, partitions=(lo.ListOffsetsPartition(partition_index=0, timestamp=-1),)),))  # fmt: skip
            return raw.request(2, 5, req).topics[0].partitions[0].offset

        assert (latest(0), latest(1)) == (2, 1)  # read_committed: the last stable offset
        await p.commit_transaction()
        assert (latest(0), latest(1)) == (3, 3)  # the marker is offset 2
    finally:
        raw.close()
        await p.stop()
