"""Issue 27 item 3 with kafkajs 2.2.4: a transactional producer commits, aborts and commits over three
partitions led by three nodes (two of the three markers forwarded), bootstrapped at a node that is not the
transactional id's coordinator; read_committed readers bootstrapped at every node see the committed records
once and no aborted one, a read_uncommitted reader sees the aborted ones were written."""

from __future__ import annotations

import asyncio

import pytest

from groupcoord.server.storage.shards import shard_of
from tests.cluster.helpers import shard_owner, start_nodes, wait_balanced, wait_partitions_spread
from tests.cluster.test_transactions import read_all
from tests.integration import drivers

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

TXN_ID = "tx-kafkajs"


async def test_kafkajs_transactions_over_three_leaders(server_factory, pg_url: str) -> None:
    node_path = drivers.kafkajs_node_path()
    nodes = start_nodes(server_factory, pg_url, 3, "--topic", "js:3")
    await wait_balanced(pg_url, list(nodes), timeout=90)
    leaders = await wait_partitions_spread(pg_url, "js", 3, list(nodes), timeout=60)
    assert {owner for owner, _ in leaders.values()} == set(nodes)
    coordinator = await shard_owner(pg_url, shard_of(TXN_ID, 50))
    bootstrap = next(n for n in nodes if n != coordinator)
    env = {"NODE_PATH": node_path, "KAFKAJS_NO_PARTITIONER_WARNING": "1"}
    script = str(drivers.DRIVERS / "kafkajs" / "txn.js")
    d = drivers.Driver(["node", script, nodes[bootstrap].bootstrap, "js", TXN_ID, "30"], env=env)
    try:
        await asyncio.to_thread(d.phase, "transactions", 150)
        await asyncio.to_thread(d.finish)
    finally:
        d.kill()
    assert [(e["n"], e["outcome"]) for e in d.of("transaction")] == [
        (0, "commit"),
        (1, "abort"),
        (2, "commit"),
    ]
    committed = sorted(b"commit-%d-%d" % (n, i) for n in (0, 2) for i in range(30))
    for node in nodes.values():
        assert (
            sorted(await asyncio.to_thread(read_all, node.bootstrap, "js", 3, "read_committed")) == committed
        )
    everything = await asyncio.to_thread(read_all, nodes[coordinator].bootstrap, "js", 3, "read_uncommitted")
    assert sorted(everything) == sorted([*committed, *(b"abort-1-%d" % i for i in range(30))])
