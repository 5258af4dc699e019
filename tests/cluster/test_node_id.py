"""Issue 27 item 5: a second process started with a --node-id that a live node holds is refused at start with a
clear error (as Kafka refuses a duplicate broker id); the id is free again once its holder dies.

Issue 36 item 3: the claim (a session advisory lock) survives the loss of its connection — a PostgreSQL
restart — because the node takes it again at its next tick, only the lock's holder writes the id's
heartbeat, and a twin that finds the lock free but the heartbeat fresh waits for the holder to come back
(and is refused when it does) instead of taking the id: FindCoordinator never names the twin."""

from __future__ import annotations

import asyncio
import signal
import socket
import struct
import subprocess
import time

import asyncpg
import pytest

from groupcoord.protocol.codec import decode_response, encode_request
from groupcoord.protocol.messages.find_coordinator import FindCoordinatorRequest
from groupcoord.server.cluster import leases
from groupcoord.server.cluster.leases import NodeIdInUse, NodeInfo
from groupcoord.server.storage.postgres import migrate
from groupcoord.testing.pgcluster import PgCluster, available
from tests.cluster.helpers import start_nodes, wait_balanced
from tests.conftest import ServerProcess

pytestmark = [pytest.mark.integration]


def _run_to_exit(srv: ServerProcess, timeout: float = 60) -> int:
    """Start `srv` and wait for it to exit by itself (a refused start); its log has the reason."""
    try:
        srv.start()
    except RuntimeError:
        pass  # exited before it listened: also a refusal
    assert srv.proc is not None
    try:
        return srv.proc.wait(timeout)
    except subprocess.TimeoutExpired:
        srv.kill()
        raise AssertionError(f"the duplicate node kept running:\n{srv.log()}") from None


async def test_a_second_process_with_a_live_node_id_is_refused(server_factory, pg_url: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    nodes = start_nodes(server_factory, pg_url, 2)
    await wait_balanced(pg_url, list(nodes))
    twin = ServerProcess(tmp_path / "twin", ("--cluster", pg_url, "--node-id", "2"))
    assert _run_to_exit(twin) != 0
    assert "node id 2 is already in use by a live node" in twin.log()
    # the live node 2 was left alone: it still holds its share
    counts = await wait_balanced(pg_url, list(nodes))
    assert counts[2] > 0 and nodes[2].alive()

    # a paused node is still alive (its connection is open): still refused
    nodes[2].proc.send_signal(signal.SIGSTOP)
    try:
        twin2 = ServerProcess(tmp_path / "twin2", ("--cluster", pg_url, "--node-id", "2"))
        assert _run_to_exit(twin2) != 0
        assert "already in use" in twin2.log()
    finally:
        nodes[2].proc.send_signal(signal.SIGCONT)

    # once the holder is dead (kill -9) the id can be used again, within a lease TTL of its last heartbeat
    nodes[2].kill()
    started = time.monotonic()
    again = server_factory("--cluster", pg_url, "--node-id", "2")
    await wait_balanced(pg_url, [1, 2], timeout=60)
    assert again.alive(), again.log()
    assert time.monotonic() - started < 60


_TAKE = "SELECT pg_try_advisory_lock($1::int, $2::int)"


async def test_a_free_id_with_a_fresh_heartbeat_waits_for_its_holder_to_come_back(pg_url: str) -> None:
    admin = await asyncpg.connect(pg_url)
    await migrate(admin)
    node, twin_node = NodeInfo(7, "127.0.0.1", 1111), NodeInfo(7, "127.0.0.1", 2222)
    holder = await asyncpg.connect(pg_url)
    await leases.claim_node_id(holder, 7, 2000)
    assert await leases.heartbeat_node(holder, node)
    # the holder's session ends (a PostgreSQL restart does that to every session): lock free, heartbeat fresh
    await admin.execute("SELECT pg_terminate_backend($1)", holder.get_server_pid())
    twin = await asyncpg.connect(pg_url)
    waiting = asyncio.create_task(leases.claim_node_id(twin, 7, 2000))
    await asyncio.sleep(0.5)
    assert not waiting.done()
    other = await asyncpg.connect(pg_url)
    assert not await leases.heartbeat_node(other, twin_node)  # no heartbeat without the lock
    back = await asyncpg.connect(pg_url)  # the holder takes its id back and heartbeats
    assert await back.fetchval(_TAKE, leases.NODE_LOCK, 7)
    assert await leases.heartbeat_node(back, node)
    with pytest.raises(NodeIdInUse, match="heartbeated while this process waited"):
        await asyncio.wait_for(waiting, 30)
    assert await admin.fetchval("SELECT port FROM nodes WHERE node_id = 7") == 1111
    # a holder that never comes back: the id is the newcomer's once the heartbeat is a TTL old
    await back.close()
    started = time.monotonic()
    await asyncio.wait_for(leases.claim_node_id(twin, 7, 2000), 30)
    assert time.monotonic() - started < 30
    assert await leases.heartbeat_node(twin, twin_node)
    assert not await other.fetchval(_TAKE, leases.NODE_LOCK, 7)
    for conn in (admin, twin, other):
        await conn.close()


def _coordinators(port: int, groups: list[str]) -> dict[str, tuple[int, int]]:
    """group -> (node id, port) FindCoordinator v4 at 127.0.0.1:`port` names (groups it has one for)."""
    req = FindCoordinatorRequest(key="", key_type=0, coordinator_keys=tuple(groups))
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(encode_request(10, 4, 1, req))
        size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
        _, resp = decode_response(sock.recv(size, socket.MSG_WAITALL), 10, 4)
    return {c.key: (c.node_id, c.port) for c in resp.coordinators if c.error_code == 0}


async def test_the_node_id_claim_is_taken_again_after_a_postgresql_restart(server_factory, tmp_path) -> None:  # type: ignore[no-untyped-def]
    if available():
        pytest.skip(available())
    pg = PgCluster().start()
    ttl = ("--cluster-lease-ttl-ms", "2000")
    try:
        url = pg.create_database()
        nodes = start_nodes(server_factory, url, 2, *ttl)
        await wait_balanced(url, [1, 2])
        groups = [f"g{i}" for i in range(40)]
        pg.restart()
        # the twin starts at once, racing the original's next tick for the freed lock
        twin = ServerProcess(tmp_path / "twin", ("--cluster", url, "--node-id", "1", *ttl))
        exited = asyncio.ensure_future(asyncio.to_thread(_run_to_exit, twin, 40))
        named: set[int] = set()
        while not exited.done():
            try:
                got = await asyncio.to_thread(_coordinators, nodes[2].port, groups)
            except OSError:
                got = {}
            named |= {port for node_id, port in got.values() if node_id == 1}
            await asyncio.sleep(0.1)
        assert await exited != 0
        assert "node id 1 is already in use by a live node" in twin.log()
        assert twin.port not in named, f"FindCoordinator at node 2 named the twin's port {twin.port}"
        # the original took its id back and serves its share
        counts = await wait_balanced(url, [1, 2])
        assert counts[1] > 0 and nodes[1].alive()
        assert "node id claim taken again" in nodes[1].log()
        conn = await asyncpg.connect(url)
        try:
            holders = await conn.fetchval(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = $1::int::oid"
                " AND objid = 1 AND granted",
                leases.NODE_LOCK,
            )
        finally:
            await conn.close()
        assert holders == 1
    finally:
        pg.stop()
