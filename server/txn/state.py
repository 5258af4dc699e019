"""Transaction coordinator state machine: Kafka's `TransactionMetadata` transitions, with no I/O.

Each transactional id has one `TxnMetadata`; every request is a pure function of it returning a `Decision`:
the error to answer, the new metadata to persist (a `TxnRecord`) before answering, and for EndTxn / fencing /
timeouts the `Markers` the service must then write (to every data partition and group of the transaction)
before the transaction is complete. States, as Kafka names them:

    Empty -> Ongoing (AddPartitionsToTxn / AddOffsetsToTxn)
    Ongoing -> PrepareCommit | PrepareAbort (EndTxn, a timeout, or a new producer fencing the old one)
    PrepareCommit -> CompleteCommit, PrepareAbort -> CompleteAbort (markers written)
    Complete* / Empty -> Empty with a bumped epoch (InitProducerId), or -> Ongoing (next transaction)

Kafka's PrepareEpochFence (a timeout or InitProducerId aborting with a fenced epoch) is persisted here
directly as PrepareAbort with the bumped epoch: the record says the same (the abort must complete, with that
epoch) and recovery treats both alike. Dead (transactional.id expiration) is not reached: ids never expire.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from groupcoord.protocol.errors import ErrorCode
from groupcoord.server.coordinator.records import TxnValue

EMPTY = "Empty"
ONGOING = "Ongoing"
PREPARE_COMMIT = "PrepareCommit"
PREPARE_ABORT = "PrepareAbort"
COMPLETE_COMMIT = "CompleteCommit"
COMPLETE_ABORT = "CompleteAbort"
DEAD = "Dead"
PREPARE_EPOCH_FENCE = "PrepareEpochFence"
STATES = (
    EMPTY,
    ONGOING,
    PREPARE_COMMIT,
    PREPARE_ABORT,
    COMPLETE_COMMIT,
    COMPLETE_ABORT,
    DEAD,
    PREPARE_EPOCH_FENCE,
)

MAX_EPOCH = 32767 - 1  # Kafka bumps to a new producer id before the epoch reaches Short.MAX_VALUE
E = ErrorCode


@dataclass(frozen=True, slots=True)
class Markers:
    """What completing a Prepare* state takes: a marker per partition, a completion per group."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    partitions: tuple[tuple[str, int], ...]
    groups: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Decision:
    error: ErrorCode = E.NONE
    value: TxnValue | None = None  # persist this (then apply it) before answering; None: nothing to write
    markers: Markers | None = None  # then write these and complete the transaction
    retry_init: bool = False  # InitProducerId met an ongoing transaction: abort it, then run init again


