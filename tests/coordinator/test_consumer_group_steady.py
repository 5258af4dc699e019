"""The steady-state shortcut of ConsumerGroupHeartbeat (modern/consumer/steady.py, issue 28) changes nothing
but its cost: a shard whose topic image has a version (so it takes the shortcut and keeps the metadata hash
while the topics stay the same) and one whose image has none (so it computes everything on every heartbeat)
go through the same heartbeats and must give the same answers, records, journal events, timers and groups.
And the shortcut is taken: the fast lane's entry (`consumer_heartbeat_timer`) answers the steady heartbeats."""

from __future__ import annotations

import dataclasses
from typing import Any

from consumer_group_harness import FOO, Harness, Image, parts

from groupcoord.protocol.errors import ErrorCode as E


@dataclasses.dataclass
class VersionedImage(Image):
    """The server's image: `version()` moves on every topic change (`LogManager.topics_token`)."""

    generation: int = 0

    def version(self) -> object:
        return self.generation


def snapshot(h: Harness) -> Any:
    g = h.group()
    members = {mid: dataclasses.asdict(m) for mid, m in g.members.items()}
    return (g.group_epoch, g.metadata_hash, g.assignment_epoch, g.target, members, g.state, dict(h.timers))


def test_the_shortcut_answers_and_changes_exactly_what_the_full_computation_does() -> None:
    fast, full = Harness(), Harness()
    fast.image = VersionedImage()
    steady_answers = 0

    def both(*args: Any, **kw: Any) -> Any:
        a, b = fast.hb(*args, **kw), full.hb(*args, **kw)
        assert a == b
        assert fast.records == full.records and fast.events == full.events
        assert snapshot(fast) == snapshot(full)
        return a

    def lane(member: str, epoch: int, instance_id: str | None = None, client_id: str = "client") -> Any:
        nonlocal steady_answers
        fields = (epoch, instance_id, None, -1, client_id, "/127.0.0.1", fast.image.version())
        out = fast.shard.consumer_heartbeat_timer("g", member, fields, fast.now)
        if out is not None:
            steady_answers += 1
        return out

    r1 = both("m1", 0)
    assert lane("m1", 1) is not None  # joined and given everything at once: steady
    both("m2", 0, instance_id="i2")
    assert lane("m1", 1) is None  # must revoke: the full path
    r = both("m1", 1)
    both("m1", 1, owned={FOO: frozenset(parts(r))})
    for _ in range(3):
        s = both("m2", 2, instance_id="i2")
        if s.assignment is None:
            break
    for _ in range(2):
        fast.now += 100
        full.now += 100
        assert lane("m1", 2) is not None and lane("m2", 2, "i2") is not None
        assert lane("m2", 2, "other") is None and lane("m1", 2, client_id="another") is None
        both("m1", 2)
        both("m2", 2, instance_id="i2")
    # the topics change: neither the lane nor the shortcut may keep the old hash
    for h in (fast, full):
        h.image.topics = {**h.image.topics, "foo": (FOO, 8)}
    fast.image.generation += 1
    assert lane("m1", 2) is None
    bumped = both("m1", 2)
    assert bumped.error == E.NONE and bumped.member_epoch == 3
    both("m2", 2, instance_id="i2")
    both("m1", 5)  # fenced
    both("m1", -1)  # leaves
    assert r1.error == E.NONE and steady_answers == 5
