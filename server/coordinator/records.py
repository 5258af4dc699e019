"""Records the group state machine asks storage to persist.

They play the part of Kafka's `__consumer_offsets` records: the state machine emits them at Kafka's persist
points, storage keeps the latest value per key, and on start the machine is rebuilt by replaying them
(`GroupStateMachine.replay`). A record whose `value` is None is a tombstone: storage deletes the key.
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
    def key(self) -> tuple:
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
    def key(self) -> tuple:
        return ("offset", self.group_id, self.topic, self.partition)


Record = GroupRecord | OffsetRecord
