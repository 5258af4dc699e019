"""The APIs as declared beside their handlers (server/apis/declaration.py, issue 40): one declaration per API,
and no group-keyed API without its routing."""

from __future__ import annotations

import dataclasses

import pytest

from groupcoord.protocol.api import SUPPORTED, ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages import REQUESTS
from groupcoord.server.apis import catalog
from groupcoord.server.apis.declaration import Api
from groupcoord.server.apis.routing import Router
from groupcoord.server.broker import HANDLERS, Broker
from groupcoord.server.config import ServerConfig
from groupcoord.server.control import faults

#: request fields that name a group (a group-keyed API)
GROUP_FIELDS = {"group_id", "group_ids", "groups", "groups_names"}
#: group-keyed APIs that are not routed to the group's shard, and why
NOT_GROUP_ROUTED = {
    # served by the share partitions' leaders (KIP-932), whichever node coordinates the group
    ApiKey.SHARE_FETCH,
    ApiKey.SHARE_ACKNOWLEDGE,
    # sent to the transaction coordinator: routed by the transactional id (txn_ids), the group only named
    ApiKey.ADD_OFFSETS_TO_TXN,
    # a transactional request: the handler asks for the transactional id's shard and the group's (txn.py)
    ApiKey.TXN_OFFSET_COMMIT,
}


def fields_of(key: ApiKey) -> set[str]:
    return {f.name for f in dataclasses.fields(REQUESTS[key])}


def test_every_api_with_a_codec_and_a_handler_is_declared_once() -> None:
    declared = catalog.collect()
    keys = [a.key for a in declared]
    assert len(keys) == len(set(keys))
    assert set(keys) <= set(SUPPORTED)
    assert {a.key: a.handler for a in declared} == HANDLERS


@pytest.mark.parametrize("api", catalog.collect(), ids=lambda a: a.key.name)
def test_a_group_keyed_api_is_routed_by_its_groups(api: Api) -> None:
    """Forgetting the routing would let any cluster node serve the group (and answer while loading)."""
    if not fields_of(api.key) & GROUP_FIELDS or api.key in NOT_GROUP_ROUTED:
        return
    assert api.groups is not None, f"{api.key.name} names groups but declares no `groups` routing"
    assert api.while_loading is not None


@pytest.mark.parametrize("api", catalog.collect(), ids=lambda a: a.key.name)
def test_a_transactional_api_declares_its_transactional_ids(api: Api) -> None:
    if not fields_of(api.key) & {"transactional_id", "transactional_ids", "transactions"}:
        return
    assert api.txn_ids is not None, f"{api.key.name} names transactional ids but declares no `txn_ids`"


def test_the_catalog_refuses_a_group_routed_api_without_its_answer() -> None:
    bad = Api(key=ApiKey.JOIN_GROUP, handler=lambda ctx, req: None, groups=lambda v, r: (r.group_id,))
    with pytest.raises(ValueError, match="no while_loading answer"):
        catalog.check_declarations([bad])


def test_the_catalog_refuses_an_api_declared_twice() -> None:
    api = Api(key=ApiKey.LIST_GROUPS, handler=lambda ctx, req: None)
    with pytest.raises(ValueError, match="declared twice"):
        catalog.check_declarations([api, api])


def test_the_router_reads_the_groups_each_request_names() -> None:
    from groupcoord.protocol.messages.offset_fetch import OffsetFetchRequest, OffsetFetchRequestGroup

    router = Router(catalog.collect())
    fetch = OffsetFetchRequest(
        groups=(OffsetFetchRequestGroup(group_id="a"), OffsetFetchRequestGroup(group_id="b"))
    )
    assert router.group_ids(int(ApiKey.OFFSET_FETCH), 8, fetch) == ["a", "b"]
    assert router.group_ids(int(ApiKey.OFFSET_FETCH), 7, OffsetFetchRequest(group_id="c")) == ["c"]
    assert router.group_ids(int(ApiKey.METADATA), 12, object()) == []
    assert int(ApiKey.LIST_GROUPS) not in router.groups  # each node lists the groups it coordinates


def test_the_share_apis_are_offered_only_with_share_groups_on() -> None:
    share = {a.key for a in catalog.collect() if a.feature == "share"}
    assert share == {
        ApiKey.SHARE_GROUP_HEARTBEAT,
        ApiKey.SHARE_GROUP_DESCRIBE,
        ApiKey.SHARE_FETCH,
        ApiKey.SHARE_ACKNOWLEDGE,
        ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
        ApiKey.ALTER_SHARE_GROUP_OFFSETS,
        ApiKey.DELETE_SHARE_GROUP_OFFSETS,
    }
    on = Broker(ServerConfig()).dispatcher.handlers
    off = Broker(ServerConfig(group_share_enable=False)).dispatcher.handlers
    assert {int(k) for k in share} <= set(on)
    assert not {int(k) for k in share} & set(off)


def test_the_answers_while_loading_are_the_declared_ones() -> None:
    broker = Broker(ServerConfig())
    declared = {int(a.key) for a in catalog.collect() if a.while_loading is not None}
    assert set(broker.dispatcher.while_loading) == declared
    answer = broker.dispatcher.while_loading[int(ApiKey.LEAVE_GROUP)]
    assert answer(None, None).error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS


def test_the_coordinator_apis_of_the_test_controls_are_the_declared_ones() -> None:
    assert set(faults.COORDINATOR_APIS) == {
        ApiKey.FIND_COORDINATOR,
        ApiKey.JOIN_GROUP,
        ApiKey.SYNC_GROUP,
        ApiKey.HEARTBEAT,
        ApiKey.LEAVE_GROUP,
        ApiKey.OFFSET_COMMIT,
        ApiKey.OFFSET_FETCH,
        ApiKey.DESCRIBE_GROUPS,
        ApiKey.DELETE_GROUPS,
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
        ApiKey.CONSUMER_GROUP_DESCRIBE,
        ApiKey.STREAMS_GROUP_HEARTBEAT,
        ApiKey.STREAMS_GROUP_DESCRIBE,
    }
