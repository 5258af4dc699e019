"""Eager vs cooperative (KIP-429) rebalancing of aiokafka consumers: partitions paused and time not consuming.

Run with `python bench/cooperative.py [--rounds N]`. Not a test: it prints a table. A real groupcoord server
(subprocess) serves a 12-partition topic that a producer writes to every 20 ms (one record per partition).
A group of 3 aiokafka consumers grows to 4 (a member joins) and shrinks back to 3 (a member leaves
gracefully), once with our eager ``StickyAssignor`` and once with ``CooperativeStickyAssignor``.

Per rebalance:
* **paused partitions**: partitions taken away from a consumer that was reading them (the listener's
  ``on_partitions_revoked``, plus the leaving member's partitions), summed over the group. Eager revokes
  everything; cooperative only what moves.
* **partition-seconds idle**: for each paused partition, the time from its revocation until any member
  consumed it again, summed; **longest pause**: the largest of those.
* **rebalance window**: from the event (join started / leave) until every member holds its final share.
Consumers heartbeat every 300 ms (session 10 s), so a rebalance is noticed within ~300 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import statistics
import time

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from harness import throwaway_server  # bench/harness.py (the script's folder)

from groupcoord.assignors.adapters import StickyAssignor
from groupcoord.assignors.adapters.cooperative import CooperativeStickyAssignor

TOPIC, PARTITIONS = "bench-coop", 12
logging.getLogger("aiokafka").setLevel(logging.CRITICAL)


class Consumer(ConsumerRebalanceListener):
    def __init__(
        self,
        bootstrap: str,
        group: str,
        cooperative: bool,
        log: list[tuple[float, TopicPartition]],
        revokes: list[tuple[float, TopicPartition]],
    ) -> None:
        assignor = CooperativeStickyAssignor() if cooperative else StickyAssignor()
        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, group_id=group, partition_assignment_strategy=(assignor,),
            enable_auto_commit=False, auto_offset_reset="latest", session_timeout_ms=10000,
            heartbeat_interval_ms=300, fetch_max_wait_ms=50,
        )  # fmt: skip
        if not cooperative:
            assignor.bind(self.consumer)
        self.log, self.revokes, self.revoked, self.task = log, revokes, 0, None

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.revoked += len(revoked)
        now = time.monotonic()
        self.revokes.extend((now, tp) for tp in revoked)
        if revoked:
            await self.consumer.commit({tp: self.consumer.position_nowait(tp) for tp in revoked})  # type: ignore[attr-defined]

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        pass

    async def start(self) -> None:
        self.consumer.subscribe([TOPIC], listener=self)
        await self.consumer.start()
        self.task = asyncio.create_task(self.loop())

    async def loop(self) -> None:
        while True:
            batch = await self.consumer.getmany(timeout_ms=50)
            now = time.monotonic()
            self.log.extend((now, tp) for tp in batch)

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
        await self.consumer.stop()


def position_nowait(consumer: AIOKafkaConsumer, tp: TopicPartition) -> int:
    """The consumed position without awaiting (aiokafka's `position()` may wait for a reset)."""
    return consumer._subscription.subscription.assignment.state_value(tp).position


AIOKafkaConsumer.position_nowait = position_nowait  # type: ignore[attr-defined]


async def produce(bootstrap: str, stop: asyncio.Event) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
    await producer.start()
    try:
        while not stop.is_set():
            futs = [await producer.send(TOPIC, b"x", partition=p) for p in range(PARTITIONS)]
            await asyncio.gather(*futs)
            await asyncio.sleep(0.02)
    finally:
        await producer.stop()


async def settle(members: list[Consumer], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        owned = [c.consumer.assignment() for c in members]
        gens = {c.consumer._coordinator.generation for c in members}
        loads = [len(o) for o in owned]
        flat = [tp for o in owned for tp in o]
        if (len(gens) == 1 and len(flat) == len(set(flat)) == PARTITIONS and max(loads) - min(loads) <= 1
                and not any(c.consumer._coordinator._rejoin_needed_fut.done() for c in members)):  # fmt: skip
            return
        await asyncio.sleep(0.02)
    raise TimeoutError("group did not settle")


def pauses(
    log: list[tuple[float, TopicPartition]], revokes: list[tuple[float, TopicPartition]]
) -> list[float]:
    """For each revocation: seconds until anyone consumed that partition again (its time not consuming)."""
    by_tp: dict[TopicPartition, list[float]] = {}
    for t, tp in log:
        by_tp.setdefault(tp, []).append(t)
    out = []
    for t0, tp in revokes:
        later = [t for t in by_tp.get(tp, []) if t > t0]
        out.append(min(later) - t0 if later else float("nan"))
    return out


async def scenario(bootstrap: str, cooperative: bool, group: str) -> list[dict[str, float]]:
    log: list[tuple[float, TopicPartition]] = []
    revokes: list[tuple[float, TopicPartition]] = []
    members = [Consumer(bootstrap, group, cooperative, log, revokes) for _ in range(3)]
    for m in members:
        await m.start()
    await settle(members)
    await asyncio.sleep(1)
    rows = []
    for event in ("grow 3→4", "shrink 4→3"):
        first = len(revokes)
        t0 = time.monotonic()
        if event.startswith("grow"):
            newcomer = Consumer(bootstrap, group, cooperative, log, revokes)
            members.append(newcomer)
            await newcomer.start()
        else:
            leaving = members.pop(0)
            gone = leaving.consumer.assignment()
            await leaving.stop()  # its partitions stop being consumed now, whatever the protocol
            revokes.extend((t0, tp) for tp in gone if (t0, tp) not in revokes[first:])
        await settle(members)
        t1 = time.monotonic()
        await asyncio.sleep(1)  # let the first records after the rebalance arrive
        gaps = pauses(log, revokes[first:])
        rows.append({"event": event, "paused": len(gaps), "seconds": sum(gaps), "max": max(gaps, default=0.0),
                     "window": t1 - t0})  # fmt: skip
    for m in members:
        await m.stop()
    return rows


async def run(port: int, rounds: int) -> None:
    bootstrap = f"127.0.0.1:{port}"
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    await admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
    await admin.close()
    stop = asyncio.Event()
    producer = asyncio.create_task(produce(bootstrap, stop))
    results: dict[tuple[str, str], list[dict[str, float]]] = {}
    try:
        for r in range(rounds):
            for mode in ("eager", "cooperative"):
                for row in await scenario(bootstrap, mode == "cooperative", f"bench-{mode}-{r}"):
                    results.setdefault((mode, str(row["event"])), []).append(row)
    finally:
        stop.set()
        await producer
    print(
        f"eager vs cooperative aiokafka rebalances, {PARTITIONS} partitions, {rounds} round(s), median (min–max)"
    )
    print(f"{'mode':12} {'event':11} {'paused partitions':>18} {'partition-s idle':>17} {'longest pause s':>17} "
          f"{'window s':>17}")  # fmt: skip

    def fmt(values: list[float], spec: str) -> str:
        return f"{statistics.median(values):{spec}} ({min(values):{spec}}–{max(values):{spec}})"

    for (mode, event), rows in results.items():
        print(f"{mode:12} {event:11} {fmt([r['paused'] for r in rows], '.0f'):>18} "
              f"{fmt([r['seconds'] for r in rows], '.2f'):>17} {fmt([r['max'] for r in rows], '.2f'):>17} "
              f"{fmt([r['window'] for r in rows], '.2f'):>17}")  # fmt: skip
    print(f"({os.cpu_count()} CPUs; loadavg {' '.join(f'{x:.2f}' for x in os.getloadavg())})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with throwaway_server() as port:
        asyncio.run(run(port, args.rounds))


if __name__ == "__main__":
    main()
