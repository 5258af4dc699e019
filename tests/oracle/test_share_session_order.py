"""The order a ShareFetch's lists take effect in, against Kafka 4.4 and groupcoord: one raw-frame scenario
(tests/integration/share_session_order.py: acknowledgements before the fetch, the request's partitions added
to the share session before the forgotten ones are removed) run on both, the outcomes compared step by step.
Before the fix (#36 item 2) groupcoord's outcome differed from the second step on: the partition acknowledged
and forgotten in one request stayed in its share session and had its released records fetched again."""

from __future__ import annotations

import pytest

from tests.integration.share_session_order import run
from tests.oracle.targets import Target

pytestmark = pytest.mark.integration


def test_share_fetch_lists_take_effect_in_kafkas_order(oracle_pair: tuple[Target, Target]) -> None:
    outcomes = {
        t.name: run(t.host, t.port, t.unique("share-order-t"), t.unique("share-order-g")) for t in oracle_pair
    }
    kafka, ours = outcomes["kafka"], outcomes["groupcoord"]
    assert [name for name, _ in ours] == [name for name, _ in kafka]
    for (name, k), (_, g) in zip(kafka, ours, strict=True):
        assert g == k, f"{name}: Kafka {k}, groupcoord {g}"
