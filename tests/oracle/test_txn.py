"""Transactional offsets: InitProducerId, AddOffsetsToTxn, TxnOffsetCommit (right and wrong producer epoch,
generation, member), OffsetFetch with require_stable while pending, EndTxn commit and abort, on Kafka 4.4 and
groupcoord."""

from __future__ import annotations

import pytest

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.messages.add_offsets_to_txn import AddOffsetsToTxnRequest
from groupcoord.protocol.messages.end_txn import EndTxnRequest
from groupcoord.protocol.messages.init_producer_id import InitProducerIdRequest
from groupcoord.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopics,
)
from groupcoord.protocol.messages.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)
from tests.oracle.reqs import fetch_offsets
from tests.oracle.transcript import Names, Recorder, assert_same

pytestmark = pytest.mark.integration


def _txn_commit(r: Recorder, c, label: str, txn: str, g: str, pid: int, epoch: int, t: str, off: int, **kw):  # type: ignore[no-untyped-def]
    part = TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=off, committed_metadata="")
    body = TxnOffsetCommitRequest(
        transactional_id=txn, group_id=g, producer_id=pid, producer_epoch=epoch,
        topics=(TxnOffsetCommitRequestTopic(name=t, partitions=(part,)),), **kw,
    )  # fmt: skip
    return r.call(c, label, ApiKey.TXN_OFFSET_COMMIT, 4, body)


def txn_offsets(r: Recorder, n: Names) -> None:
    g, t, txn = n("g"), n("t"), n("txn")
    r.target.create_topic(t, 1)
    r.target.wait_coordinator(txn, 1)
    c = r.conn("txn")
    # retried as a client does while the transaction log loads (Kafka creates it on first use)
    ipi = InitProducerIdRequest(transactional_id=txn, transaction_timeout_ms=60000)
    init = r.poll(c, ApiKey.INIT_PRODUCER_ID, 4, ipi, until=lambda x: x.error_code not in (14, 15, 16))
    r.note("init producer id", {"error": init.error_code, "epoch": init.producer_epoch})
    pid, ep = init.producer_id, init.producer_epoch
    _txn_commit(r, c, "txn commit before AddOffsetsToTxn", txn, g, pid, ep, t, 5)
    add = AddOffsetsToTxnRequest(transactional_id=txn, producer_id=pid, producer_epoch=ep, group_id=g)
    r.call(c, "add offsets", ApiKey.ADD_OFFSETS_TO_TXN, 3, add)
    _txn_commit(r, c, "txn commit", txn, g, pid, ep, t, 7)
    _txn_commit(
        r, c, "txn commit wrong generation", txn, g, pid, ep, t, 8, generation_id=4, member_id="nobody"
    )
    stable = OffsetFetchRequest(
        groups=(
            OffsetFetchRequestGroup(
                group_id=g, topics=(OffsetFetchRequestTopics(name=t, partition_indexes=(0,)),)
            ),
        ),
        require_stable=True,
    )
    r.call(c, "fetch require_stable while pending", ApiKey.OFFSET_FETCH, 9, stable)
    fetch_offsets(r, c, "fetch while pending", g, {t: (0,)})
    r.call(
        c,
        "end txn commit",
        ApiKey.END_TXN,
        3,
        EndTxnRequest(transactional_id=txn, producer_id=pid, producer_epoch=ep, committed=True),
    )
    r.poll(
        c, ApiKey.OFFSET_FETCH, 9, stable, until=lambda x: x.groups[0].topics[0].partitions[0].error_code == 0
    )
    fetch_offsets(r, c, "fetch after commit", g, {t: (0,)})
    r.call(c, "add offsets again", ApiKey.ADD_OFFSETS_TO_TXN, 3, add)
    _txn_commit(r, c, "txn commit to abort", txn, g, pid, ep, t, 9)
    r.call(
        c,
        "end txn abort",
        ApiKey.END_TXN,
        3,
        EndTxnRequest(transactional_id=txn, producer_id=pid, producer_epoch=ep, committed=False),
    )
    r.poll(
        c, ApiKey.OFFSET_FETCH, 9, stable, until=lambda x: x.groups[0].topics[0].partitions[0].error_code == 0
    )
    fetch_offsets(r, c, "fetch after abort", g, {t: (0,)})


@pytest.mark.parametrize("scenario", [txn_offsets], ids=lambda s: s.__name__)
def test_txn_same_as_kafka(oracle_pair, scenario) -> None:  # type: ignore[no-untyped-def]
    assert_same(oracle_pair, scenario, scenario.__name__)
