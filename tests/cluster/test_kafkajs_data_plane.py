"""Issue 27 with kafkajs 2.2.4: an idempotent producer follows partition leaders across the kill -9 of one
(NOT_LEADER_OR_FOLLOWER, metadata refresh), and a group member reads every acknowledged record once."""

from __future__ import annotations

import pytest

from tests.cluster.helpers import start_nodes, wait_partitions_spread
from tests.integration import drivers

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


async def test_kafkajs_follows_partition_leaders_across_a_kill(server_factory, pg_url: str) -> None:
    node_path = drivers.kafkajs_node_path()
    nodes = start_nodes(server_factory, pg_url, 3, "--topic", "js:3")
    before = await wait_partitions_spread(pg_url, "js", 3, list(nodes))
    bootstrap = ",".join(n.bootstrap for n in nodes.values())
    env = {"NODE_PATH": node_path, "KAFKAJS_NO_PARTITIONER_WARNING": "1"}
    script = str(drivers.DRIVERS / "kafkajs" / "data.js")
    d = drivers.Driver(["node", script, bootstrap, "js", "15", "js-readers"], env=env)
    try:
        first = d.phase("produced")["offsets"]
        assert sorted(map(tuple, first)) == [(p, o) for p in range(3) for o in range(5)]
        victim = before[0][0]
        nodes[victim].kill()
        survivors = [n for n in nodes if n != victim]
        after = await wait_partitions_spread(pg_url, "js", 3, survivors, timeout=60)
        assert after[0][1] > before[0][1]
        d.go()
        second = d.phase("produced-again", timeout=150)["offsets"]
        assert sorted(map(tuple, second)) == [(p, o) for p in range(3) for o in range(5, 10)]
        d.go()
        records = d.phase("consumed", timeout=120)["records"]
        assert sorted(v for _, _, v in records) == sorted(f"v{i}" for i in range(30))
        assert {(p, o) for p, o, _ in records} == {(p, o) for p in range(3) for o in range(10)}
        d.go()
        d.finish()
    finally:
        d.kill()
