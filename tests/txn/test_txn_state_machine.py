"""The transaction coordinator's pure state machine (server/txn/state.py): Kafka's transitions and errors."""

from __future__ import annotations

from groupcoord.protocol.errors import ErrorCode as E
from groupcoord.server.txn.state import (
    COMPLETE_ABORT,
    COMPLETE_COMMIT,
    EMPTY,
    ONGOING,
    PREPARE_ABORT,
    PREPARE_COMMIT,
    TxnStateMachine,
)

T = "app-1"


def started(sm: TxnStateMachine, pid: int = 100) -> None:
    d = sm.init_producer_id(T, 60_000, -1, -1, pid, 0)
    assert d.error == E.NONE and d.value is not None
    sm.apply(T, d.value)


def test_new_transactional_id_gets_epoch_zero_and_reinit_bumps_the_epoch() -> None:
    sm = TxnStateMachine()
    started(sm)
    v = sm.get(T)
    assert (v.producer_id, v.producer_epoch, v.state) == (100, 0, EMPTY)
    d = sm.init_producer_id(T, 60_000, -1, -1, None, 5)
    sm.apply(T, d.value)
    assert (sm.get(T).producer_id, sm.get(T).producer_epoch) == (100, 1)


def test_timeout_above_the_maximum_is_invalid() -> None:
    sm = TxnStateMachine(max_timeout_ms=1000)
    assert sm.init_producer_id(T, 1001, -1, -1, 1, 0).error == E.INVALID_TRANSACTION_TIMEOUT
    assert sm.init_producer_id(T, 0, -1, -1, 1, 0).error == E.INVALID_TRANSACTION_TIMEOUT


def test_add_partitions_starts_a_transaction_and_end_txn_prepares_markers() -> None:
    sm = TxnStateMachine()
    started(sm)
    d = sm.add_partitions(T, 100, 0, (("t", 0), ("t", 1)), 10)
    sm.apply(T, d.value)
    assert sm.get(T).state == ONGOING and sm.get(T).start_ms == 10
    assert sm.add_partitions(T, 100, 0, (("t", 0),), 11).value is None  # nothing new: no write
    sm.apply(T, sm.add_group(T, 100, 0, "g", 12).value)
    d = sm.end_txn(T, 100, 0, True, 20)
    assert d.value.state == PREPARE_COMMIT
    assert d.markers.partitions == (("t", 0), ("t", 1)) and d.markers.groups == ("g",) and d.markers.commit
    sm.apply(T, d.value)
    assert sm.end_txn(T, 100, 0, True, 21).error == E.CONCURRENT_TRANSACTIONS
    assert sm.add_partitions(T, 100, 0, (("t", 2),), 21).error == E.CONCURRENT_TRANSACTIONS
    sm.apply(T, sm.complete(T, 22))
    v = sm.get(T)
    assert v.state == COMPLETE_COMMIT and v.partitions == () and v.groups == ()
    assert sm.end_txn(T, 100, 0, True, 23).error == E.NONE  # a retried commit
    assert sm.end_txn(T, 100, 0, False, 23).error == E.INVALID_TXN_STATE


def test_wrong_producer_id_or_epoch_is_refused() -> None:
    sm = TxnStateMachine()
    started(sm)
    assert sm.add_partitions(T, 999, 0, (("t", 0),), 1).error == E.INVALID_PRODUCER_ID_MAPPING
    assert sm.add_partitions(T, 100, 7, (("t", 0),), 1).error == E.PRODUCER_FENCED
    assert sm.end_txn("nobody", 100, 0, True, 1).error == E.INVALID_PRODUCER_ID_MAPPING
    assert sm.end_txn(T, 100, 0, True, 1).error == E.INVALID_TXN_STATE  # Empty: nothing to end


def test_init_producer_id_on_an_ongoing_transaction_aborts_it_with_a_fenced_epoch() -> None:
    sm = TxnStateMachine()
    started(sm)
    sm.apply(T, sm.add_partitions(T, 100, 0, (("t", 0),), 1).value)
    d = sm.init_producer_id(T, 60_000, -1, -1, None, 2)
    assert d.retry_init and d.value.state == PREPARE_ABORT and d.value.producer_epoch == 1
    assert d.markers.producer_epoch == 1 and not d.markers.commit
    sm.apply(T, d.value)
    sm.apply(T, sm.complete(T, 3))
    assert sm.get(T).state == COMPLETE_ABORT
    d = sm.init_producer_id(T, 60_000, -1, -1, None, 4)
    sm.apply(T, d.value)
    assert sm.get(T).producer_epoch == 2
    assert sm.add_partitions(T, 100, 0, (("t", 0),), 5).error == E.PRODUCER_FENCED  # the zombie


def test_kip360_resume_with_a_stale_epoch_is_fenced_and_a_retry_gets_the_same_answer() -> None:
    sm = TxnStateMachine()
    started(sm)
    sm.apply(T, sm.init_producer_id(T, 60_000, 100, 0, None, 1).value)  # resume: 0 -> 1
    assert sm.init_producer_id(T, 60_000, 100, 0, None, 2).value is None  # retry of that call: same answer
    assert sm.init_producer_id(T, 60_000, 100, 5, None, 2).error == E.PRODUCER_FENCED


def test_timed_out_transaction_aborts_with_a_bumped_epoch() -> None:
    sm = TxnStateMachine()
    started(sm)
    sm.apply(T, sm.add_partitions(T, 100, 0, (("t", 0),), 1_000).value)
    assert sm.timed_out(60_999) == []
    assert sm.timed_out(61_000) == [T]
    d = sm.timeout_abort(T, 61_000)
    assert d.value.state == PREPARE_ABORT and d.value.producer_epoch == 1 and d.markers.producer_epoch == 1
    sm.apply(T, d.value)
    assert sm.markers_of(T) == d.markers  # what recovery re-writes after a crash here
    assert sm.end_txn(T, 100, 0, True, 61_001).error == E.PRODUCER_FENCED


def test_produce_verification_needs_the_partition_in_the_ongoing_transaction() -> None:
    sm = TxnStateMachine()
    started(sm)
    assert sm.verify_partition(T, 100, 0, "t", 0) == E.INVALID_TXN_STATE
    sm.apply(T, sm.add_partitions(T, 100, 0, (("t", 0),), 1).value)
    assert sm.verify_partition(T, 100, 0, "t", 0) == E.NONE
    assert sm.verify_partition(T, 100, 0, "t", 1) == E.INVALID_TXN_STATE
    sm.apply(T, sm.timeout_abort(T, 1).value)
    assert sm.verify_partition(T, 100, 0, "t", 0) == E.INVALID_PRODUCER_EPOCH
