"""Issue 27 item 5: a second process started with a --node-id that a live node holds is refused at start with a
clear error (as Kafka refuses a duplicate broker id); the id is free again the moment its holder dies."""

from __future__ import annotations

import signal
import subprocess
import time

import pytest

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

    # once the holder is dead (kill -9) the id can be used again at once, without waiting for a lease TTL
    nodes[2].kill()
    started = time.monotonic()
    again = server_factory("--cluster", pg_url, "--node-id", "2")
    await wait_balanced(pg_url, [1, 2], timeout=60)
    assert again.alive(), again.log()
    assert time.monotonic() - started < 60
