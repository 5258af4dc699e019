"""Three-node clusters on loopback ports sharing one throw-away PostgreSQL database."""

from __future__ import annotations

import asyncio
import time

import asyncpg

from tests.conftest import ServerProcess


def start_nodes(server_factory, url: str, count: int = 3, *extra: str) -> dict[int, ServerProcess]:  # type: ignore[no-untyped-def]
    return {n: server_factory("--cluster", url, "--node-id", str(n), *extra) for n in range(1, count + 1)}


async def lease_counts(url: str) -> dict[int, int]:
    """node id -> shards it holds an unexpired lease on."""
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch(
            "SELECT owner, count(*) FROM shard_lease WHERE expires_at > now() GROUP BY owner"
        )
    finally:
        await conn.close()
    return {r[0]: r[1] for r in rows}


async def wait_balanced(url: str, nodes: list[int], shards: int = 50, timeout: float = 30) -> dict[int, int]:
    """Until every shard is held and each of `nodes` holds some."""
    deadline = time.monotonic() + timeout
    while True:
        counts = await lease_counts(url)
        if sum(counts.values()) == shards and all(counts.get(n, 0) > 0 for n in nodes):
            return counts
        if time.monotonic() > deadline:
            raise AssertionError(f"leases not spread over {nodes} within {timeout}s: {counts}")
        await asyncio.sleep(0.2)
