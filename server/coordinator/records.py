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
from typing import Any


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
    #: Kafka's ClassicMemberMetadata of a classic-protocol member (None: a consumer-protocol member):
    #: its session timeout and its (protocol name, metadata as hex) list
    classic_session_timeout_ms: int | None = None
    classic_protocols: tuple[tuple[str, str], ...] | None = None


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
    if d.get("classic_protocols") is not None:
        d["classic_protocols"] = tuple((name, meta) for name, meta in d["classic_protocols"])
    value: ConsumerGroupValue = CONSUMER_GROUP_VALUE_TYPES[kind](**d)
    return value


# ---------------------------------------------------------------------------------------- share groups


@dataclass(frozen=True, slots=True)
class ShareMemberValue:
    """One share-group member as Kafka's ShareGroupMemberMetadata + current assignment records keep it."""

    member_id: str
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    member_epoch: int
    previous_member_epoch: int
    assignment: tuple[tuple[str, tuple[int, ...]], ...]  # (topic id as hex, partitions)


@dataclass(frozen=True, slots=True)
class ShareGroupValue:
    """A KIP-932 share group (Kafka's ShareGroupMetadata, target assignment and member records in one)."""

    group_epoch: int
    assignment_epoch: int
    metadata_hash: int
    members: tuple[ShareMemberValue, ...]
    #: (topic id as hex, partitions) whose share-partition state exists (Kafka's initialized set)
    initialized: tuple[tuple[str, tuple[int, ...]], ...] = ()


@dataclass(frozen=True, slots=True)
class ShareGroupRecord:
    group_id: str
    value: ShareGroupValue | None  # None: tombstone

    @property
    def key(self) -> tuple[str, str]:
        return ("share_group", self.group_id)


@dataclass(frozen=True, slots=True)
class ShareStateBatch:
    """A range of a share partition in one durable state: 0 AVAILABLE, 2 ACKNOWLEDGED, 4 ARCHIVED."""

    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class SharePartitionValue:
    """Kafka's ShareSnapshot value: the share-partition start offset (SPSO) and the in-flight batches at or
    above it that are not plain never-delivered AVAILABLE records. ACQUIRED is never stored."""

    state_epoch: int
    start_offset: int  # -1: initialized but not resolved yet (share.auto.offset.reset at first fetch)
    delivery_complete_count: int
    batches: tuple[ShareStateBatch, ...]


@dataclass(frozen=True, slots=True)
class SharePartitionRecord:
    group_id: str
    topic_id: str  # hex
    partition: int
    value: SharePartitionValue | None  # None: tombstone

    @property
    def key(self) -> tuple[str, str, str, int]:
        return ("share_partition", self.group_id, self.topic_id, self.partition)


ShareRecord = ShareGroupRecord | SharePartitionRecord


def encode_share_record(rec: ShareRecord | StreamsGroupRecord) -> tuple[str, str | None]:
    """(key, value) as JSON text for the stores' one share table; value None for a tombstone."""
    key = json.dumps(list(rec.key), separators=(",", ":"))
    if rec.value is None:
        return key, None
    value = rec.value if isinstance(rec, StreamsGroupRecord) else dataclasses.asdict(rec.value)
    return key, json.dumps(value, separators=(",", ":"))


def decode_share_record(key_text: str, value_text: str) -> ShareRecord | StreamsGroupRecord:
    key = json.loads(key_text)
    d = json.loads(value_text)
    if key[0] == "streams_group":
        return StreamsGroupRecord(int(key[1]), key[2], key[3], d)
    if key[0] == "share_group":
        members = tuple(
            ShareMemberValue(
                **{
                    **m,
                    "subscribed_topic_names": tuple(m["subscribed_topic_names"]),
                    "assignment": tuple((t, tuple(ps)) for t, ps in m["assignment"]),
                }
            )
            for m in d["members"]
        )
        initialized = tuple((t, tuple(ps)) for t, ps in d.get("initialized", ()))
        value = ShareGroupValue(
            d["group_epoch"], d["assignment_epoch"], d["metadata_hash"], members, initialized
        )
        return ShareGroupRecord(key[1], value)
    if key[0] == "share_partition":
        batches = tuple(ShareStateBatch(**b) for b in d["batches"])
        spv = SharePartitionValue(d["state_epoch"], d["start_offset"], d["delivery_complete_count"], batches)
        return SharePartitionRecord(key[1], key[2], int(key[3]), spv)
    raise ValueError(f"unknown share record key {key!r}")


# ------------------------------------------------------------------------- KIP-1071 streams groups

#: Kafka's record types (the key's apiKey) of the streams-group records (spec §15)
STREAMS_GROUP_METADATA = 17
STREAMS_GROUP_MEMBER_METADATA = 19
STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA = 20
STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER = 21
STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT = 22
STREAMS_GROUP_TOPOLOGY = 23


@dataclass(frozen=True, slots=True)
class StreamsGroupRecord:
    """One of Kafka's streams-group records: `kind` is its record type (17, 19-23), `member_id` "" for the
    group-level ones; `value` holds the record's fields as JSON-ready data (see
    `server/coordinator/modern/streams/codec.py`). Stored in the share table's JSON rows."""

    kind: int
    group_id: str
    member_id: str
    value: dict[str, Any] | None  # None: tombstone

    @property
    def key(self) -> tuple[str, int, str, str]:
        return ("streams_group", self.kind, self.group_id, self.member_id)


#: what the group state machine replays (the transaction coordinator replays `TxnRecord`s itself)
Record = (
    GroupRecord
    | OffsetRecord
    | PendingOffsetRecord
    | TxnRecord
    | ConsumerGroupRecord
    | ShareGroupRecord
    | SharePartitionRecord
    | StreamsGroupRecord
)
