"""OffsetDelete (API 47) in the pure coordinator: Kafka's `OffsetMetadataManager.deleteOffsets` and
`ClassicGroup.validateOffsetDelete` rules, driven with the fake-clock harness."""

from __future__ import annotations

import pytest
from coordinator_harness import Harness

from groupcoord.protocol.errors import ErrorCode as E
from groupcoord.server.coordinator.records import OffsetRecord

G = "group"


@pytest.fixture
def h() -> Harness:
    return Harness()


def delete(h: Harness, gid: str, topics: dict[str, list[int]]):
    result, fx = h.m.delete_offsets(gid, list(topics.items()), h.now)
    h.apply(fx)
    return result, fx


def test_unknown_group_is_group_id_not_found(h: Harness) -> None:
    (error, topics), fx = delete(h, "nobody", {"foo": [0]})
    assert (error, topics, fx.records) == (E.GROUP_ID_NOT_FOUND, (), ())


def test_empty_group_offsets_are_tombstoned_and_gone(h: Harness) -> None:
    h.reply(h.commit(G, {("foo", 0): 5, ("foo", 1): 7, ("bar", 0): 1}))
    (error, topics), fx = delete(h, G, {"foo": [0, 2]})
    assert error == E.NONE
    # a partition without an offset answers NONE too, with no tombstone
    assert topics == (("foo", ((0, E.NONE), (2, E.NONE))),)
    assert [(r.topic, r.partition, r.value) for r in fx.records if isinstance(r, OffsetRecord)] == [
        ("foo", 0, None)
    ]
    assert set(h.m.committed_offsets(G)) == {("foo", 1), ("bar", 0)}
    assert h.fetch(G, {"foo": [0]}).topics[0][1][0].offset == -1


def test_stable_consumer_group_refuses_subscribed_topics_only(h: Harness) -> None:
    r1, _ = h.stable_group(G, 2)
    h.reply(h.commit(G, {("foo", 0): 3, ("other", 0): 9}, generation=1, member_id=r1.member_id))
    subscribed = h.group().subscribed_topics
    assert subscribed is not None and "foo" in subscribed and "other" not in subscribed
    (error, topics), fx = delete(h, G, {"foo": [0], "other": [0]})
    assert error == E.NONE
    assert topics == (("foo", ((0, E.GROUP_SUBSCRIBED_TO_TOPIC),)), ("other", ((0, E.NONE),)))
    assert [(r.topic, r.value) for r in fx.records] == [("other", None)]
    assert set(h.m.committed_offsets(G)) == {("foo", 0)}


def test_non_empty_group_of_another_protocol_type_is_non_empty_group(h: Harness) -> None:
    t = h.join(G, ptype="connect", version=3)
    h.advance(h.config.initial_rebalance_delay_ms + 10)
    assert h.reply(t) is not None and h.group().state == "CompletingRebalance"
    (error, topics), fx = delete(h, G, {"foo": [0]})
    assert (error, topics, fx.records) == (E.NON_EMPTY_GROUP, (), ())


def test_consumer_group_after_everyone_left_may_delete_any_topic(h: Harness) -> None:
    (r,) = h.stable_group(G, 1)
    h.reply(h.commit(G, {("foo", 0): 3}, generation=1, member_id=r.member_id))
    h.leave(G, (r.member_id, None))
    assert h.group().state == "Empty"
    (error, topics), _ = delete(h, G, {"foo": [0]})
    assert (error, topics) == (E.NONE, (("foo", ((0, E.NONE),)),))
    assert h.m.committed_offsets(G) == {}
