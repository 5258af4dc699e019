"""Share groups (KIP-932) in cluster mode (issue 26 item 4): membership with the group's shard owner,
share-partition state with each partition's leader, written fenced by the partition's lease.

Three nodes, each leading one partition: share consumers bootstrapped at different nodes receive every record
exactly once; a ShareFetch at a node that does not lead the partition answers NOT_LEADER_OR_FOLLOWER naming
the leader; kill -9 of a leader holding acquired and acknowledged records: after the takeover no acknowledged
record comes again and every unacknowledged one does; the offsets admin APIs and `groupcoord share-groups`
describe, reset and delete the stored states whoever leads the partitions."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import time
import uuid
from collections import Counter
from typing import Any

import asyncpg
import pytest
from confluent_kafka import Producer

from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages import share_fetch as sf
from groupcoord.protocol.messages import share_group_describe as sgd
from groupcoord.protocol.messages.api_versions import ApiVersionsRequest
from groupcoord.protocol.messages.share_group_heartbeat import ShareGroupHeartbeatRequest
from groupcoord.server.storage.shards import shard_of
from groupcoord.share import AcknowledgeType, ShareConsumer, ShareRecord
from tests.cluster.helpers import shard_owner, start_nodes, wait_balanced, wait_partitions_spread
from tests.conftest import ROOT, ServerProcess
from tests.integration.helpers import RawClient

pytestmark = [pytest.mark.integration]
SHARE_APIS = {76, 77, 78, 79, 90, 91, 92}
EARLIEST = ("--share-auto-offset-reset", "earliest")


def produce(bootstrap: str, topic: str, partitions: int, per_partition: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": "all"})
    for part in range(partitions):
        for i in range(per_partition):
            p.produce(topic, value=f"{part}:{i}".encode(), partition=part)
    assert p.flush(60) == 0


async def stored_states(url: str, group: str) -> dict[tuple[str, int], dict[str, Any]]:
    """(topic id hex, partition) -> the stored snapshot of the group's share partitions."""
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch(
            "SELECT topic_id, partition, value FROM share_partition_state"
            " WHERE group_id = $1 AND value IS NOT NULL",
            group,
        )
    finally:
        await conn.close()
    return {(r[0], r[1]): json.loads(r[2]) for r in rows}


async def poll_until(c: ShareConsumer, want: int, seen: list[ShareRecord], timeout: float = 60) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while len(seen) < want:
        assert asyncio.get_running_loop().time() < deadline, f"got {len(seen)} of {want} records"
        for r in await c.poll(0.5):
            seen.append(r)
            c.acknowledge(r, AcknowledgeType.ACCEPT)


async def test_cluster_nodes_offer_the_share_group_apis(server_factory, pg_url: str) -> None:  # type: ignore[no-untyped-def]
    (node,) = start_nodes(server_factory, pg_url, 1, "--topic", "t:1").values()
    c = RawClient(node.host, node.port)
    try:
        offered = {a.api_key for a in c.request(18, 3, ApiVersionsRequest("groupcoord-test", "1")).api_keys}
    finally:
        c.close()
    assert offered >= SHARE_APIS


