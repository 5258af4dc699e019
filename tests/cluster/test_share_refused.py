"""Cluster mode does not serve share groups yet (docs/differences.md 77): a node leaves APIs 76-79 and 90-92
out of ApiVersions, as a Kafka broker with share.version=0 does, so clients report that the broker does not
support share groups instead of delivering records whose acknowledgements could not be kept."""

from __future__ import annotations

import pytest

from groupcoord.protocol.messages.api_versions import ApiVersionsRequest
from groupcoord.protocol.messages.share_group_heartbeat import ShareGroupHeartbeatRequest
from tests.cluster.helpers import start_nodes
from tests.integration.helpers import RawClient

pytestmark = [pytest.mark.integration]
SHARE_APIS = {76, 77, 78, 79, 90, 91, 92}


def test_cluster_node_does_not_offer_share_group_apis(server_factory, pg_url: str) -> None:  # type: ignore[no-untyped-def]
    (node,) = start_nodes(server_factory, pg_url, 1, "--topic", "t:1").values()
    c = RawClient(node.host, node.port)
    offered = {a.api_key for a in c.request(18, 3, ApiVersionsRequest()).api_keys}
    assert offered & SHARE_APIS == set()
    assert {68, 69, 1, 0} <= offered  # consumer groups and the data plane are served
    # a request for an API that is not offered: the connection is closed, as for any API not offered
    with pytest.raises((ConnectionError, OSError, EOFError)):
        c.request(76, 1, ShareGroupHeartbeatRequest("g", "m1", 0, None, ("t",)))
