"""Issue 27 item 5: shards and partitions move back to a restarted node at a measured pace: a node above its
share hands back at most --cluster-handover-per-tick of each per lease tick, until every node has its share."""

from __future__ import annotations

import ast
import re

import pytest

from tests.cluster.helpers import start_nodes, wait_balanced, wait_partitions_spread

pytestmark = [pytest.mark.integration]

_HANDED = re.compile(r"handing (shards|partitions) over to newer nodes\s+(?:shards|partitions)=(\[.*\])")


def handovers(log: str) -> list[tuple[str, int]]:
    """(what, how many) of every planned handover a node logged."""
    return [(m.group(1), len(ast.literal_eval(m.group(2)))) for m in _HANDED.finditer(log)]


async def test_a_restarted_node_gets_its_share_back_a_few_shards_and_partitions_per_tick(
    server_factory, pg_url: str
) -> None:
    pace = ("--cluster-handover-per-tick", "3")
    nodes = start_nodes(server_factory, pg_url, 2, "--topic", "paced:12", *pace)
    await wait_balanced(pg_url, [1, 2])
    await wait_partitions_spread(pg_url, "paced", 12, [1, 2])
    third = server_factory("--cluster", pg_url, "--node-id", "3", "--topic", "paced:12", *pace)
    third.stop()  # planned stop: its share goes back to the others at once, as before
    await wait_balanced(pg_url, [1, 2])
    third.start()  # restarted: the others hand its share back, three shards and three partitions a tick
    counts = await wait_balanced(pg_url, [1, 2, 3], timeout=60)
    assert counts[3] >= 16
    await wait_partitions_spread(pg_url, "paced", 12, [1, 2, 3], timeout=60)
    moves = [m for n in (1, 2) for m in handovers(nodes[n].log_path.read_text(errors="replace"))]
    assert {w for w, _ in moves} == {"shards", "partitions"}
    assert all(0 < k <= 3 for _, k in moves), moves
    assert sum(k for w, k in moves if w == "shards") >= 16  # the share came back in several paced steps