@dataclass(slots=True)
class TxnStateMachine:
    """Every transactional id's metadata (latest persisted value)."""

    max_timeout_ms: int = 900_000
    txns: dict[str, TxnValue] = field(default_factory=dict)

    # -------------------------------------------------------------------------------- replay and reads
    def replay(self, transactional_id: str, value: TxnValue | None) -> None:
        if value is None:
            self.txns.pop(transactional_id, None)
        else:
            self.txns[transactional_id] = value

    def apply(self, transactional_id: str, value: TxnValue) -> None:
        """Take a persisted decision's value as the current state."""
        self.txns[transactional_id] = value

    def get(self, transactional_id: str) -> TxnValue | None:
        return self.txns.get(transactional_id)

    def needs_producer_id(self, transactional_id: str) -> bool:
        """Whether InitProducerId will have to hand out a fresh producer id (new id, or epoch exhausted)."""
        v = self.txns.get(transactional_id)
        return v is None or v.producer_epoch >= MAX_EPOCH - 1

    # ---------------------------------------------------------------------------------- InitProducerId
    def init_producer_id(
        self,
        transactional_id: str,
        timeout_ms: int,
        expected_pid: int,
        expected_epoch: int,
        fresh_pid: int | None,
        now_ms: int,
    ) -> Decision:
        """Kafka's `TransactionCoordinator.handleInitProducerId` for a transactional id."""
        if timeout_ms <= 0 or timeout_ms > self.max_timeout_ms:
            return Decision(E.INVALID_TRANSACTION_TIMEOUT)
        v = self.txns.get(transactional_id)
        if v is None:
            assert fresh_pid is not None
            return Decision(value=TxnValue(fresh_pid, 0, -1, -1, timeout_ms, EMPTY, (), (), -1, now_ms))
        if v.state in (PREPARE_COMMIT, PREPARE_ABORT, PREPARE_EPOCH_FENCE):
            return Decision(E.CONCURRENT_TRANSACTIONS)
        if expected_pid != -1:  # KIP-360: a producer resuming with its id/epoch
            retry = expected_pid == v.last_producer_id and expected_epoch == v.last_producer_epoch
            if retry and v.state in (EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT):
                return Decision()  # a retried InitProducerId whose answer was lost: same answer
            if expected_pid != v.producer_id or expected_epoch != v.producer_epoch:
                return Decision(E.PRODUCER_FENCED)
        if v.state == ONGOING:  # fence the running producer: abort its transaction with a bumped epoch
            return Decision(
                value=self._prepare(v, commit=False, epoch=v.producer_epoch + 1, now_ms=now_ms),
                markers=self._markers(transactional_id, v, commit=False, epoch=v.producer_epoch + 1),
                retry_init=True,
            )
        if v.producer_epoch >= MAX_EPOCH - 1:
            assert fresh_pid is not None
            new = replace(
                v,
                producer_id=fresh_pid,
                producer_epoch=0,
                last_producer_id=v.producer_id,
                last_producer_epoch=v.producer_epoch,
            )
        else:
            new = replace(
                v,
                producer_epoch=v.producer_epoch + 1,
                last_producer_id=v.producer_id,
                last_producer_epoch=v.producer_epoch,
            )
        return Decision(
            value=replace(
                new,
                timeout_ms=timeout_ms,
                state=EMPTY,
                partitions=(),
                groups=(),
                start_ms=-1,
                update_ms=now_ms,
            )
        )

    # ------------------------------------------------------------------ AddPartitionsToTxn / AddOffsets
    def _check_producer(self, v: TxnValue | None, pid: int, epoch: int) -> ErrorCode:
        if v is None or v.producer_id != pid:
            return E.INVALID_PRODUCER_ID_MAPPING
        if epoch != v.producer_epoch:
            return E.PRODUCER_FENCED
        if v.state in (PREPARE_COMMIT, PREPARE_ABORT, PREPARE_EPOCH_FENCE):
            return E.CONCURRENT_TRANSACTIONS
        return E.NONE

    def add_partitions(
        self,
        transactional_id: str,
        pid: int,
        epoch: int,
        partitions: tuple[tuple[str, int], ...],
        now_ms: int,
    ) -> Decision:
        v = self.txns.get(transactional_id)
        err = self._check_producer(v, pid, epoch)
        if err:
            return Decision(err)
        assert v is not None
        if v.state == ONGOING and set(partitions) <= set(v.partitions):
            return Decision()  # nothing new: no write (Kafka answers at once too)
        merged = tuple(dict.fromkeys((*v.partitions, *partitions)))
        return Decision(value=self._ongoing(v, partitions=merged, now_ms=now_ms))

    def add_group(self, transactional_id: str, pid: int, epoch: int, group_id: str, now_ms: int) -> Decision:
        v = self.txns.get(transactional_id)
        err = self._check_producer(v, pid, epoch)
        if err:
            return Decision(err)
        assert v is not None
        if v.state == ONGOING and group_id in v.groups:
            return Decision()
        return Decision(
            value=self._ongoing(v, groups=tuple(dict.fromkeys((*v.groups, group_id))), now_ms=now_ms)
        )

    def _ongoing(
        self,
        v: TxnValue,
        *,
        now_ms: int,
        partitions: tuple[tuple[str, int], ...] | None = None,
        groups: tuple[str, ...] | None = None,
    ) -> TxnValue:
        starting = v.state != ONGOING
        return replace(
            v,
            state=ONGOING,
            partitions=partitions if partitions is not None else (() if starting else v.partitions),
            groups=groups if groups is not None else (() if starting else v.groups),
            start_ms=now_ms if starting else v.start_ms,
            update_ms=now_ms,
        )

    def verify_partition(
        self, transactional_id: str, pid: int, epoch: int, topic: str, partition: int
    ) -> ErrorCode:
        """A transactional Produce: the partition must be in this producer's ongoing transaction (KIP-890
        part 1 verification, done here at once since the coordinator is on this node)."""
        return self.verify_value(self.txns.get(transactional_id), pid, epoch, topic, partition)

    @staticmethod
    def verify_value(v: TxnValue | None, pid: int, epoch: int, topic: str, partition: int) -> ErrorCode:
        """`verify_partition` against a given state (cluster mode reads it from the store)."""
        if v is None or v.producer_id != pid:
            return E.INVALID_PRODUCER_ID_MAPPING
        if epoch < v.producer_epoch:
            return E.INVALID_PRODUCER_EPOCH
        if v.state != ONGOING or epoch != v.producer_epoch or (topic, partition) not in v.partitions:
            return E.INVALID_TXN_STATE
        return E.NONE

    # -------------------------------------------------------------------------------------------- EndTxn
    def end_txn(self, transactional_id: str, pid: int, epoch: int, commit: bool, now_ms: int) -> Decision:
        """Kafka's `handleEndTransaction` from a client."""
        v = self.txns.get(transactional_id)
        if v is None or v.producer_id != pid:
            return Decision(E.INVALID_PRODUCER_ID_MAPPING)
        if epoch != v.producer_epoch:
            return Decision(E.PRODUCER_FENCED)
        if v.state == ONGOING:
            return Decision(
                value=self._prepare(v, commit=commit, epoch=v.producer_epoch, now_ms=now_ms),
                markers=self._markers(transactional_id, v, commit=commit, epoch=v.producer_epoch),
            )
        if v.state == COMPLETE_COMMIT:
            return Decision(E.NONE if commit else E.INVALID_TXN_STATE)
        if v.state == COMPLETE_ABORT:
            return Decision(E.INVALID_TXN_STATE if commit else E.NONE)
        if v.state == PREPARE_COMMIT:
            return Decision(E.CONCURRENT_TRANSACTIONS if commit else E.INVALID_TXN_STATE)
        if v.state == PREPARE_ABORT:
            return Decision(E.INVALID_TXN_STATE if commit else E.CONCURRENT_TRANSACTIONS)
        return Decision(E.INVALID_TXN_STATE)  # Empty: nothing to end

    def _prepare(self, v: TxnValue, *, commit: bool, epoch: int, now_ms: int) -> TxnValue:
        bumped = epoch != v.producer_epoch
        return replace(
            v,
            state=PREPARE_COMMIT if commit else PREPARE_ABORT,
            producer_epoch=epoch,
            last_producer_id=v.producer_id if bumped else v.last_producer_id,
            last_producer_epoch=v.producer_epoch if bumped else v.last_producer_epoch,
            update_ms=now_ms,
        )

    @staticmethod
    def _markers(transactional_id: str, v: TxnValue, *, commit: bool, epoch: int) -> Markers:
        return Markers(transactional_id, v.producer_id, epoch, commit, v.partitions, v.groups)

    def complete(self, transactional_id: str, now_ms: int) -> TxnValue | None:
        """Prepare* -> Complete* once every marker is written; None when not preparing."""
        v = self.txns.get(transactional_id)
        if v is None or v.state not in (PREPARE_COMMIT, PREPARE_ABORT):
            return None
        return replace(
            v,
            state=COMPLETE_COMMIT if v.state == PREPARE_COMMIT else COMPLETE_ABORT,
            partitions=(),
            groups=(),
            start_ms=-1,
            update_ms=now_ms,
        )

    def markers_of(self, transactional_id: str) -> Markers | None:
        """The markers a Prepare* state still owes (recovery after a crash re-writes them)."""
        v = self.txns.get(transactional_id)
        if v is None or v.state not in (PREPARE_COMMIT, PREPARE_ABORT):
            return None
        return self._markers(transactional_id, v, commit=v.state == PREPARE_COMMIT, epoch=v.producer_epoch)

    # ------------------------------------------------------------------------------------------ timeouts
    def timed_out(self, now_ms: int) -> list[str]:
        """Ongoing transactions past their timeout (Kafka's `abortTimedOutTransactions`)."""
        return [t for t, v in self.txns.items() if v.state == ONGOING and v.start_ms + v.timeout_ms <= now_ms]

    def timeout_abort(self, transactional_id: str, now_ms: int) -> Decision:
        """Abort a timed-out transaction with a bumped epoch, fencing the producer that let it time out."""
        v = self.txns.get(transactional_id)
        if v is None or v.state != ONGOING:
            return Decision()
        epoch = v.producer_epoch + 1
        return Decision(
            value=self._prepare(v, commit=False, epoch=epoch, now_ms=now_ms),
            markers=self._markers(transactional_id, v, commit=False, epoch=epoch),
        )
