"""The HTTP control endpoint, driven by a non-Python client (node's built-in fetch), and the fault kinds
observed on the wire with a raw Kafka-protocol client against a subprocess coordinator."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.messages.api_versions import ApiVersionsRequest
from groupcoord.protocol.messages.list_groups import ListGroupsRequest
from tests.integration.helpers import RawClient

pytestmark = pytest.mark.integration

NODE_SCRIPT = """
const base = process.argv[process.argv.length - 1];
const post = (path, body) => fetch(base + path, {method: "POST", body: JSON.stringify(body)}).then(r => r.json());
(async () => {
  const fault = await post("/v1/faults", {apis: ["ListGroups"], error: "COORDINATOR_NOT_AVAILABLE", count: 1});
  const before = await (await fetch(base + "/v1/clock")).json();
  const after = await post("/v1/clock/advance", {ms: 60000});
  console.log(JSON.stringify({fault, advanced: after.now_ms - before.now_ms, virtual: before.virtual}));
})();
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node (v18+, built-in fetch)")
async def test_node_injects_a_fault_over_http_that_a_kafka_client_then_sees(groupcoord_factory) -> None:  # type: ignore[no-untyped-def]
    coord = await groupcoord_factory(subprocess=True)
    out = subprocess.run(
        ["node", "-e", NODE_SCRIPT, coord.control_url], capture_output=True, text=True, timeout=30, check=True
    )
    result = json.loads(out.stdout)
    assert (
        result["fault"]["apis"] == ["LIST_GROUPS"] and result["fault"]["error"] == "COORDINATOR_NOT_AVAILABLE"
    )
    assert result["virtual"] is True and result["advanced"] == 60000
    raw = RawClient(coord.host, coord.port)
    try:
        assert raw.request(ApiKey.LIST_GROUPS, 4, ListGroupsRequest()).error_code == 15
        assert raw.request(ApiKey.LIST_GROUPS, 4, ListGroupsRequest()).error_code == 0
    finally:
        raw.close()
    faults = coord.call("GET", "/v1/faults")["faults"]
    assert faults == [] or faults[0]["fired"] == 1


async def test_disconnect_fault_closes_the_connection_of_the_matching_client_only(groupcoord_factory) -> None:  # type: ignore[no-untyped-def]
    coord = await groupcoord_factory(subprocess=True)
    coord.fault("ApiVersions", disconnect=True, client_id="raw-test")
    raw = RawClient(coord.host, coord.port)
    try:
        raw.correlation += 1
        from groupcoord.protocol.codec import encode_request

        raw.send_raw(encode_request(ApiKey.API_VERSIONS, 3, raw.correlation, ApiVersionsRequest(), "other"))
        raw.read_frame()  # another client id: answered
        raw.send_raw(encode_request(ApiKey.API_VERSIONS, 3, 9, ApiVersionsRequest(), "raw-test"))
        assert raw.is_closed_by_server()
    finally:
        raw.close()


async def test_delay_fault_answers_later_and_in_order_and_is_recorded(groupcoord_factory) -> None:  # type: ignore[no-untyped-def]
    coord = await groupcoord_factory(subprocess=True)
    coord.record()
    coord.fault("ListGroups", delay_ms=200)
    raw = RawClient(coord.host, coord.port)
    try:
        assert raw.request(ApiKey.LIST_GROUPS, 4, ListGroupsRequest()).error_code == 0
        assert raw.request(ApiKey.LIST_GROUPS, 4, ListGroupsRequest()).error_code == 0
    finally:
        raw.close()
    seen = coord.recorded(api="ListGroups")
    assert [r["injected"] for r in seen] == [True, False]
    assert all(r["response"]["error_code"] == 0 for r in seen)


async def test_coordinator_unavailable_for_a_while_answers_not_coordinator(groupcoord_factory) -> None:  # type: ignore[no-untyped-def]
    coord = await groupcoord_factory(subprocess=True)
    coord.coordinator_unavailable(60_000, error="NOT_COORDINATOR")
    raw = RawClient(coord.host, coord.port)
    try:
        from groupcoord.protocol.messages.find_coordinator import FindCoordinatorRequest

        resp = raw.request(ApiKey.FIND_COORDINATOR, 3, FindCoordinatorRequest(key="g"))
        assert resp.error_code == 16
        assert (
            raw.request(ApiKey.LIST_GROUPS, 4, ListGroupsRequest()).error_code == 0
        )  # not a coordinator API
    finally:
        raw.close()
    coord.clear_faults()
    raw = RawClient(coord.host, coord.port)
    try:
        assert raw.request(ApiKey.FIND_COORDINATOR, 3, FindCoordinatorRequest(key="g")).error_code == 0
    finally:
        raw.close()


