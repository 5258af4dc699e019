"""Handlers see the server only through `server.services.HandlerServices`, and the Broker satisfies it."""

from __future__ import annotations

from dataclasses import dataclass

from groupcoord.protocol.codec import decode_response, encode_request
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages.api_versions import ApiVersion, ApiVersionsRequest
from groupcoord.protocol.messages.find_coordinator import FindCoordinatorRequest
from groupcoord.server.broker import HANDLERS, Broker
from groupcoord.server.config import ServerConfig
from groupcoord.server.net.dispatch import Dispatcher
from groupcoord.server.net.listeners import single_plaintext
from groupcoord.server.services import ClusterView, GroupServices, HandlerServices, TopicServices


class FakeConn:
    peer_host = "127.0.0.1"
    peer_port = 5555
    listener = single_plaintext("127.0.0.1", 9092, None, None)
    principal = "User:ANONYMOUS"
    transport = None

    def __init__(self) -> None:
        self.closed_because: str | None = None

    def close(self, reason: str) -> None:
        self.closed_because = reason


@dataclass
class ClusterOnly:
    """Only the `ClusterView` subject: enough for ApiVersions and FindCoordinator, nothing of a group or log."""

    config: ServerConfig
    api_versions_table: tuple[ApiVersion, ...]
    loading: bool = False
    routing: None = None  # a single node


def test_the_broker_satisfies_every_handler_services_subject() -> None:
    broker = Broker(ServerConfig())
    for subject in (HandlerServices, GroupServices, TopicServices, ClusterView):
        assert isinstance(broker, subject), subject.__name__
    assert broker.dispatcher.services is broker
    assert broker.api_versions_table == broker.dispatcher.api_versions_table


def test_cluster_handlers_answer_from_the_narrow_interface_alone() -> None:
    """A dispatcher over an object that is not a Broker (config and ApiVersions table only) still answers the
    cluster APIs: the handlers use the interface, not the Broker's other parts."""
    config = ServerConfig(node_id=7)
    table = (ApiVersion(api_key=18, min_version=0, max_version=4),)
    services = ClusterOnly(config, table)
    assert isinstance(services, ClusterView) and not isinstance(services, GroupServices)
    dispatcher = Dispatcher(services, HANDLERS)  # type: ignore[arg-type]
    conn = FakeConn()

    out = dispatcher.dispatch(conn, encode_request(18, 2, 4, ApiVersionsRequest())[4:])
    assert isinstance(out, bytes), conn.closed_because
    _, versions = decode_response(out[4:], 18, 2)
    assert versions.error_code == ErrorCode.NONE  # type: ignore[attr-defined]
    assert versions.api_keys == table  # type: ignore[attr-defined]

    out = dispatcher.dispatch(conn, encode_request(10, 3, 5, FindCoordinatorRequest(key="g"))[4:])
    assert isinstance(out, bytes), conn.closed_because
    _, found = decode_response(out[4:], 10, 3)
    assert (found.error_code, found.node_id) == (ErrorCode.NONE, 7)  # type: ignore[attr-defined]
    assert (found.host, found.port) == (config.public_host, config.public_port)  # type: ignore[attr-defined]
