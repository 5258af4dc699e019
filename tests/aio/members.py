"""Shared pieces of the groupcoord.aio tests: a member that records what it owns and consumes, with
commit-on-revoke, and a ledger that checks no partition is ever owned by two members at once."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Callable

from aiokafka import AIOKafkaProducer
from aiokafka.structs import OffsetAndMetadata, TopicPartition

from groupcoord.aio import AIOKafkaConsumer, ConsumerRebalanceListener


class Ledger:
    """Who owns which partition, as the members' listeners report it; a double owner is recorded."""

    def __init__(self) -> None:
        self.owner: dict[TopicPartition, str] = {}
        self.violations: list[str] = []
        self.seen: Counter[bytes] = Counter()
        self.events: list[tuple[str, str, tuple[TopicPartition, ...]]] = []

    def assigned(self, member: str, tps: set[TopicPartition]) -> None:
        self.events.append((member, "assigned", tuple(sorted(tps))))
        for tp in tps:
            other = self.owner.get(tp)
            if other is not None and other != member:
                self.violations.append(f"{tp} assigned to {member} while owned by {other}")
            self.owner[tp] = member

    def released(self, member: str, tps: set[TopicPartition], how: str) -> None:
        self.events.append((member, how, tuple(sorted(tps))))
        for tp in tps:
            if self.owner.get(tp) == member:
                del self.owner[tp]


class CommitOnRevoke(ConsumerRebalanceListener):  # type: ignore[misc]
    """Commits the revoked partitions' positions (everything before them was processed) before giving them up."""

    def __init__(self, name: str, ledger: Ledger) -> None:
        self.name, self.ledger = name, ledger
        self.consumer: AIOKafkaConsumer | None = None
        self.revocations = 0

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.revocations += 1
        assert self.consumer is not None
        offsets = {}
        for tp in revoked:
            with contextlib.suppress(Exception):
                offsets[tp] = OffsetAndMetadata(await self.consumer.position(tp), "")
        if offsets:
            await self.consumer.commit(offsets)
        self.ledger.released(self.name, revoked, "revoked")

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.ledger.assigned(self.name, assigned)

    def on_partitions_lost(self, lost: set[TopicPartition]) -> None:
        self.ledger.released(self.name, lost, "lost")


class Member:
    """One consumer-protocol member consuming ``topic`` into the ledger until stopped."""

    def __init__(
        self, name: str, bootstrap: str, group: str, topic: str, ledger: Ledger, **kw: object
    ) -> None:
        self.name, self.ledger = name, ledger
        self.listener = CommitOnRevoke(name, ledger)
        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=group,
            group_protocol="consumer",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            **kw,
        )
        self.listener.consumer = self.consumer
        self.topic = topic
        self.task: asyncio.Task[None] | None = None

    async def start(self, pattern: str | None = None) -> Member:
        if pattern is not None:
            self.consumer.subscribe(pattern=pattern, listener=self.listener)
        else:
            self.consumer.subscribe([self.topic], listener=self.listener)
        await self.consumer.start()
        self.task = asyncio.create_task(self._run())
        return self

    async def _run(self) -> None:
        while True:
            batches = await self.consumer.getmany(timeout_ms=200)
            for records in batches.values():  # no await between getmany and counting: revocation waits
                for record in records:
                    self.ledger.seen[record.value] += 1

    async def stop(self) -> None:
        """Commit what was consumed, then leave (close sends the leave heartbeat)."""
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
        with contextlib.suppress(Exception):
            await self.consumer.commit()
        self.ledger.released(self.name, set(self.consumer.assignment()), "closed")
        await self.consumer.stop()


async def produce(bootstrap: str, topic: str, values: list[bytes], partitions: int) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    await producer.start()
    try:
        for i, v in enumerate(values):
            await producer.send(topic, v, partition=i % partitions)
        await producer.flush()
    finally:
        await producer.stop()


async def until(condition: Callable[[], bool], timeout: float = 90.0, what: str = "condition") -> None:
    """Poll ``condition`` with a generous deadline (a loaded machine), never a fixed sleep."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.1)
