"""A shard driven on a fake clock for KIP-848 consumer-group tests (spec §11's defaults: assignment
interval 0, assignor uniform, topics foo (6 partitions) and bar (3), v1 requests)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from groupcoord.server.coordinator.modern.consumer.api import (
    ConsumerGroupConfig,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResult,
)
from groupcoord.server.coordinator.records import ConsumerGroupRecord
from groupcoord.server.coordinator.shard import GroupCoordinatorShard
from groupcoord.server.coordinator.types import CancelTimer, Effects, ScheduleTimer

FOO = uuid.UUID("11111111-1111-1111-1111-111111111111")
BAR = uuid.UUID("22222222-2222-2222-2222-222222222222")
UNSET: Any = object()


@dataclass
class Image:
    topics: dict[str, tuple[uuid.UUID, int]] = field(
        default_factory=lambda: {"foo": (FOO, 6), "bar": (BAR, 3)}
    )

    def topic_by_name(self, name: str) -> tuple[uuid.UUID, int] | None:
        return self.topics.get(name)

    def topic_names(self) -> frozenset[str]:
        return frozenset(self.topics)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return next((n for n, (t, _) in self.topics.items() if t == topic_id), None)


class Harness:
    def __init__(self, **config: Any) -> None:
        config.setdefault("assignment_interval_ms", 0)
        self.shard = GroupCoordinatorShard(consumer_config=ConsumerGroupConfig(**config))
        self.image = Image()
        self.now = 1000
        self.timers: dict[tuple, int] = {}
        self.records: list[ConsumerGroupRecord] = []
        self.events: list[dict[str, Any]] = []  # journal events, in order
        self.replies: list[tuple[Any, Any]] = []  # every reply of the last `apply`, after_persist's too

    def apply(self, fx: Effects, nested: bool = False) -> Effects:
        if not nested:
            self.replies = []
        for op in fx.timers:
            if isinstance(op, ScheduleTimer):
                self.timers[op.key] = op.deadline_ms
            elif isinstance(op, CancelTimer):
                self.timers.pop(op.key, None)
        self.records += [r for r in fx.records if isinstance(r, ConsumerGroupRecord)]
        self.events += list(fx.events)
        if fx.after_persist is not None:
            more = fx.after_persist(True, self.now)
            if more:
                self.apply(more, nested=True)
        self.replies += list(fx.replies)
        return fx

    def hb(
        self,
        member_id: str,
        epoch: int,
        topics: Any = UNSET,
        owned: Any = UNSET,
        *,
        group: str = "g",
        version: int = 1,
        instance_id: str | None = None,
        rebalance_timeout_ms: int | None = None,
        assignor: str | None = None,
        regex: str | None = None,
    ) -> ConsumerGroupHeartbeatResult:
        """A heartbeat; epoch 0 defaults to a full join of [foo] owning nothing."""
        if topics is UNSET:
            topics = ("foo",) if epoch == 0 else None
        if owned is UNSET:
            owned = {} if epoch == 0 else None
        if rebalance_timeout_ms is None:
            rebalance_timeout_ms = 300000 if epoch == 0 else -1
        req = ConsumerGroupHeartbeatRequest(
            version=version,
            group_id=group,
            member_id=member_id,
            member_epoch=epoch,
            instance_id=instance_id,
            rebalance_timeout_ms=rebalance_timeout_ms,
            subscribed_topic_names=topics,
            subscribed_topic_regex=regex,
            server_assignor=assignor,
            topic_partitions=owned,
            client_id="client",
            client_host="/127.0.0.1",
        )
        self.apply(self.shard.consumer_group_heartbeat(req, self.image, "token", self.now))
        # the heartbeat's own reply (an upgrade also answers the classic group's parked requests)
        (result,) = [r for t, r in self.replies if t == "token"]
        return result

    def advance(self, ms: int) -> None:
        """Move the clock and fire every timer that is due, in deadline order."""
        self.now += ms
        while True:
            due = sorted((d, k) for k, d in self.timers.items() if d <= self.now)
            if not due:
                return
            _, key = due[0]
            del self.timers[key]
            self.apply(self.shard.on_timer(key, self.now))

    def group(self, group_id: str = "g") -> Any:
        return self.shard.consumer_group(group_id)


def parts(result: ConsumerGroupHeartbeatResult, topic: uuid.UUID = FOO) -> set[int]:
    assert result.assignment is not None
    return set(result.assignment.get(topic, frozenset()))
