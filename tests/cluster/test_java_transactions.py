"""Issue 27 item 3 with the Java client (kafka-clients 4.3): tests/drivers/java TxnDriver's exactly-once loop,
abort and zombie fence, run against three nodes where the transaction coordinator, the output partition's
leader and the group's coordinator are three different nodes (markers and the group's transactional offsets
are completed through other nodes)."""

from __future__ import annotations

import asyncio
import time

import pytest

from groupcoord.server.storage.shards import shard_of
from tests.cluster.helpers import partition_leases, shard_owner, start_nodes, wait_balanced
from tests.integration import drivers

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


async def leader_of(url: str, topic: str) -> int:
    deadline = time.monotonic() + 60
    while (found := (await partition_leases(url, topic)).get(0)) is None:
        assert time.monotonic() < deadline, f"{topic}-0 has no leader"
        await asyncio.sleep(0.2)
    return found[0]


async def test_java_exactly_once_loop_over_three_nodes(server_factory, pg_url: str) -> None:
    cp = drivers.java_classpath()
    nodes = start_nodes(server_factory, pg_url, 3, "--topic", "jin:1", "--topic", "jout:1")
    await wait_balanced(pg_url, list(nodes))
    out_leader = await leader_of(pg_url, "jout")
    owners = {i: await shard_owner(pg_url, shard_of(f"java-eos-{i}", 50)) for i in range(40)}
    txid = next(f"java-eos-{i}" for i, o in owners.items() if o not in (None, out_leader))
    txn_owner = owners[int(txid.rsplit("-", 1)[1])]
    groups = {i: await shard_owner(pg_url, shard_of(f"java-eos-g-{i}", 50)) for i in range(40)}
    group = next(f"java-eos-g-{i}" for i, o in groups.items() if o not in (None, txn_owner))
    bootstrap = ",".join(n.bootstrap for n in nodes.values())
    d = drivers.Driver(["java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", cp, "TxnDriver",
                        bootstrap, "jin", "jout", group, txid])  # fmt: skip
    try:
        await asyncio.to_thread(d.finish, 180)
    finally:
        d.kill()
    assert d.of("consumed")[0]["count"] == 10
    assert d.of("group_offset")[0]["offset"] == 10  # committed with the transaction; the abort left it
    [zombie] = d.of("zombie")
    assert zombie["fenced"], zombie
    reads = {e["isolation"]: e["values"] for e in d.of("read")}
    assert reads["read_committed"] == [f"out{i}" for i in range(10)]
    assert reads["read_uncommitted"] == [*reads["read_committed"], "doomed"]
