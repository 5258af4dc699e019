"""Where the fast lanes (issue 28) are installed: Heartbeat and ConsumerGroupHeartbeat without an authorizer,
neither with one (an ACL check wraps every handler, and no lane may skip it). The dispatcher itself skips
them while loading, in cluster mode and under the test controls (server/net/dispatch.py)."""

from __future__ import annotations

from groupcoord.protocol.api import ApiKey
from groupcoord.server.broker import Broker
from groupcoord.server.config import ServerConfig


def test_both_heartbeat_lanes_are_on_without_an_authorizer_and_off_with_one() -> None:
    plain = Broker(ServerConfig())
    assert set(plain.dispatcher.fast_lanes) == {int(ApiKey.HEARTBEAT), int(ApiKey.CONSUMER_GROUP_HEARTBEAT)}
    guarded = Broker(
        ServerConfig(authorizer_class_name="org.apache.kafka.metadata.authorizer.StandardAuthorizer")
    )
    assert guarded.dispatcher.fast_lanes == {}