async def test_consumers_at_three_nodes_receive_every_record_once_and_only_leaders_serve_share_fetch(
    server_factory, pg_url: str
) -> None:
    nodes = start_nodes(server_factory, pg_url, 3, "--topic", "jobs:3", *EARLIEST)
    leases = await wait_partitions_spread(pg_url, "jobs", 3, list(nodes))
    assert sorted(owner for owner, _ in leases.values()) == [1, 2, 3]
    per = 40
    produce(nodes[1].bootstrap, "jobs", 3, per)
    seen: list[Counter[str]] = [Counter(), Counter(), Counter()]
    stop = asyncio.Event()
    failed: list[tuple[str, int, tuple[int, ...], int]] = []  # acknowledgements answered with an error

    def answered(topic: str, partition: int, offsets: tuple[int, ...], error: int) -> None:
        if error:
            failed.append((topic, partition, offsets, error))

    async def worker(i: int, node: ServerProcess) -> None:
        async with ShareConsumer(
            node.bootstrap,
            "g",
            ["jobs"],
            acknowledgement_mode="explicit",
            max_poll_records=5,
            on_acknowledged=answered,
        ) as c:
            while not stop.is_set():
                for r in await c.poll(0.5):
                    seen[i][(r.value or b"").decode()] += 1
                    c.acknowledge(r, AcknowledgeType.ACCEPT)
            await c.commit()

    tasks = [asyncio.create_task(worker(i, nodes[i + 1])) for i in range(3)]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 120
    while len(set().union(*seen)) < 3 * per:
        assert loop.time() < deadline, f"received {len(set().union(*seen))} of {3 * per}"
        for t in tasks:
            if t.done():
                t.result()
        await asyncio.sleep(0.2)
    stop.set()
    await asyncio.wait_for(asyncio.gather(*tasks), 60)
    every = seen[0] + seen[1] + seen[2]
    assert set(every) == {f"{p}:{i}" for p in range(3) for i in range(per)}
    assert max(every.values()) == 1, "an accepted record was delivered twice"
    # every acknowledgement was stored by its partition's leader: SPSO past every record
    states = await stored_states(pg_url, "g")
    assert sorted(s["start_offset"] for s in states.values()) == [per, per, per], (states, failed)

    # a ShareFetch at a node that does not lead the partition: NOT_LEADER_OR_FOLLOWER, naming the leader
    topic_id = uuid.UUID(hex=next(iter(states))[0])
    leader, epoch = leases[0]
    other = next(n for n in nodes if n != leader)
    c = RawClient(nodes[other].host, nodes[other].port)
    try:
        resp = c.request(
            78,
            1,
            sf.ShareFetchRequest(
                group_id="g",
                member_id=uuid.uuid4().hex[:22],
                share_session_epoch=0,
                max_wait_ms=0,
                min_bytes=1,
                max_bytes=1 << 20,
                max_records=10,
                topics=(sf.ShareFetchTopic(topic_id=topic_id, partitions=(sf.ShareFetchPartition(0),)),),
            ),
        )
    finally:
        c.close()
    [part] = resp.responses[0].partitions
    assert part.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER and not part.acquired_records
    assert (part.current_leader.leader_id, part.current_leader.leader_epoch) == (leader, epoch)
    assert [(e.node_id, e.port) for e in resp.node_endpoints] == [(leader, nodes[leader].port)]


async def test_kill_9_of_a_leader_keeps_acknowledged_records_and_redelivers_the_rest(
    server_factory, pg_url: str
) -> None:
    """20 records on one partition: a consumer accepts the first 10 (the commit answered: durable) and holds
    the other 10 acquired when their leader is killed -9. After the takeover a consumer bootstrapped at a
    survivor receives exactly the 10 unacknowledged ones, and never an acknowledged one."""
    nodes = start_nodes(server_factory, pg_url, 3, "--topic", "q:1", *EARLIEST)
    leases = await wait_partitions_spread(pg_url, "q", 1, list(nodes))
    victim, old_epoch = leases[0]
    survivor = next(n for n in nodes if n != victim)
    produce(nodes[survivor].bootstrap, "q", 1, 20)
    holder = ShareConsumer(
        nodes[survivor].bootstrap, "g", ["q"], acknowledgement_mode="explicit", max_poll_records=20
    )
    await holder.start(timeout=60)
    held: list[ShareRecord] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    while len(held) < 20:
        assert loop.time() < deadline, f"acquired {len(held)} of 20"
        held += await holder.poll(0.5)
    accepted = {r.offset for r in held if r.offset < 10}
    for r in held:
        if r.offset in accepted:
            holder.acknowledge(r, AcknowledgeType.ACCEPT)
    assert set((await holder.commit()).values()) == {0}
    states = await stored_states(pg_url, "g")
    assert [s["start_offset"] for s in states.values()] == [10]  # durable before the kill

    nodes[victim].kill()
    deadline = loop.time() + 60
    while True:  # a survivor leads the partition, at a newer leader epoch
        now = await wait_partitions_spread(pg_url, "q", 1, [n for n in nodes if n != victim], timeout=60)
        if now[0][1] > old_epoch:
            break
        assert loop.time() < deadline
    with contextlib.suppress(Exception):  # its coordinator or leader may be gone: nothing to wait for
        await asyncio.wait_for(holder.close(timeout=5), 10)

    after: list[ShareRecord] = []
    async with ShareConsumer(
        nodes[survivor].bootstrap, "g", ["q"], acknowledgement_mode="explicit", request_timeout_s=10
    ) as c:
        await poll_until(c, 10, after, timeout=120)
        end = loop.time() + 3  # nothing more comes
        while loop.time() < end:
            after += await c.poll(0.5)
        assert set((await c.commit()).values()) <= {0}
    assert sorted(r.offset for r in after) == list(range(10, 20))
    states = await stored_states(pg_url, "g")
    assert [s["start_offset"] for s in states.values()] == [20]


