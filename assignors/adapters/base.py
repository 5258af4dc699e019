"""Common aiokafka adapter: wire format, cluster metadata and generation tracking around a core strategy.

Adapters are meant to be used as *instances* (one per consumer): they remember the member's last
assignment and generation, which the next JoinGroup must report (KIP-792). aiokafka accepts instances
in ``partition_assignment_strategy`` because it only calls ``name``, ``metadata``, ``assign`` and
``on_assignment`` on whatever object it is given.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from aiokafka.coordinator.assignors.abstract import AbstractPartitionAssignor

from groupcoord.assignors.adapters.aiokafka_compat import (
    current_generation,
    install_full_subscription_decoding,
    topic_metadata,
)
from groupcoord.assignors.adapters.subscription import group_partitions, member_from_subscription
from groupcoord.assignors.adapters.userdata import decode_stamp, encode_labels, encode_stamp
from groupcoord.assignors.model import GroupAssignment, GroupInput, Member, TopicPartition
from groupcoord.protocol.consumer import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from groupcoord.protocol.errors import DecodeError

log = logging.getLogger(__name__)

SUBSCRIPTION_VERSION = 3
ASSIGNMENT_VERSION = 0  # v0..v3 share one layout; v0 is what every client (aiokafka included) expects


class CoreAssignor(AbstractPartitionAssignor):
    """Base for all adapters; subclasses set ``name`` and implement :meth:`run`.

    ``rack`` is sent as the subscription v3 ``rack_id`` (and as a ``rack`` label in user data);
    ``labels`` are extra string key/values for metadata-based strategies. ``full_subscriptions`` installs
    :func:`install_full_subscription_decoding` so this process's leader can see other members' v1..v3
    fields; without it, only what travels in v0 (topics, user data) is visible.
    """

    name = "groupcoord-base"
    uses_sticky_user_data = False

    def __init__(
        self,
        *,
        rack: str | None = None,
        labels: Mapping[str, str] | None = None,
        full_subscriptions: bool = True,
    ) -> None:
        self.rack = rack or None
        self.labels = dict(labels or {})
        if self.rack is not None:
            self.labels.setdefault("rack", self.rack)
        self.owned: tuple[TopicPartition, ...] = ()
        self.generation = -1
        self._consumer: Any = None
        if full_subscriptions:
            install_full_subscription_decoding()

    # -- generation ---------------------------------------------------------------------------------
    def bind(self, consumer: Any) -> CoreAssignor:
        """Read the real group generation from ``consumer`` (aiokafka never passes it to assignors)."""
        self._consumer = consumer
        return self

    def on_generation_assignment(self, generation: int) -> None:
        """kafka-python's hook; aiokafka 0.14 never calls it, but callers may."""
        self.generation = generation

    def _bound_generation(self) -> int | None:
        return current_generation(self._consumer) if self._consumer is not None else None

    # -- aiokafka interface -------------------------------------------------------------------------
    def metadata(self, topics: Iterable[str]) -> bytes:  # type: ignore[override]
        """ConsumerProtocolSubscription v3: topics, user data, owned partitions, generation, rack."""
        if self._bound_generation() == -1 and self.generation >= 0:
            # aiokafka reset our generation (we were fenced/expelled): our partitions are lost, as in Java.
            self.owned, self.generation = (), -1
        sub = ConsumerProtocolSubscription(
            version=SUBSCRIPTION_VERSION,
            topics=tuple(sorted(topics)),
            user_data=self.subscription_user_data(),
            owned_partitions=group_partitions(self.owned),
            generation_id=self.generation,
            rack_id=self.rack,
        )
        return encode_subscription(sub)

    def subscription_user_data(self) -> bytes | None:
        return encode_labels(self.labels)

    def assign(self, cluster: Any, members: Mapping[str, Any]) -> dict[str, bytes]:  # type: ignore[override]
        """Decode every member's subscription (any version), run the strategy, encode assignments.

        Returns encoded ConsumerProtocolAssignment bytes, which aiokafka sends as-is.
        """
        decoded = [self.decode_member(member_id, md) for member_id, md in members.items()]
        wanted = sorted({t for m in decoded for t in m.topics})
        topics = [tm for tm in (topic_metadata(cluster, t) for t in wanted) if tm is not None]
        result = self.run(GroupInput.build(topics, decoded))
        stamp = self._bound_generation()
        if stamp is None or stamp < 0:
            stamp = max((m.generation for m in decoded), default=-1) + 1
        return {
            member_id: encode_assignment(
                ConsumerProtocolAssignment(
                    version=ASSIGNMENT_VERSION,
                    assigned_partitions=group_partitions(a.partitions),
                    user_data=a.user_data if a.user_data is not None else encode_stamp(stamp),
                )
            )
            for member_id, a in result.items()
        }

    def on_assignment(self, assignment: Any) -> None:  # type: ignore[override]
        """Remember what we were given and at which generation, for the next subscription."""
        self.owned = tuple(sorted(TopicPartition(t, p) for t, ps in assignment.assignment for p in ps))
        generation = self._bound_generation()
        if generation is None or generation < 0:
            generation = decode_stamp(assignment.user_data)
        self.generation = generation if generation is not None else -1

    # -- helpers ------------------------------------------------------------------------------------
    def decode_member(self, member_id: str, metadata: Any) -> Member:
        """Subscription of any version: raw bytes if we have them, else aiokafka's v0 fields."""
        raw = metadata if isinstance(metadata, bytes) else getattr(metadata, "raw_bytes", None)
        sub = None
        if raw is not None:
            try:
                sub = decode_subscription(raw)
            except DecodeError as exc:
                log.warning("member %s: undecodable subscription (%s); using its v0 fields", member_id, exc)
                if isinstance(metadata, bytes):
                    raise
        if sub is None:
            sub = ConsumerProtocolSubscription(
                version=0, topics=tuple(metadata.subscription), user_data=metadata.user_data
            )
        return member_from_subscription(member_id, sub, sticky_user_data=self.uses_sticky_user_data)

    def run(self, group: GroupInput) -> GroupAssignment:
        raise NotImplementedError
