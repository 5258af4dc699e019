"""Records the group state machine asks storage to persist.

They play the part of Kafka's `__consumer_offsets` records: the state machine emits them at Kafka's persist
points, storage keeps the latest value per key, and on start the machine is rebuilt by replaying them
(`GroupStateMachine.replay`); `TxnRecord`s are the transaction coordinator's (`server/txn`), kept by the same
store (Kafka's `__transaction_state`). A record whose `value` is None is a tombstone: storage deletes the key.
"""

from __future__ import annotations

import dataclasses
import json
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


# ------------------------------------------------------------------ KIP-848 consumer groups (spec §6)

#: Kafka's record types (the key's apiKey) of the consumer-group records groupcoord writes
CONSUMER_GROUP_METADATA = 3
CONSUMER_GROUP_MEMBER_METADATA = 5
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA = 6
CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER = 7
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT = 8


@dataclass(frozen=True, slots=True)
class TopicPartitionsValue:
    """One topic's partitions; `assignment_epochs` runs parallel to `partitions` (KIP-1251) when present."""

    topic_id: str  # the topic id in its UUID string form
    partitions: tuple[int, ...]
    assignment_epochs: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadataValue:
    epoch: int
    metadata_hash: int = 0


@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberMetadataValue:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMetadataValue:
    assignment_epoch: int
    assignment_timestamp: int = 0


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMemberValue:
    topic_partitions: tuple[TopicPartitionsValue, ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int  # MemberState as an int8
    assigned_partitions: tuple[TopicPartitionsValue, ...]
    partitions_pending_revocation: tuple[TopicPartitionsValue, ...]


ConsumerGroupValue = (
    ConsumerGroupMetadataValue
    | ConsumerGroupMemberMetadataValue
    | ConsumerGroupTargetAssignmentMetadataValue
    | ConsumerGroupTargetAssignmentMemberValue
    | ConsumerGroupCurrentMemberAssignmentValue
)

CONSUMER_GROUP_VALUE_TYPES: dict[int, type] = {
    CONSUMER_GROUP_METADATA: ConsumerGroupMetadataValue,
    CONSUMER_GROUP_MEMBER_METADATA: ConsumerGroupMemberMetadataValue,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA: ConsumerGroupTargetAssignmentMetadataValue,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER: ConsumerGroupTargetAssignmentMemberValue,
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT: ConsumerGroupCurrentMemberAssignmentValue,
}


@dataclass(frozen=True, slots=True)
class ConsumerGroupRecord:
    """One of Kafka's consumer-group records: `kind` is its record type (3, 5, 6, 7, 8), `member_id` is ""
    for the group-level ones. Stores keep the latest value per (kind, group, member)."""

    kind: int
    group_id: str
    member_id: str
    value: ConsumerGroupValue | None  # None: tombstone

    @property
    def key(self) -> tuple[str, int, str, str]:
        return ("consumer_group", self.kind, self.group_id, self.member_id)


def encode_consumer_group_value(value: ConsumerGroupValue) -> str:
    """The value as compact JSON (what the durable stores keep)."""
    return json.dumps(dataclasses.asdict(value), separators=(",", ":"))


def decode_consumer_group_value(kind: int, text: str) -> ConsumerGroupValue:
    d = json.loads(text)
    for name in ("topic_partitions", "assigned_partitions", "partitions_pending_revocation"):
        if name in d:
            d[name] = tuple(
                TopicPartitionsValue(
                    tp["topic_id"],
                    tuple(tp["partitions"]),
                    None if tp.get("assignment_epochs") is None else tuple(tp["assignment_epochs"]),
                )
                for tp in d[name]
            )
    if "subscribed_topic_names" in d:
        d["subscribed_topic_names"] = tuple(d["subscribed_topic_names"])
    value: ConsumerGroupValue = CONSUMER_GROUP_VALUE_TYPES[kind](**d)
    return value


#: what the group state machine replays (the transaction coordinator replays `TxnRecord`s itself)
Record = GroupRecord | OffsetRecord | PendingOffsetRecord | TxnRecord | ConsumerGroupRecord
