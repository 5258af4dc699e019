"""Cluster mode with the Java client (kafka-clients 4.3, classic protocol): kill -9 of the coordinator's node,
no rebalance. The JVM runs tests/drivers/java GroupDriver `hold` (members consume until told to stop)."""

from __future__ import annotations

import asyncio
import json
import time

import asyncpg
import pytest

from groupcoord.server.storage.shards import shard_of
from tests.cluster.helpers import shard_owner, start_nodes, wait_balanced
from tests.integration import drivers
from tests.integration.helpers import describe_group

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


async def persisted_generation(url: str, group: str) -> int | None:
    conn = await asyncpg.connect(url)
    try:
        value = await conn.fetchval("SELECT value FROM groups WHERE group_id = $1", group)
    finally:
        await conn.close()
    return None if value is None else json.loads(value)["generation"]


async def test_java_members_keep_their_generation_when_the_coordinators_node_is_killed(
    server_factory, pg_url: str
) -> None:
    cp = drivers.java_classpath()
    nodes = start_nodes(server_factory, pg_url, 3, "--topic", "jorders:4")
    await wait_balanced(pg_url, list(nodes))
    group = "java-survivor"
    owner = await shard_owner(pg_url, shard_of(group, 50))
    assert owner in nodes
    bootstrap = ",".join(n.bootstrap for n in nodes.values())
    d = drivers.Driver(["java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", cp, "GroupDriver", "hold",
                        bootstrap, "jorders", group, "2"])  # fmt: skip
    try:
        d.phase("running")

        def stable_view(node: int) -> dict | None:
            g = describe_group(nodes[node].host, nodes[node].port, group)
            ok = g["error"] == 0 and g["state"] == "Stable" and len(g["members"]) == 2
            return g if ok and all(m["partitions"] for m in g["members"].values()) else None

        deadline = time.monotonic() + 60
        while (before := stable_view(owner)) is None:
            assert time.monotonic() < deadline, "the Java group did not become Stable"
            await asyncio.sleep(0.2)
        gen = await persisted_generation(pg_url, group)
        assert gen is not None and gen >= 1
        nodes[owner].kill()
        deadline = time.monotonic() + 30
        while (new := await shard_owner(pg_url, shard_of(group, 50))) in (None, owner):
            assert time.monotonic() < deadline, "no node took the shard over"
            await asyncio.sleep(0.2)
        # past a whole session timeout (10 s) after the takeover the members are still there, Stable, with
        # the same ids and assignment: they have been heartbeating to the new coordinator
        await asyncio.sleep(11)
        after = stable_view(new)
        assert after is not None, describe_group(nodes[new].host, nodes[new].port, group)
        assert after["members"] == before["members"]
        assert await persisted_generation(pg_url, group) == gen
        d.go()
        members = d.phase("stopping")["members"]
        assert {m["generation"] for m in members} == {gen}
        assert {m["member_id"] for m in members} == set(before["members"])
        d.go()
        d.finish()
    finally:
        d.kill()


async def test_java_producer_and_consumer_follow_partition_leaders_across_a_kill(
    server_factory, pg_url: str
) -> None:
    """Issue 27 with the strictest client: leader epochs, NOT_LEADER_OR_FOLLOWER and the offset validation
    of kafka-clients 4.3 after a partition's leader is killed; every acknowledged record is read back."""
    from tests.cluster.helpers import partition_leases, wait_partitions_spread

    cp = drivers.java_classpath()
    nodes = start_nodes(server_factory, pg_url, 3, "--topic", "jdata:3")
    before = await wait_partitions_spread(pg_url, "jdata", 3, list(nodes))
    bootstrap = ",".join(n.bootstrap for n in nodes.values())
    d = drivers.Driver(["java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", cp, "DataDriver",
                        bootstrap, "jdata", "30"])  # fmt: skip
    try:
        first = d.phase("produced")["offsets"]
        assert sorted(first) == sorted([p, o] for p in range(3) for o in range(10))
        victim = before[0][0]
        nodes[victim].kill()
        survivors = [n for n in nodes if n != victim]
        after = await wait_partitions_spread(pg_url, "jdata", 3, survivors, timeout=60)
        assert after[0][0] != victim and after[0][1] > before[0][1]
        d.go()
        second = d.phase("produced-again", timeout=150)["offsets"]
        assert sorted(second) == sorted([p, o] for p in range(3) for o in range(10, 20))
        d.go()
        records = d.phase("consumed")["records"]
        assert sorted(v for _, _, v in records) == sorted(f"v{i}" for i in range(60))
        assert {(p, o) for p, o, _ in records} == {(p, o) for p in range(3) for o in range(20)}
        assert (await partition_leases(pg_url, "jdata"))[0][0] in survivors
        d.go()
        d.finish()
    finally:
        d.kill()
