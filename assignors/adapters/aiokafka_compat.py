"""The two places where aiokafka 0.14 hides information an assignor needs, and how we get it back.

1. **Full subscriptions.** aiokafka's leader decodes every member's metadata with its v0 struct
   (``ConsumerProtocol.METADATA``), dropping ownedPartitions, generationId and rackId. We swap in a
   subclass that also keeps the raw bytes (``raw_bytes``), so adapters can decode v1..v3 themselves. It
   has the same schema, fields, equality and encoding, so nothing else changes.
2. **Generation.** aiokafka never calls ``on_generation_assignment``. The group generation lives on the
   consumer's private coordinator (``consumer._coordinator.generation``); :func:`current_generation`
   reads it if the attribute exists and returns None otherwise, so a future aiokafka that renames it
   degrades to the leader's generation stamp instead of failing.
"""

from __future__ import annotations

from typing import Any

from aiokafka.coordinator import protocol as _akp
from aiokafka.structs import TopicPartition as AioTopicPartition

from groupcoord.assignors.model import TopicMetadata


class RawConsumerProtocolMemberMetadata(_akp.ConsumerProtocolMemberMetadata):
    """aiokafka's v0 subscription struct that also remembers the bytes it was decoded from."""

    @classmethod
    def decode(cls, data: Any) -> RawConsumerProtocolMemberMetadata:
        raw = bytes(data) if isinstance(data, (bytes, bytearray, memoryview)) else None
        obj = super().decode(data)
        obj.__dict__["raw_bytes"] = raw
        return obj


def install_full_subscription_decoding() -> None:
    """Make aiokafka's leader keep raw subscription bytes (idempotent; process-wide)."""
    if not issubclass(_akp.ConsumerProtocol.METADATA, RawConsumerProtocolMemberMetadata):
        _akp.ConsumerProtocol.METADATA = RawConsumerProtocolMemberMetadata


def current_generation(consumer: Any) -> int | None:
    """The consumer's group generation as aiokafka's coordinator tracks it, or None if unavailable."""
    coordinator = getattr(consumer, "_coordinator", None)
    generation = getattr(coordinator, "generation", None)
    return generation if isinstance(generation, int) else None


def topic_metadata(cluster: Any, topic: str) -> TopicMetadata | None:
    """A topic's partitions and replica racks from aiokafka's ClusterMetadata (None: no metadata yet).

    Replica lists are only kept in the private ``_partitions`` map; without it, the leader's rack is used.
    """
    parts = cluster.partitions_for_topic(topic)
    if parts is None:
        return None
    infos = getattr(cluster, "_partitions", {}).get(topic, {})
    racks: dict[int, frozenset[str]] = {}
    for p in parts:
        info = infos.get(p)
        if info is not None:
            nodes = list(info.replicas or ()) or [info.leader]
        else:
            nodes = [cluster.leader_for_partition(AioTopicPartition(topic, p))]
        names = set()
        for node in nodes:
            broker = cluster.broker_metadata(node) if node is not None and node != -1 else None
            if broker is not None and broker.rack:
                names.add(broker.rack)
        if names:
            racks[p] = frozenset(names)
    return TopicMetadata(topic, tuple(parts), racks)
