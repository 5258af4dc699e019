"""Regex subscriptions (spec §2.5, scenarios 27-29): RE2 full-match resolution against the topics a heartbeat
sees, the group epoch bumped when a member's regex changes or its resolution changes (a topic created or
deleted), invalid regexes refused with Kafka's message, names and regex unioned."""

from __future__ import annotations

import uuid

from groupcoord.protocol.errors import ErrorCode as E
from groupcoord.server.coordinator.modern.consumer.api import ConsumerGroupConfig
from groupcoord.server.coordinator.records import (
    ConsumerGroupRecord,
    decode_consumer_group_value,
    encode_consumer_group_value,
)
from groupcoord.server.coordinator.shard import GroupCoordinatorShard
from tests.coordinator.consumer_group_harness import BAR, FOO, Harness

FOX = uuid.UUID("33333333-3333-3333-3333-333333333333")


def converge(h: Harness, *members: str) -> None:
    """Heartbeat each member (acknowledging what it holds) until none changes its epoch or assignment."""
    for _ in range(10):
        changed = False
        for mid in members:
            m = h.group().members[mid]
            owned = {t: frozenset(ps) for t, ps in m.assigned.items()}
            r = h.hb(mid, m.member_epoch, owned=owned)
            assert r.error == E.NONE, r.error_message
            n = h.group().members[mid]
            changed |= (n.member_epoch, n.assigned) != (m.member_epoch, m.assigned)
        if not changed:
            return


def test_27_regex_join_bumps_and_assigns_the_matching_topics() -> None:
    h = Harness()
    r = h.hb("m1", 0, topics=(), regex="fo.*")
    assert r.error == E.NONE
    assert h.group().group_epoch == 1 and r.member_epoch == 1
    assert r.assignment == {FOO: frozenset(range(6))}
    assert h.group().resolved == {"fo.*": frozenset({"foo"})}
    assert h.group().subscribed_names() == {"foo"}


def test_28_invalid_regex_is_refused_with_kafkas_message() -> None:
    h = Harness()
    r = h.hb("m1", 0, topics=(), regex="(")
    assert r.error == E.INVALID_REGULAR_EXPRESSION
    assert r.error_message is not None
    assert r.error_message.startswith("SubscribedTopicRegex `(` is not a valid regular expression: ")
    assert h.group() is None
    # Perl look-ahead is not RE2 (as RE2J refuses it)
    assert h.hb("m1", 0, topics=(), regex="fo(?=o)").error == E.INVALID_REGULAR_EXPRESSION


def test_29_full_match_only() -> None:
    h = Harness()
    r = h.hb("m1", 0, topics=(), regex="fo")
    assert r.error == E.NONE and r.assignment == {}
    assert h.hb("m2", 0, topics=(), regex="o.*").assignment == {}
    assert h.group().resolved == {"fo": frozenset(), "o.*": frozenset()}


def test_names_and_regex_are_unioned() -> None:
    h = Harness()
    r = h.hb("m1", 0, topics=("bar",), regex="fo.*")
    assert r.assignment == {FOO: frozenset(range(6)), BAR: frozenset(range(3))}


def test_a_created_topic_matching_the_regex_bumps_the_epoch_and_is_assigned() -> None:
    h = Harness()
    h.hb("m1", 0, topics=(), regex="fo.*")
    h.hb("m2", 0, topics=(), regex="fo.*")
    converge(h, "m1", "m2")
    epoch = h.group().group_epoch
    assert h.group().state == "Stable"
    h.image.topics["fox"] = (FOX, 4)
    converge(h, "m1", "m2")
    g = h.group()
    assert g.group_epoch == epoch + 1 and g.state == "Stable"
    assert g.resolved == {"fo.*": frozenset({"foo", "fox"})}
    fox = [p for m in g.members.values() for p in m.assigned.get(FOX, {})]
    assert sorted(fox) == [0, 1, 2, 3]
    # a topic that does not match changes nothing
    h.image.topics["other"] = (uuid.UUID(int=7), 2)
    converge(h, "m1", "m2")
    assert h.group().group_epoch == epoch + 1
    # deleted: the epoch bumps again and its partitions go
    del h.image.topics["fox"]
    converge(h, "m1", "m2")
    g = h.group()
    assert g.group_epoch == epoch + 2
    assert all(FOX not in m.assigned for m in g.members.values())


def test_changing_or_dropping_the_regex_bumps_and_revokes() -> None:
    h = Harness()
    h.hb("m1", 0, topics=(), regex="fo.*")
    converge(h, "m1")
    epoch = h.group().group_epoch
    r = h.hb("m1", epoch, topics=None, regex="ba.*")
    assert h.group().group_epoch == epoch + 1
    assert r.error == E.NONE
    converge(h, "m1")
    m = h.group().members["m1"]
    assert set(m.assigned) == {BAR} and m.member_epoch == epoch + 1
    r = h.hb("m1", m.member_epoch, topics=None, regex="")
    converge(h, "m1")
    g = h.group()
    assert g.group_epoch == epoch + 2 and g.regexes() == set() and g.resolved == {}
    assert not any(g.members["m1"].assigned.values())


def test_a_leaving_member_takes_its_regex_with_it() -> None:
    h = Harness()
    h.hb("m1", 0, topics=(), regex="fo.*")
    h.hb("m2", 0, topics=("bar",))
    assert h.group().regexes() == {"fo.*"}
    assert h.hb("m1", -1).error == E.NONE
    g = h.group()
    assert g.regexes() == set() and "fo.*" not in (g.resolved or {})
    assert g.subscribed_names() == {"bar"}


def test_restart_keeps_the_regex_without_a_spurious_bump() -> None:
    h = Harness()
    h.hb("m1", 0, topics=(), regex="fo.*")
    converge(h, "m1")
    rows: dict[tuple, ConsumerGroupRecord] = {}
    for r in h.records:
        if r.value is None:
            rows.pop(r.key, None)
        else:
            text = encode_consumer_group_value(r.value)
            rows[r.key] = ConsumerGroupRecord(
                r.kind, r.group_id, r.member_id, decode_consumer_group_value(r.kind, text)
            )
    epoch = h.group().group_epoch
    h.shard = GroupCoordinatorShard(consumer_config=ConsumerGroupConfig(assignment_interval_ms=0))
    for r in rows.values():
        h.shard.replay(r)
    h.apply(h.shard.finish_load(h.now))
    assert h.group().members["m1"].subscribed_topic_regex == "fo.*"
    converge(h, "m1")
    assert h.group().group_epoch == epoch and h.group().resolved == {"fo.*": frozenset({"foo"})}
    # a topic created while the coordinator was down is still picked up (the metadata hash changed)
    h.image.topics["fox"] = (FOX, 1)
    h.shard = GroupCoordinatorShard(consumer_config=ConsumerGroupConfig(assignment_interval_ms=0))
    for r in rows.values():
        h.shard.replay(r)
    h.apply(h.shard.finish_load(h.now))
    converge(h, "m1")
    assert h.group().group_epoch == epoch + 1
    assert set(h.group().members["m1"].assigned) == {FOO, FOX}
