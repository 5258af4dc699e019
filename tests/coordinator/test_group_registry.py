"""The one group registry (server/coordinator/registry.py, issue 40): every manager registers in it when it is
constructed, and "one id, one type" is a lookup in it, also for a group type registered later."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from groupcoord.protocol.errors import ErrorCode as E
from groupcoord.server.coordinator.modern.consumer.api import ConsumerGroupHeartbeatRequest
from groupcoord.server.coordinator.modern.share.group import ShareHeartbeatRequest
from groupcoord.server.coordinator.registry import CLASSIC, CONSUMER, SHARE, STREAMS, GroupRegistry
from groupcoord.server.coordinator.shard import GroupCoordinatorShard
from groupcoord.server.coordinator.types import JoinGroupRequest, OffsetFetchRequest


@dataclass
class StreamsLike:
    """A further group type as it would plug in: a name, whether its groups commit offsets, its ids."""

    ids: set[str] = field(default_factory=set)
    group_type: str = "fifth"
    holds_offsets: bool = True

    def has(self, group_id: str) -> bool:
        return group_id in self.ids


def test_the_shards_managers_register_themselves_in_order() -> None:
    shard = GroupCoordinatorShard()
    assert [o.group_type for o in shard.groups] == [CLASSIC, CONSUMER, STREAMS, SHARE]
    assert shard.groups.owner(CLASSIC) is shard.group_manager
    assert shard.groups.owner(CONSUMER) is shard.consumer_manager
    assert shard.groups.owner(SHARE) is shard.share_manager
    assert shard.groups.owner(STREAMS) is shard.streams_manager


def test_a_type_registers_once() -> None:
    registry = GroupRegistry()
    registry.register(StreamsLike())
    with pytest.raises(ValueError, match="already registered"):
        registry.register(StreamsLike())


def test_lookups_name_the_owning_type() -> None:
    registry = GroupRegistry()
    registry.register(StreamsLike({"s"}))
    share = StreamsLike({"sh"}, group_type=SHARE, holds_offsets=False)
    registry.register(share)
    assert (
        registry.type_of("s") == "fifth"
        and registry.type_of("sh") == SHARE
        and registry.type_of("x") is None
    )
    assert registry.held_by_other_than("s", SHARE) and not registry.held_by_other_than("s", "fifth")
    assert registry.holds_offsets("s") and not registry.holds_offsets("sh")
    assert registry.without_offsets("sh") and not registry.without_offsets("s")


def test_a_group_type_registered_later_owns_its_ids_against_the_others() -> None:
    shard = GroupCoordinatorShard()
    shard.groups.register(StreamsLike({"st"}))
    join = JoinGroupRequest(5, "st", 10000, 10000, "", None, "consumer", (("range", b""),))
    fx = shard.join_group(join, "tok", 0)
    assert fx.replies[0][1].error == E.GROUP_ID_NOT_FOUND  # not a classic group
    assert shard.group("st") is None
    [described] = shard.describe_groups(["st"])
    assert described.not_found == "Group st is not a classic group."
    share = ShareHeartbeatRequest("st", "m", 0, None, ("t",), "cid", "/127.0.0.1", {"t": ("00aa", 1)})
    fx = shard.share_group_heartbeat(share, "tok2", 0)
    assert fx.replies[0][1].error == E.GROUP_ID_NOT_FOUND  # not a share group
    consumer = ConsumerGroupHeartbeatRequest(
        0, "st", "m", 0, rebalance_timeout_ms=10000, subscribed_topic_names=("t",), topic_partitions={}
    )
    fx = shard.consumer_group_heartbeat(consumer, shard.topics, "tok3", 0)
    assert fx.replies[0][1].error == E.GROUP_ID_NOT_FOUND  # not a consumer group
    # its groups hold offsets: a fetch is answered as for any group that commits
    assert shard.fetch_offsets(OffsetFetchRequest(8, "st", None), 0).error == E.NONE
