"""KIP-429 cooperative rebalancing for aiokafka 0.14, without forking it.

aiokafka's coordinator is eager: before every JoinGroup it revokes all partitions
(``_on_join_prepare``), stops returning records until the new assignment arrives
(``SubscriptionState.begin_reassignment``) and then builds a fresh ``Assignment`` whose partitions all start
from their committed offsets again. :class:`CooperativeGroupCoordinator` subclasses its
``GroupCoordinator`` and, only for consumers whose assignors all speak the cooperative protocol (Java's
rule), overrides exactly those two hooks:

* ``_on_join_prepare``: commit (auto-commit) as before, but revoke nothing and keep fetching. Only when
  the partitions are *lost* (the coordinator reset our generation, or the subscription changed) is the
  eager path taken, as Java's ``onPartitionsLost`` does.
* ``_on_join_complete``: revoked = owned − assigned, added = assigned − owned; the listener sees only
  those; partitions kept keep their fetch position (their ``TopicPartitionState`` moves to the new
  ``Assignment``); if anything was revoked, rejoin at once so the follow-up rebalance hands it over.

The consumer builds its coordinator itself (``aiokafka.consumer.consumer.GroupCoordinator``) and offers
no parameter for it, so :func:`install_cooperative_coordinator` replaces that one module-level name with
the subclass (idempotent, process-wide, refused on an aiokafka other than 0.14 whose hooks it has not
been checked against). Consumers without a cooperative assignor get the unchanged eager behaviour.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from collections.abc import Iterable
from typing import Any

import aiokafka
from aiokafka.consumer import consumer as aiokafka_consumer_module
from aiokafka.consumer.group_coordinator import GroupCoordinator
from aiokafka.coordinator.protocol import ConsumerProtocol
from aiokafka.errors import KafkaError
from aiokafka.structs import TopicPartition as AioTopicPartition

from groupcoord.assignors.adapters.strategies import StickyAssignor
from groupcoord.assignors.cooperative import CooperativeStickyStrategy
from groupcoord.assignors.model import GroupAssignment, GroupInput

log = logging.getLogger(__name__)

SUPPORTED_AIOKAFKA = ("0.14.",)
_GENERATION = struct.Struct(">i")


class CooperativeStickyAssignor(StickyAssignor):
    """``cooperative-sticky``: our KIP-792 sticky target, minus partitions still owned by someone else.

    Its subscription is what Java's ``CooperativeStickyAssignor`` sends (v1+ ``ownedPartitions``, v2+
    ``generationId``, user data = int32 generation), so Java and librdkafka members share the group.
    Constructing one installs :class:`CooperativeGroupCoordinator` (see the module docstring).
    """

    name = "cooperative-sticky"
    rebalance_protocol = "COOPERATIVE"
    uses_sticky_user_data = False

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.coordinator: GroupCoordinator | None = None
        install_cooperative_coordinator()

    def subscription_user_data(self) -> bytes | None:
        return _GENERATION.pack(self.generation)

    def _bound_generation(self) -> int | None:
        if self.coordinator is not None:
            return self.coordinator.generation
        return super()._bound_generation()

    def run(self, group: GroupInput) -> GroupAssignment:
        return CooperativeStickyStrategy().assign(group)


def is_cooperative(assignors: Iterable[Any]) -> bool:
    """Java's rule: a consumer rebalances cooperatively only if every assignor it lists supports it."""
    listed = list(assignors)
    return bool(listed) and all(getattr(a, "rebalance_protocol", "EAGER") == "COOPERATIVE" for a in listed)


async def _call_listener(listener: Any, method: str, partitions: set[AioTopicPartition], group: str) -> None:
    try:
        res = getattr(listener, method)(partitions)
        if asyncio.iscoroutine(res):
            await res
    except Exception:
        log.exception("rebalance listener %s failed in %s for group %s", listener, method, group)


