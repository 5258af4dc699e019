"""Online migration between group types (spec §9, Kafka's `convertToConsumerGroup` / `convertToClassicGroup`):
the moves that take a group from one manager to the other. The shard composes this beside its managers; what a
conversion computes (members, assignments, records) is `modern/consumer/migration.py`'s, what this adds is the
hand-over between `GroupMetadataManager` and `ConsumerGroupManager`."""

from __future__ import annotations

from collections.abc import Callable

from groupcoord.server.coordinator.context import OperationContext
from groupcoord.server.coordinator.group import ClassicGroup
from groupcoord.server.coordinator.group_manager import GroupMetadataManager
from groupcoord.server.coordinator.modern.consumer import codec, migration
from groupcoord.server.coordinator.modern.consumer.api import TopicImage
from groupcoord.server.coordinator.modern.consumer.group import ConsumerGroup
from groupcoord.server.coordinator.modern.consumer.manager import ConsumerGroupManager


class GroupConversions:
    def __init__(
        self,
        ctx: OperationContext,
        classic: GroupMetadataManager,
        consumer: ConsumerGroupManager,
        topics: Callable[[], TopicImage],
    ) -> None:
        self._ctx, self._classic, self._consumer, self._topics = ctx, classic, consumer, topics

    def upgrade(self, classic: ClassicGroup, topics: TopicImage) -> str | None:
        """Online upgrade (Kafka's `validateOnlineUpgrade` + `convertToConsumerGroup`): the classic group
        becomes a consumer group whose members keep their partitions; or why it cannot."""
        problem = migration.upgrade_problem(classic, self._consumer)
        if problem is not None:
            return problem
        try:
            cg = migration.from_classic_group(classic, topics)
        except migration.MigrationError as err:
            return str(err)
        self._classic.hand_over(classic, "upgraded")
        migration.install_upgraded(self._consumer, cg)
        return None

    def downgrade(self, g: ConsumerGroup, leaving: list[str], reason: str) -> bool:
        """Online downgrade (spec §9.2, trigger A): called as `leaving` are about to be fenced; when only
        classic members would remain and the policy allows it, the consumer group becomes a classic group that
        rebalances at once, and the members are not fenced one by one."""
        mgr = self._consumer
        if not migration.downgrade_allowed(mgr, g, leaving, self._ctx.config.max_size):
            return False
        try:
            classic = migration.to_classic_group(g, leaving, self._topics(), self._ctx.now)
        except ValueError:  # no protocol every member supports: stay a consumer group
            return False
        for mid in leaving:
            gone = g.members.get(mid)
            if gone is not None:
                mgr.journal.member(g, "member_removed", gone, reason)
        self._to_classic(g, classic, True)
        return True

    def downgrade_replaced(self, g: ConsumerGroup, rebalance: bool) -> None:
        """Online downgrade, trigger B (spec §9.2): a classic static member took the place of the last
        consumer-protocol member; the group, already updated, becomes a classic group."""
        classic = migration.to_classic_group(g, (), self._topics(), self._ctx.now)
        self._to_classic(g, classic, rebalance)

    def _to_classic(self, g: ConsumerGroup, classic: ClassicGroup, rebalance: bool) -> None:
        mgr = self._consumer
        for r in codec.group_tombstones(g):
            self._ctx.fx.record(r)
        mgr.cancel_all_timers(g)
        mgr.journal.event(
            g, "state_change", state_from=g.journaled_state, state_to="Dead", reason="downgraded"
        )
        del mgr.groups[g.group_id]
        self._classic.take_over(classic, "downgraded", rebalance)