async def test_share_group_membership_moves_with_its_shard_when_the_coordinator_is_killed(
    server_factory, pg_url: str
) -> None:
    """The share group's record is written fenced by its shard's lease and replayed by the node taking the
    shard over: the member keeps its id, epoch and assignment, and its next heartbeat there is accepted (no
    rejoin); other nodes answer NOT_COORDINATOR."""
    nodes = start_nodes(server_factory, pg_url, 3, "--topic", "m:2")
    await wait_balanced(pg_url, list(nodes))
    owner = await shard_owner(pg_url, shard_of("sg", 50))
    assert owner is not None
    c = RawClient(nodes[owner].host, nodes[owner].port)
    try:
        joined = c.request(76, 1, ShareGroupHeartbeatRequest("sg", "member-1", 0, None, ("m",)))
    finally:
        c.close()
    assert joined.error_code == 0 and joined.member_epoch > 0 and joined.assignment is not None
    other = next(n for n in nodes if n != owner)
    c = RawClient(nodes[other].host, nodes[other].port)
    try:
        refused = c.request(
            76, 1, ShareGroupHeartbeatRequest("sg", "member-1", joined.member_epoch, None, None)
        )
    finally:
        c.close()
    assert refused.error_code == ErrorCode.NOT_COORDINATOR

    nodes[owner].kill()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    while (new := await shard_owner(pg_url, shard_of("sg", 50))) in (None, owner):
        assert loop.time() < deadline, "nobody took the group's shard over"
        await asyncio.sleep(0.2)
    c = RawClient(nodes[new].host, nodes[new].port)
    try:
        while True:  # LOAD_IN_PROGRESS while the new owner replays the shard
            beat = c.request(
                76, 1, ShareGroupHeartbeatRequest("sg", "member-1", joined.member_epoch, None, None)
            )
            if beat.error_code != ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                break
            assert loop.time() < deadline
            await asyncio.sleep(0.2)
        assert (beat.error_code, beat.member_epoch) == (0, joined.member_epoch)
        [group] = c.request(77, 1, sgd.ShareGroupDescribeRequest(("sg",), False)).groups
    finally:
        c.close()
    assert group.error_code == 0 and [m.member_id for m in group.members] == ["member-1"]
    assert group.members[0].member_epoch == joined.member_epoch
    assert sorted(group.members[0].assignment.topic_partitions[0].partitions) == [0, 1]


def cli(bootstrap: str, *args: str) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "groupcoord.server", "share-groups", "--bootstrap-server", bootstrap,
         "--output", "json", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else []  # type: ignore[no-any-return]


def described(bootstrap: str, group: str) -> dict[int, tuple[Any, Any]]:
    return {
        r["partition"]: (r["start_offset"], r["lag"]) for r in cli(bootstrap, "describe", "--group", group)
    }


async def wait_described(bootstrap: str, group: str, want: dict[int, tuple[Any, Any]]) -> None:
    deadline = time.monotonic() + 60
    while (got := await asyncio.to_thread(described, bootstrap, group)) != want:
        assert time.monotonic() < deadline, f"{group}: {got} != {want}"
        await asyncio.sleep(0.5)


async def test_share_groups_cli_describes_resets_and_deletes_offsets_in_a_cluster(
    server_factory, pg_url: str
) -> None:
    nodes = start_nodes(server_factory, pg_url, 3, "--topic", "adm:3", *EARLIEST)
    await wait_partitions_spread(pg_url, "adm", 3, list(nodes))
    produce(nodes[1].bootstrap, "adm", 3, 10)
    got: list[ShareRecord] = []
    async with ShareConsumer(nodes[1].bootstrap, "g", ["adm"], acknowledgement_mode="explicit") as c:
        await poll_until(c, 30, got)
        assert set((await c.commit()).values()) <= {0}
    # described at every node (each finds the coordinator), whoever leads the partitions; lag from the log
    # ends every node reads at its lease ticks
    for n in nodes.values():
        await wait_described(n.bootstrap, "g", {0: (10, 0), 1: (10, 0), 2: (10, 0)})
    # the group is empty now: reset partition 1 to offset 4, whoever leads it
    cli(
        nodes[2].bootstrap,
        "reset-offsets",
        "--group",
        "g",
        "--topic",
        "adm:1",
        "--to-offset",
        "4",
        "--execute",
    )
    await wait_described(nodes[3].bootstrap, "g", {0: (10, 0), 1: (4, 6), 2: (10, 0)})
    again: list[ShareRecord] = []
    async with ShareConsumer(nodes[3].bootstrap, "g", ["adm"], acknowledgement_mode="explicit") as c:
        await poll_until(c, 6, again)  # the partition's leader serves the new start offset
        end = asyncio.get_running_loop().time() + 2
        while asyncio.get_running_loop().time() < end:
            again += await c.poll(0.5)
        assert set((await c.commit()).values()) <= {0}
    assert sorted((r.partition, r.offset) for r in again) == [(1, o) for o in range(4, 10)]
    cli(nodes[1].bootstrap, "delete-offsets", "--group", "g", "--topic", "adm")
    await wait_described(nodes[2].bootstrap, "g", {})
    assert await stored_states(pg_url, "g") == {}
