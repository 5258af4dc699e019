"""`ShareHome`: where share-partition state lives when every topic partition has a leader of its own
(cluster mode; server/cluster/share_state.py is the implementation, docs/cluster.md "Share groups").

Why a seam of its own: on a single node the share service keeps every share partition and writes snapshots
through the coordinator's `StateStore`. In a cluster the share partitions of a topic partition are served
by that partition's leader (Kafka's SharePartitionManager sits beside the replica manager), their snapshots
are written fenced by the partition's lease, loaded when the partition is taken over and dropped when it is
lost; the offsets admin APIs, served by the group's coordinator, change the stored states directly. The
share service asks this interface, and nothing of the cluster room, for all of that.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from groupcoord.server.coordinator.records import SharePartitionRecord, SharePartitionValue

#: (group id, topic id hex, partition)
PartitionKey = tuple[str, str, int]
#: (topic id hex, partition)
TopicPartition = tuple[str, int]


class ShareHome(Protocol):
    #: told (group, topic id, partition) when another node's admin call replaced or deleted a stored state
    on_changed: Callable[[PartitionKey], None]

    def epoch_of(self, topic_id: str, partition: int) -> int | None:
        """The leader epoch this node leads the partition at (its log loaded); None: not led here."""

    async def load(self, topic_id: str, partition: int) -> list[SharePartitionRecord]:
        """Every group's stored state of a partition just taken over (raises when it cannot be read)."""

    async def load_key(self, key: PartitionKey) -> SharePartitionRecord | None:
        """One stored state, read again after an admin call changed it; None: there is none."""

    async def write(
        self, records: Sequence[SharePartitionRecord], epochs: Mapping[TopicPartition, int]
    ) -> dict[PartitionKey, int]:
        """Write snapshots, each fenced by its partition's lease at `epochs` (the epoch its state was loaded
        at). Returns the keys not written with their error: NOT_LEADER_OR_FOLLOWER (the lease is gone) or
        FENCED_STATE_EPOCH (an admin call replaced the state meanwhile). Raises when in doubt."""

    def forget(self, topic_id: str, partition: int) -> None:
        """The partition's states left this node's memory (lost, fenced): drop what is known of them."""

    async def stored(self, group_id: str) -> dict[TopicPartition, SharePartitionValue]:
        """The group's stored states (the offsets admin APIs, on the group's coordinator)."""

    async def replace(
        self, group_id: str, states: Mapping[TopicPartition, SharePartitionValue | None]
    ) -> None:
        """Admin: put these states (None: delete) in place of the stored ones, whoever leads the partitions;
        their leaders drop what they held and read the new ones. Raises when it failed."""