class CooperativeGroupCoordinator(GroupCoordinator):
    """aiokafka's GroupCoordinator with KIP-429 join hooks for cooperative consumers (else unchanged)."""

    def __init__(self, client: Any, subscription: Any, **kwargs: Any) -> None:
        super().__init__(client, subscription, **kwargs)
        self.cooperative = is_cooperative(self._assignors)
        for assignor in self._assignors:
            if isinstance(assignor, CooperativeStickyAssignor):
                assignor.coordinator = self
        # what this member owns between rebalances; None until the first assignment or after a loss
        self._coop_owned: frozenset[AioTopicPartition] | None = None

    async def _on_join_prepare(self, previous_assignment: Any) -> None:
        if not self.cooperative:
            await super()._on_join_prepare(previous_assignment)
            return
        current = self._subscription.subscription
        lost = previous_assignment is not None and (
            self.generation < 0  # expelled or fenced: Java's onPartitionsLost
            or current is None
            or previous_assignment is not current.assignment  # subscription changed
            or not previous_assignment.active
        )
        if lost or previous_assignment is None:
            self._coop_owned = None
            await super()._on_join_prepare(previous_assignment)
            return
        self._group_subscription = None
        try:
            await self._maybe_do_last_autocommit(previous_assignment)
        except KafkaError as err:
            log.error("OffsetCommit failed before join, ignoring: %s", err)
        log.info("cooperative rejoin of group %s keeps %s", self.group_id, sorted(previous_assignment.tps))

    async def _on_join_complete(
        self, generation: int, member_id: str, protocol: str, member_assignment_bytes: bytes
    ) -> None:
        if not self.cooperative:
            await super()._on_join_complete(generation, member_id, protocol, member_assignment_bytes)
            return
        assignor = self._lookup_assignor(protocol)
        assert assignor, f"invalid assignment protocol: {protocol}"
        assignment = ConsumerProtocol.ASSIGNMENT.decode(member_assignment_bytes)
        new = frozenset(assignment.partitions())
        subscription = self._subscription.subscription
        old_assignment = subscription.assignment
        owned = self._coop_owned if old_assignment is not None and old_assignment.active else None
        owned = owned if owned is not None else frozenset()
        revoked, added = set(owned - new), set(new - owned)
        listener = self._subscription.listener

        if revoked:
            log.info("revoking %s for group %s (cooperative)", sorted(revoked), self.group_id)
            # Hold back records (of all partitions, for the length of the callback only) so that the
            # application cannot consume past the position the listener commits for the new owner;
            # assign_from_subscribed below lifts it. Java gets this for free: poll() runs the callback.
            self._subscription.begin_reassignment()
            if listener:
                await _call_listener(listener, "on_partitions_revoked", revoked, self.group_id)
        if old_assignment is None or not old_assignment.active or old_assignment.tps != new:
            carried = {tp: old_assignment.state_value(tp) for tp in new & owned} if owned else {}
            self._subscription.assign_from_subscribed(set(new))
            fresh = self._subscription.subscription.assignment
            for tp, state in carried.items():  # keep positions of partitions that stayed
                if state is not None:
                    fresh._tp_state[tp] = state
                    state._assignment = fresh
        self._coop_owned = new
        assignor.on_assignment(assignment)

        await self._stop_commit_offsets_refresh_task()
        self.start_commit_offsets_refresh_task(subscription.assignment)
        log.info("adding %s for group %s (cooperative)", sorted(added), self.group_id)
        if listener:
            await _call_listener(listener, "on_partitions_assigned", added, self.group_id)
        if revoked:
            self.request_rejoin()  # the follow-up rebalance hands the revoked partitions over


def install_cooperative_coordinator() -> None:
    """Make aiokafka consumers build :class:`CooperativeGroupCoordinator` (idempotent, process-wide)."""
    if not aiokafka.__version__.startswith(SUPPORTED_AIOKAFKA):
        raise RuntimeError(
            f"cooperative rebalancing is checked against aiokafka {SUPPORTED_AIOKAFKA}, not {aiokafka.__version__}"
        )
    current = aiokafka_consumer_module.GroupCoordinator
    if not (isinstance(current, type) and issubclass(current, CooperativeGroupCoordinator)):
        aiokafka_consumer_module.GroupCoordinator = CooperativeGroupCoordinator