async def test_faults_apply_only_to_the_named_group(groupcoord_factory) -> None:  # type: ignore[no-untyped-def]
    from groupcoord.protocol.messages.find_coordinator import FindCoordinatorRequest

    coord = await groupcoord_factory(subprocess=True)
    fault = coord.fault("FindCoordinator", error="COORDINATOR_NOT_AVAILABLE", group="other", count=None)
    raw = RawClient(coord.host, coord.port)
    try:
        assert raw.request(ApiKey.FIND_COORDINATOR, 3, FindCoordinatorRequest(key="mine")).error_code == 0
        assert raw.request(ApiKey.FIND_COORDINATOR, 3, FindCoordinatorRequest(key="other")).error_code == 15
        assert raw.request(ApiKey.FIND_COORDINATOR, 3, FindCoordinatorRequest(key="other")).error_code == 15
    finally:
        raw.close()
    (listed,) = coord.call("GET", "/v1/faults")["faults"]
    assert listed["id"] == fault["id"] and listed["fired"] == 2
    coord.call("DELETE", f"/v1/faults/{fault['id']}")
    assert coord.call("GET", "/v1/faults")["faults"] == []


async def test_bad_control_requests_get_a_clear_http_error(groupcoord_factory) -> None:  # type: ignore[no-untyped-def]
    coord = await groupcoord_factory(subprocess=True)
    with pytest.raises(RuntimeError, match="404 no route"):
        coord.call("GET", "/v1/nothing")
    with pytest.raises(RuntimeError, match="400 unknown error code 'NOPE'"):
        coord.fault("Heartbeat", error="NOPE")
    with pytest.raises(RuntimeError, match="400 unknown API 'Nope'"):
        coord.fault("Nope", error="NOT_COORDINATOR")
    with pytest.raises(RuntimeError, match="404 no fault 99"):
        coord.call("POST", "/v1/faults/99/release", {})
    with pytest.raises(RuntimeError, match="400 a fault needs"):
        coord.fault("Heartbeat")
    with pytest.raises(RuntimeError, match="404 no member"):
        await coord.expire_member("g", "m")
    with pytest.raises(TimeoutError, match="did not reach"):
        await coord.wait_group("g", timeout=0.1)
    with pytest.raises(RuntimeError, match="404 no group 'g'"):
        await coord.force_rebalance("g", reason="x")
    assert coord.call("GET", "/v1/clock")["virtual"] is True  # still serving


async def test_versions_cap_and_drop_response_fault_over_http(groupcoord_factory) -> None:  # type: ignore[no-untyped-def]
    coord = await groupcoord_factory(subprocess=True)
    assert coord.max_version("ListGroups", 2) == {"max_versions": {"LIST_GROUPS": 2}}
    assert coord.call("GET", "/v1/versions") == {"max_versions": {"LIST_GROUPS": 2}}
    with pytest.raises(RuntimeError, match="400 max_version of JOIN_GROUP must be within"):
        coord.max_version("JoinGroup", 99)
    fault = coord.fault("ListGroups", drop_response=True, versions=[2])
    assert (fault["drop_response"], fault["versions"]) == (True, [2])
    raw = RawClient(coord.host, coord.port)
    try:
        from groupcoord.protocol.codec import encode_request

        raw.send_raw(encode_request(ApiKey.LIST_GROUPS, 2, 1, ListGroupsRequest(), "raw-test"))  # dropped
        raw.correlation = 1
        assert raw.request(ApiKey.LIST_GROUPS, 2, ListGroupsRequest()).error_code == 0  # answered, id 2
    finally:
        raw.close()
    assert coord.call("DELETE", "/v1/versions") == {"max_versions": {}}
    assert coord.call("GET", "/v1/faults")["faults"] == []  # the count=1 fault is spent
