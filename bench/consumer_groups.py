"""KIP-848 consumer groups at scale (issue 25 item 8): the server assignors, and a 1,000-member group converging.

Not a test: it prints tables. Two parts, both in-process on the pure coordinator (no sockets, no storage):

1. **Assignor time**, 1,000 members x 10,000 partitions (10 topics x 1,000), for `uniform` and `range`
   (server/coordinator/assignors/): a fresh group (nobody holds anything), one member joining a balanced
   group and one member leaving it (everyone else's current target is the previous result), and for
   `uniform` a heterogeneous group (half the members subscribe to the first (topics-1)//2 topics, half to the
   rest but the last, and all to the last: 0-3, 4-8 and 9 by default). Best of `--runs`.
2. **Convergence**: a `GroupCoordinatorShard` (server/coordinator/shard.py) holding a Stable 1,000-member
   group over those 10,000 partitions; then one member joins (and, separately, one leaves) and every member
   heartbeats in rounds, as clients do, each sending its owned partitions when they changed since its last
   heartbeat (Java's and librdkafka's behaviour), until the group is Stable again with every member at the
   new epoch. Reported: the server CPU of all those heartbeats (`time.process_time`), of the one heartbeat
   that computes the new target, the rounds and heartbeats it took. The records the heartbeats write are
   produced (the pure machine's Effects) but not stored: storage is bench/storage_pg.py's subject.

    python bench/consumer_groups.py [--members 1000] [--topics 10] [--partitions-per-topic 1000] [--runs 3]
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import print_rows  # noqa: E402
from groupcoord.server.coordinator.assignors import BUILTIN, GroupSpec, MemberSpec  # noqa: E402
from groupcoord.server.coordinator.modern.consumer.api import (  # noqa: E402
    ConsumerGroupConfig,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResult,
)
from groupcoord.server.coordinator.shard import GroupCoordinatorShard  # noqa: E402
from groupcoord.server.coordinator.types import Effects  # noqa: E402

Assignment = dict[str, dict[uuid.UUID, frozenset[int]]]


def topic_ids(n: int) -> list[uuid.UUID]:
    return [uuid.UUID(int=i + 1) for i in range(n)]


def best(fn: Callable[[], Any], runs: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def spec(
    members: list[str],
    subs: dict[str, frozenset[uuid.UUID]],
    counts: dict[uuid.UUID, int],
    current: Assignment,
) -> GroupSpec:
    specs = tuple(MemberSpec(m, None, None, subs[m], current.get(m, {})) for m in sorted(members))
    homogeneous = len({subs[m] for m in members}) <= 1
    return GroupSpec(specs, homogeneous, counts)


def check_cover(out: Assignment, counts: dict[uuid.UUID, int]) -> None:
    seen = [(t, p) for a in out.values() for t, ps in a.items() for p in ps]
    assert len(seen) == len(set(seen)) == sum(counts.values()), "not an exact cover"


def assignor_rows(members: int, topics: int, per_topic: int, runs: int) -> list[tuple[str, str]]:
    ids = topic_ids(topics)
    counts = dict.fromkeys(ids, per_topic)
    names = [f"member-{i:05d}" for i in range(members)]
    everything = frozenset(ids)
    subs = dict.fromkeys(names, everything)
    rows = []
    for name in ("uniform", "range"):
        assignor = BUILTIN[name]
        fresh_t, fresh = best(lambda a=assignor: a.assign(spec(names, subs, counts, {})), runs)
        check_cover(fresh, counts)
        joined = [*names, "member-00499-new"]
        join_subs = {**subs, "member-00499-new": everything}
        join_t, out = best(
            lambda a=assignor, j=joined, s=join_subs, f=fresh: a.assign(spec(j, s, counts, f)), runs
        )
        check_cover(out, counts)
        left = names[1:]
        leave_t, out = best(lambda a=assignor, x=left, f=fresh: a.assign(spec(x, subs, counts, f)), runs)
        check_cover(out, counts)
        label = f"{name}, {members} members x {topics * per_topic} partitions"
        rows.append((f"{label}: fresh group", f"{fresh_t * 1000:.0f} ms"))
        rows.append((f"{label}: one member joins", f"{join_t * 1000:.0f} ms"))
        rows.append((f"{label}: one member leaves", f"{leave_t * 1000:.0f} ms"))
    # heterogeneous (uniform only: range has no separate path): two halves on disjoint topics plus a shared one
    shared = ids[-1]
    half = (topics - 1) // 2
    het_subs = {
        m: frozenset([*(ids[:half] if i % 2 == 0 else ids[half:-1]), shared]) for i, m in enumerate(names)
    }
    het_t, out = best(lambda: BUILTIN["uniform"].assign(spec(names, het_subs, counts, {})), runs)
    check_cover(out, counts)
    rows.append(
        (
            f"uniform, {members} members x {topics * per_topic} partitions: heterogeneous, fresh",
            f"{het_t * 1000:.0f} ms",
        )
    )
    het_left_t, out2 = best(lambda: BUILTIN["uniform"].assign(spec(names[1:], het_subs, counts, out)), runs)
    check_cover(out2, counts)
    rows.append(
        (
            f"uniform, {members} members x {topics * per_topic} partitions: heterogeneous, one member leaves",
            f"{het_left_t * 1000:.0f} ms",
        )
    )
    return rows


class Image:
    """The shard's `TopicImage` over a fixed set of topics."""

    def __init__(self, topics: dict[str, tuple[uuid.UUID, int]]) -> None:
        self.topics = topics
        self.names = {t: n for n, (t, _) in topics.items()}

    def topic_by_name(self, name: str) -> tuple[uuid.UUID, int] | None:
        return self.topics.get(name)

    def topic_names(self) -> frozenset[str]:
        return frozenset(self.topics)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return self.names.get(topic_id)


