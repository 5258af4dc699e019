"""Issue 27 item 3: a transaction left open on a dead coordinator is aborted by the new owner of its shard, and
one it left prepared is completed.

A transactional producer (confluent-kafka, in a child process) writes to partitions led by three nodes and
is killed with its transaction open; its coordinator's node is killed too. The node that takes the shard
over loads the transaction as Ongoing and, once its timeout passes, aborts it with a bumped epoch (Kafka's
timeout after a coordinator failover), writing ABORT markers through the partition leaders: read_committed
readers on every live node then move past it (the last stable offset is not stuck) and never see its
records, and the next transaction's records are visible."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import asyncpg
import pytest
from confluent_kafka import Producer

from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages.describe_transactions import DescribeTransactionsRequest
from groupcoord.server.storage.shards import shard_of
from tests.cluster.helpers import shard_owner, start_nodes, wait_balanced, wait_partitions_spread
from tests.cluster.test_transactions import read_all
from tests.integration.helpers import RawClient

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

TID = "abandoned"

PRODUCER = """
import sys
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "transactional.id": sys.argv[2], "transaction.timeout.ms": int(sys.argv[3])})
p.init_transactions(60)
p.begin_transaction()
for i in range(30):
    p.produce("open", value=b"open-%d" % i, partition=i % 3)
assert p.flush(60) == 0
print("written", flush=True)
sys.stdin.read()  # killed here, its transaction open
"""


def commit_one(bootstrap: str) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "after", "acks": "all"})
    p.init_transactions(60)
    p.begin_transaction()
    for i in range(30):
        p.produce("open", value=b"after-%d" % i, partition=i % 3)
    p.commit_transaction(60)


def describe(host: str, port: int, tid: str) -> tuple[int, str, int]:
    c = RawClient(host, port)
    try:
        [s] = c.request(65, 0, DescribeTransactionsRequest(transactional_ids=(tid,))).transaction_states
        return s.error_code, s.transaction_state, s.producer_epoch
    finally:
        c.close()


async def open_transaction_then_kill(server_factory, url: str, timeout_ms: int) -> tuple[dict, int, int]:  # type: ignore[no-untyped-def]
    """Three nodes; a child producer leaves a transaction open over partitions led by all of them and is
    killed; (the nodes, the coordinator's node, the producer epoch). The coordinator's node still runs."""
    nodes = start_nodes(
        server_factory, url, 3, "--topic", "open:3",
        "--transaction-abort-timed-out-transaction-cleanup-interval-ms", "500",
    )  # fmt: skip
    await wait_balanced(url, list(nodes))
    await wait_partitions_spread(url, "open", 3, list(nodes))
    victim = await shard_owner(url, shard_of(TID, 50))
    assert victim in nodes
    survivor = next(n for n in nodes if n != victim)
    child = subprocess.Popen(
        [sys.executable, "-c", PRODUCER, nodes[survivor].bootstrap, TID, str(timeout_ms)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        line = await asyncio.to_thread(child.stdout.readline)
        assert line.strip() == "written"
        code, state, epoch = describe(nodes[victim].host, nodes[victim].port, TID)
        assert (code, state) == (ErrorCode.NONE, "Ongoing")
    finally:
        child.kill()
        child.wait()
    return nodes, victim, epoch


async def new_owner(url: str, victim: int) -> int:
    deadline = time.monotonic() + 60
    while (owner := await shard_owner(url, shard_of(TID, 50))) in (None, victim):
        assert time.monotonic() < deadline, "no node took the transactional id's shard"
        await asyncio.sleep(0.2)
    return owner


async def wait_state(nodes: dict, owner: int, state: str) -> tuple[int, str, int]:
    deadline = time.monotonic() + 60
    while True:
        now = describe(nodes[owner].host, nodes[owner].port, TID)
        if now[0] == ErrorCode.NONE and now[1] == state:
            return now
        assert time.monotonic() < deadline, f"the transaction did not reach {state}: {now}"
        await asyncio.sleep(0.2)


async def test_new_coordinator_aborts_a_transaction_its_dead_owner_left_open(
    server_factory, pg_url: str
) -> None:
    nodes, victim, epoch = await open_transaction_then_kill(server_factory, pg_url, 5000)
    nodes[victim].kill()
    owner = await new_owner(pg_url, victim)
    # loaded as Ongoing, then aborted by the timeout check with a bumped epoch
    assert (await wait_state(nodes, owner, "CompleteAbort"))[2] == epoch + 1
    survivors = [n for n in nodes if n != victim]
    await asyncio.to_thread(commit_one, nodes[survivors[1]].bootstrap)
    for n in survivors:
        got = await asyncio.to_thread(read_all, nodes[n].bootstrap, "open", 3, "read_committed")
        assert sorted(got) == sorted(b"after-%d" % i for i in range(30))


async def test_new_coordinator_finishes_a_commit_its_dead_owner_prepared(server_factory, pg_url: str) -> None:
    """The coordinator dies after PrepareCommit is durable and before its markers: the new owner writes the
    COMMIT markers through the partition leaders on takeover, and the records become visible everywhere."""
    nodes, victim, epoch = await open_transaction_then_kill(server_factory, pg_url, 120_000)  # no timeout
    nodes[victim].kill()
    conn = await asyncpg.connect(pg_url)
    try:  # what the dead node had written last: PrepareCommit (the lease is still its own for seconds)
        await conn.execute(
            "UPDATE transactions SET value = jsonb_set(value::jsonb, '{state}', '\"PrepareCommit\"')::text"
            " WHERE transactional_id = $1",
            TID,
        )
    finally:
        await conn.close()
    owner = await new_owner(pg_url, victim)
    assert (await wait_state(nodes, owner, "CompleteCommit"))[2] == epoch  # committed, not fenced
    for n in (n for n in nodes if n != victim):
        got = await asyncio.to_thread(read_all, nodes[n].bootstrap, "open", 3, "read_committed")
        assert sorted(got) == sorted(b"open-%d" % i for i in range(30))
