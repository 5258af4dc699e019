"""The order a ShareFetch's lists take effect in (acknowledgements, fetch, forget), with raw frames against
the real server: tests/integration/share_session_order.py holds the scenario, which
tests/oracle/test_share_session_order.py also runs against Kafka 4.4 (the oracle fixture) and compares.

Issue #36 item 2: a partition acknowledged and forgotten in one request stayed in groupcoord's share session
(forget applied before add), so the next empty ShareFetch acquired its released records again; franz-go, which
sends exactly that on a revoke, then logs "broker returned partition from share fetch that we did not ask for".
"""

from __future__ import annotations

import pytest

from .share_session_order import RECORDS, run

pytestmark = [pytest.mark.integration, pytest.mark.owns_server]


def test_acknowledged_and_forgotten_partition_leaves_the_session(server_factory) -> None:  # type: ignore[no-untyped-def]
    srv = server_factory()
    steps = dict(run(srv.host, srv.port, "order-t", "order-g"))
    everything = tuple((o, 1) for o in range(RECORDS))
    assert steps["acquire all of p0 and p1"] == {0: (0, 0, everything), 1: (0, 0, everything)}
    # the acknowledgements of the forgotten p0 are applied (answered, no error) and nothing is fetched for it
    assert steps["p0 acked and forgotten"] == {0: (0, 0, ())}
    # p0's released 5-9 are available, but p0 is no longer in the session: nothing comes back (it came back
    # with offsets 5-9, delivery count 2, before the fix)
    assert steps["empty fetch after the forget"] == {}
    # acknowledgements are applied before the fetch of the same request
    assert steps["p1 released and fetched in one request"] == {
        1: (0, 0, tuple((o, 2) for o in range(RECORDS)))
    }
    # a partition listed and forgotten at once is added, then removed: never fetched
    assert steps["p0 listed and forgotten in one request"] == {}
    assert steps["empty fetch after listing and forgetting p0"] == {}
    assert steps["p0 listed again"] == {0: (0, 0, tuple((o, 2) for o in range(5, RECORDS)))}