class Client:
    """A well-behaved KIP-848 client: echoes what it was given, sends owned partitions only when changed."""

    def __init__(self, member_id: str) -> None:
        self.member_id = member_id
        self.epoch = 0
        self.owned: dict[uuid.UUID, frozenset[int]] = {}
        self.dirty = True  # owned changed since the last heartbeat


class Group:
    def __init__(self, members: int, topics: int, per_topic: int, assignor: str) -> None:
        # the assignment interval (KIP-1263, Kafka's default 1 s here) batches the 1,000 setup joins into a
        # handful of target computations; the measured join and leave come after it has passed
        self.shard = GroupCoordinatorShard(
            consumer_config=ConsumerGroupConfig(assignment_interval_ms=1000, assignors=(assignor,))
        )
        self.image = Image({f"t{i:02d}": (tid, per_topic) for i, tid in enumerate(topic_ids(topics))})
        self.subscribed = tuple(sorted(self.image.topics))
        self.now = 1_000_000
        self.clients = {f"member-{i:05d}": Client(f"member-{i:05d}") for i in range(members)}
        self.heartbeats = 0

    def _replies(self, fx: Effects) -> list[tuple[Any, Any]]:
        out = list(fx.replies)
        if fx.after_persist is not None:
            more = fx.after_persist(True, self.now)
            if more:
                out += self._replies(more)
        return out

    def heartbeat(self, c: Client, leave: bool = False) -> ConsumerGroupHeartbeatResult:
        join = c.epoch == 0
        req = ConsumerGroupHeartbeatRequest(
            version=1,
            group_id="big",
            member_id=c.member_id,
            member_epoch=-1 if leave else c.epoch,
            rebalance_timeout_ms=300000 if join else -1,
            subscribed_topic_names=self.subscribed if join else None,
            topic_partitions=dict(c.owned) if (c.dirty or join) else None,
            client_id="bench",
            client_host="/127.0.0.1",
        )
        c.dirty = False
        self.heartbeats += 1
        replies = self._replies(self.shard.consumer_group_heartbeat(req, self.image, "t", self.now))
        ((_, r),) = replies
        assert r.error == 0, r
        if leave:
            return r  # type: ignore[no-any-return]
        c.epoch = r.member_epoch
        if r.assignment is not None:
            got = {t: frozenset(ps) for t, ps in r.assignment.items() if ps}
            if got != c.owned:
                c.owned, c.dirty = got, True
        return r  # type: ignore[no-any-return]

    def stable(self) -> bool:
        g = self.shard.consumer_group("big")
        return g is not None and g.state == "Stable"

    def rounds_until_stable(self, limit: int = 20) -> int:
        for n in range(1, limit + 1):
            for c in list(self.clients.values()):
                self.heartbeat(c)
            if self.stable():
                return n
        raise RuntimeError("the group did not converge")

    def settle(self) -> None:
        """Join everyone and converge (not measured)."""
        for c in self.clients.values():
            self.heartbeat(c)
        self.now += 2000
        self.rounds_until_stable()
        check = [(t, p) for c in self.clients.values() for t, ps in c.owned.items() for p in ps]
        assert len(check) == len(set(check)) == sum(n for _, n in self.image.topics.values())

    def measure(self, change: Callable[[], None]) -> tuple[float, float, int, int]:
        """CPU of `change` (the target computation), then of every round until Stable."""
        self.now += 2000  # past the assignment interval: the change recomputes the target at once
        self.heartbeats = 0
        t0 = time.process_time()
        change()
        t1 = time.process_time()
        rounds = self.rounds_until_stable()
        t2 = time.process_time()
        return t1 - t0, t2 - t0, rounds, self.heartbeats


def convergence_rows(members: int, topics: int, per_topic: int) -> list[tuple[str, str]]:
    rows = []
    for assignor in ("uniform", "range"):
        g = Group(members, topics, per_topic, assignor)
        g.settle()
        newcomer = Client("member-00499-new")  # sorts mid-group: range shifts half the ranges

        def join(g: Group = g, newcomer: Client = newcomer) -> None:
            g.clients[newcomer.member_id] = newcomer
            g.heartbeat(newcomer)

        target, total, rounds, hbs = g.measure(join)
        label = f"{assignor}, {members} members x {topics * per_topic} partitions"
        rows.append(
            (
                f"{label}: one member joins -> Stable",
                f"{total * 1000:.0f} ms CPU ({target * 1000:.0f} ms the join heartbeat; {rounds} rounds, {hbs} heartbeats)",
            )
        )
        leaver = g.clients.pop("member-00000")

        def leave(g: Group = g, leaver: Client = leaver) -> None:
            g.heartbeat(leaver, leave=True)

        target, total, rounds, hbs = g.measure(leave)
        rows.append(
            (
                f"{label}: one member leaves -> Stable",
                f"{total * 1000:.0f} ms CPU ({target * 1000:.0f} ms the leave heartbeat; {rounds} rounds, {hbs} heartbeats)",
            )
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--members", type=int, default=1000)
    ap.add_argument("--topics", type=int, default=10)
    ap.add_argument("--partitions-per-topic", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--skip-convergence", action="store_true")
    args = ap.parse_args()
    print_rows(
        "KIP-848 server assignors, wall time of assign() (bench/consumer_groups.py)",
        assignor_rows(args.members, args.topics, args.partitions_per_topic, args.runs),
        width=86,
    )
    if not args.skip_convergence:
        print_rows(
            "KIP-848 group convergence, server CPU in the pure shard (bench/consumer_groups.py)",
            convergence_rows(args.members, args.topics, args.partitions_per_topic),
            width=64,
        )


if __name__ == "__main__":
    main()
