"""Group configs (GROUP config resources: `consumer.*`, `share.*`) are the cluster's in cluster mode, as in
Kafka's metadata log: set through one node, DescribeConfigs at every node answers them, the share partition's
leader on another node serves by them (share.auto.offset.reset=earliest: records produced before the first
fetch are delivered; share.record.lock.duration.ms: the acquisition lock), the groups' coordinators on other
nodes answer their heartbeat intervals; a node taking over a shard, and a restarted node, have them; a DELETE
at one node is seen by all."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from groupcoord.protocol.messages.share_group_heartbeat import ShareGroupHeartbeatRequest
from groupcoord.server.storage.shards import shard_of
from tests.cluster.helpers import shard_owner, start_nodes, wait_balanced, wait_partitions_spread
from tests.conftest import ServerProcess
from tests.integration.helpers import RawClient
from tests.integration.test_group_configs import DELETE, SET, alter, describe, values
from tests.integration.test_share_fetch_wire import Member, acquired, produce, topic_id

pytestmark = [pytest.mark.integration]
SHARDS = 50
#: (value, source): 8 is GROUP_CONFIG (a group's override), 5 DEFAULT_CONFIG
EARLIEST, LOCK, SHARE_HB, CG_HB = ("earliest", 8), ("20000", 8), ("6000", 8), ("7000", 8)


def ask(node: ServerProcess, call: Callable[[RawClient], Any]) -> Any:
    c = RawClient(node.host, node.port)
    try:
        return call(c)
    finally:
        c.close()


async def until(what: str, probe: Callable[[], Any], ok: Callable[[Any], bool], timeout: float = 60) -> Any:
    """`probe()` until `ok` of its answer (each node adopts the table at its next lease tick)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        got = probe()
        if ok(got):
            return got
        assert loop.time() < deadline, f"{what}: last answer {got!r}"
        await asyncio.sleep(0.2)


def group_values(node: ServerProcess, group: str) -> dict[str, tuple[str | None, int]]:
    return values(ask(node, lambda c: describe(c, group)))


async def group_on_node_other_than(url: str, prefix: str, avoid: set[int]) -> tuple[str, int]:
    """A group id whose coordinator (its shard's lease holder) is none of `avoid`."""
    for i in range(200):
        group = f"{prefix}{i}"
        owner = await shard_owner(url, shard_of(group, SHARDS))
        if owner is not None and owner not in avoid:
            return group, owner
    raise AssertionError(f"no group of {prefix!r} coordinated outside {avoid}")


def cg_join(group: str) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest(
        group_id=group,
        member_id="m1",
        member_epoch=0,
        rebalance_timeout_ms=60000,
        subscribed_topic_names=("q",),
        topic_partitions=(),
    )


def not_loading(r: Any) -> bool:
    return r.error_code not in (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NOT_COORDINATOR)


