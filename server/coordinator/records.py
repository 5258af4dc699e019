"""Records the group state machine asks storage to persist.

They play the part of Kafka's `__consumer_offsets` records: the state machine emits them at Kafka's persist
points, storage keeps the latest value per key, and on start the machine is rebuilt by replaying them
(`GroupStateMachine.replay`); `TxnRecord`s are the transaction coordinator's (`server/txn`), kept by the same
store (Kafka's `__transaction_state`). A record whose `value` is None is a tombstone: storage deletes the key.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class MemberMetadataValue:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes  # the member's metadata for the selected protocol
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    protocol_type: str | None
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int  # epoch ms
    members: tuple[MemberMetadataValue, ...]


@dataclass(frozen=True, slots=True)
class GroupRecord:
    group_id: str
    value: GroupMetadataValue | None  # None: tombstone

    @property
    def key(self) -> tuple[str, str]:
        return ("group", self.group_id)


@dataclass(frozen=True, slots=True)
class OffsetValue:
    offset: int
    leader_epoch: int  # -1: absent
    metadata: str
    commit_timestamp: int  # epoch ms
    expire_timestamp: int  # epoch ms, -1: none (only v2-v4 RetentionTimeMs sets it)


@dataclass(frozen=True, slots=True)
class OffsetRecord:
    group_id: str
    topic: str
    partition: int
    value: OffsetValue | None  # None: tombstone

    @property
    def key(self) -> tuple[str, str, str, int]:
        return ("offset", self.group_id, self.topic, self.partition)


@dataclass(frozen=True, slots=True)
class PendingOffsetRecord:
    """A transactional offset (TxnOffsetCommit) of producer `producer_id`, not yet visible: it becomes an
    `OffsetRecord` on the transaction's COMMIT marker and is dropped on ABORT (Kafka writes it to
    `__consumer_offsets` with the producer id and replays it as pending until the marker)."""

    group_id: str
    producer_id: int
    topic: str
    partition: int
    value: OffsetValue | None  # None: tombstone (the transaction ended)

    @property
    def key(self) -> tuple[str, str, int, str, int]:
        return ("pending", self.group_id, self.producer_id, self.topic, self.partition)


@dataclass(frozen=True, slots=True)
class TxnValue:
    """Kafka's `TransactionLogValue`: the transaction coordinator's durable state of one transactional id."""

    producer_id: int
    producer_epoch: int
    last_producer_id: int  # -1: none (set when the epoch is fenced or exhausted, KIP-360)
    last_producer_epoch: int
    timeout_ms: int
    state: (
        str  # Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort, PrepareEpochFence
    )
    partitions: tuple[tuple[str, int], ...]  # data partitions in the transaction
    groups: tuple[str, ...]  # consumer groups whose offsets are in it (AddOffsetsToTxn)
    start_ms: int  # when the transaction started (-1 when none runs)
    update_ms: int


@dataclass(frozen=True, slots=True)
class TxnRecord:
    transactional_id: str
    value: TxnValue | None  # None: tombstone (expired transactional id)

    @property
    def key(self) -> tuple[str, str]:
        return ("txn", self.transactional_id)


#: what the group state machine replays (the transaction coordinator replays `TxnRecord`s itself)
Record = GroupRecord | OffsetRecord | PendingOffsetRecord | TxnRecord