async def test_group_configs_set_at_one_node_apply_at_every_node(server_factory, pg_url: str) -> None:  # type: ignore[no-untyped-def]
    nodes = start_nodes(server_factory, pg_url, 3, "--topic", "q:1")
    await wait_balanced(pg_url, list(nodes))
    leader = (await wait_partitions_spread(pg_url, "q", 1, list(nodes)))[0][0]
    # the share group's coordinator is not the partition's leader; the configs are set at a third node where
    # one is left, and never at the leader or the coordinators
    share_group, share_coord = await group_on_node_other_than(pg_url, "sg", {leader})
    setter = next(n for n in nodes if n not in (leader, share_coord))
    cg, cg_coord = await group_on_node_other_than(pg_url, "cg", {setter})
    produce(nodes[setter].bootstrap, 5, topic="q")  # before any fetch: only `earliest` delivers them

    r = ask(
        nodes[setter],
        lambda c: alter(
            c,
            share_group,
            ("share.auto.offset.reset", SET, "earliest"),
            ("share.record.lock.duration.ms", SET, "20000"),
            ("share.heartbeat.interval.ms", SET, "6000"),
        ),
    )
    assert r.error_code == 0, r.error_message
    r = ask(nodes[setter], lambda c: alter(c, cg, ("consumer.heartbeat.interval.ms", SET, "7000")))
    assert r.error_code == 0, r.error_message
    # the answering node has them at once (written to PostgreSQL before the answer)
    v = group_values(nodes[setter], share_group)
    assert (v["share.auto.offset.reset"], v["share.record.lock.duration.ms"]) == (EARLIEST, LOCK)

    # DescribeConfigs at every node answers them
    for n, node in nodes.items():
        v = await until(
            f"node {n} describing {share_group}",
            lambda node=node: group_values(node, share_group),
            lambda v: (v["share.auto.offset.reset"], v["share.record.lock.duration.ms"]) == (EARLIEST, LOCK),
        )
        assert v["share.heartbeat.interval.ms"] == SHARE_HB
        assert v["share.isolation.level"] == ("read_uncommitted", 5)
        await until(
            f"node {n} describing {cg}",
            lambda node=node: group_values(node, cg)["consumer.heartbeat.interval.ms"],
            lambda got: got == CG_HB,
        )

    # the share group's coordinator answers its heartbeat interval
    hb = await until(
        "ShareGroupHeartbeat at the coordinator",
        lambda: ask(
            nodes[share_coord],
            lambda c: c.request(76, 1, ShareGroupHeartbeatRequest(share_group, "m1", 0, None, ("q",))),
        ),
        not_loading,
    )
    assert hb.error_code == 0 and hb.heartbeat_interval_ms == 6000
    # the partition's leader serves the share partition by them: from offset 0, with 20 s locks
    tid = ask(nodes[leader], lambda c: topic_id(c, "q"))
    member = Member(nodes[leader], "m1", tid, group=share_group)
    try:
        first = await until(
            "ShareFetch at the leader", lambda: member.fetch(max_wait_ms=2000), lambda r: acquired(r) != []
        )
    finally:
        member.c.close()
    assert acquired(first) == [(0, 4, 1)]
    assert first.acquisition_lock_timeout_ms == 20000

    # the consumer group's coordinator answers its heartbeat interval
    beat = await until(
        "ConsumerGroupHeartbeat at the coordinator",
        lambda: ask(nodes[cg_coord], lambda c: c.request(68, 0, cg_join(cg))),
        not_loading,
    )
    assert beat.error_code == 0 and beat.heartbeat_interval_ms == 7000

    # the coordinator stops: the node taking its shard has the configs; restarted, it has them too
    nodes[cg_coord].stop()
    rest = [n for n in nodes if n != cg_coord]
    await wait_balanced(pg_url, rest)
    new_coord = await shard_owner(pg_url, shard_of(cg, SHARDS))
    assert new_coord in rest
    beat = await until(
        "ConsumerGroupHeartbeat at the new coordinator",
        lambda: ask(nodes[new_coord], lambda c: c.request(68, 0, cg_join(cg))),
        not_loading,
    )
    assert beat.error_code == 0 and beat.heartbeat_interval_ms == 7000
    nodes[cg_coord].start()
    await until(
        "the restarted node describing",
        lambda: (
            group_values(nodes[cg_coord], cg)["consumer.heartbeat.interval.ms"],
            group_values(nodes[cg_coord], share_group)["share.auto.offset.reset"],
        ),
        lambda got: got == (CG_HB, EARLIEST),
    )

    # a DELETE at the restarted node: every node goes back to the broker's value
    r = ask(nodes[cg_coord], lambda c: alter(c, cg, ("consumer.heartbeat.interval.ms", DELETE, None)))
    assert r.error_code == 0, r.error_message
    for n, node in nodes.items():
        await until(
            f"node {n} describing {cg} after the DELETE",
            lambda node=node: group_values(node, cg)["consumer.heartbeat.interval.ms"],
            lambda got: got == ("5000", 5),
        )


async def test_changes_at_different_nodes_all_stay(server_factory, pg_url: str) -> None:  # type: ignore[no-untyped-def]
    """Each change applies its operations to the cluster's current overrides, not to what the answering
    node last adopted: changes of one group sent to different nodes one right after the other (within a lease
    tick), and at the same moment from threads, all stay."""
    nodes = start_nodes(server_factory, pg_url, 2)
    one, two = nodes[1], nodes[2]
    keys = [
        ("consumer.heartbeat.interval.ms", "6000"),
        ("share.record.lock.duration.ms", "20000"),
        ("share.auto.offset.reset", "earliest"),
        ("share.isolation.level", "read_committed"),
    ]
    for i, (name, value) in enumerate(keys):
        node = one if i % 2 == 0 else two
        r = ask(node, lambda c, name=name, value=value: alter(c, "seq", (name, SET, value)))
        assert r.error_code == 0, r.error_message

    def alter_in_thread(node: ServerProcess, group: str, name: str, value: str) -> int:
        return ask(node, lambda c: alter(c, group, (name, SET, value))).error_code

    groups = [f"race{i}" for i in range(10)]
    answers = await asyncio.gather(
        *(
            asyncio.to_thread(alter_in_thread, node, g, name, value)
            for g in groups
            for node, (name, value) in ((one, keys[0]), (two, keys[1]))
        )
    )
    assert answers == [0] * len(answers)
    for n, node in nodes.items():
        await until(
            f"node {n} describing seq",
            lambda node=node: {k: group_values(node, "seq")[k] for k, _ in keys},
            lambda got: got == {k: (v, 8) for k, v in keys},
        )
        for g in groups:
            await until(
                f"node {n} describing {g}",
                lambda node=node, g=g: {k: group_values(node, g)[k] for k, _ in keys[:2]},
                lambda got: got == {k: (v, 8) for k, v in keys[:2]},
            )
