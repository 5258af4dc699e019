"""The HTTP control endpoint reads requests strictly: an unknown field is a 400 naming it (a typo must never
widen a fault to every group), a wrong method a 405, a value of the wrong JSON type a 400 that says what was
expected; a fault can be read back with its `fired` count after it is used up; the subprocess facade gives
the in-process one's fault handle and `events()`."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request

import pytest

from groupcoord.protocol.api import ApiKey
from groupcoord.protocol.messages.list_groups import ListGroupsRequest
from groupcoord.server.control.faults import FaultHandle
from tests.integration.helpers import RawClient

pytestmark = pytest.mark.integration


def _http(coord, method: str, path: str, body: bytes | None = None) -> tuple[int, dict, dict]:  # type: ignore[no-untyped-def]
    """Status, headers and JSON body of one request, errors included (urllib raises for them)."""
    req = urllib.request.Request(coord.control_url + path, data=body, method=method)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, dict(resp.headers), json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), json.loads(exc.read())


def test_a_misspelt_field_is_refused_by_name_and_injects_nothing(groupcoord_process) -> None:  # type: ignore[no-untyped-def]
    coord = groupcoord_process
    body = {
        "apis": ["FindCoordinator"],
        "error": "COORDINATOR_NOT_AVAILABLE",
        "count": None,
        "grup": "orders",
    }
    with pytest.raises(RuntimeError, match="400 unknown body field 'grup'"):
        coord.call("POST", "/v1/faults", body)
    with pytest.raises(RuntimeError, match="400 unknown body field 'grup'"):
        coord.fault("FindCoordinator", error="COORDINATOR_NOT_AVAILABLE", grup="orders")  # type: ignore[call-arg]
    assert coord.call("GET", "/v1/faults")["faults"] == []  # nothing was injected, for no group
    with pytest.raises(RuntimeError, match="400 unknown query field 'stat'"):
        coord.call("GET", "/v1/groups/g/wait?stat=Stable&timeout_ms=100")
    with pytest.raises(RuntimeError, match="400 unknown body field 'milliseconds'"):
        coord.call("POST", "/v1/clock/advance", {"milliseconds": 1000})
    with pytest.raises(RuntimeError, match="400 unknown body field 'group'"):
        coord.call("POST", "/v1/versions", {"api": "JoinGroup", "max_version": 2, "group": "g"})
    assert coord.call("GET", "/v1/versions") == {"max_versions": {}}


def test_a_known_path_with_the_wrong_method_is_405_with_allow(groupcoord_process) -> None:  # type: ignore[no-untyped-def]
    status, headers, body = _http(groupcoord_process, "GET", "/v1/clock/advance")
    assert status == 405 and headers["Allow"] == "POST" and "GET is not allowed" in body["error"]
    status, headers, _ = _http(groupcoord_process, "PUT", "/v1/faults", b"{}")
    assert status == 405 and headers["Allow"] == "DELETE, GET, POST"
    status, headers, _ = _http(groupcoord_process, "POST", "/v1/groups/g")
    assert status == 405 and headers["Allow"] == "GET"
    assert _http(groupcoord_process, "GET", "/v1/nothing")[0] == 404


BAD_ADVANCES = [
    (b"{}", "field 'ms' is required"),
    (b'{"ms": {}}', "field 'ms' must be a whole number, not an object {}"),
    (b'{"ms": 1.7}', "field 'ms' must be a whole number, not 1.7"),
    (b'{"ms": "1000"}', "field 'ms' must be a whole number, not the string \"1000\""),
    (b'{"ms": true}', "field 'ms' must be a whole number, not true"),
    (b'{"ms": -5}', "field 'ms' must be at least 0, not -5"),
    (b"[1000]", "body must be a JSON object"),
    (b"ms=1000", "body is not JSON"),
]


def test_a_bad_clock_advance_is_a_clear_400_and_moves_nothing(groupcoord_process) -> None:  # type: ignore[no-untyped-def]
    before = groupcoord_process.call("GET", "/v1/clock")["now_ms"]
    for body, message in BAD_ADVANCES:
        status, _, answer = _http(groupcoord_process, "POST", "/v1/clock/advance", body)
        assert (status, answer["error"][: len(message)]) == (400, message), body
    assert groupcoord_process.call("GET", "/v1/clock")["now_ms"] == before


BAD_FAULTS = [
    ("count", 0, "field 'count' must be at least 1"),
    ("count", 1.5, "field 'count' must be a whole number or null, not 1.5"),
    ("disconnect", "yes", "field 'disconnect' must be true or false"),
    ("group", 7, "field 'group' must be a string or null, not 7"),
    ("versions", [1, "2"], "field 'versions' must be a list of whole numbers"),
    ("delay_ms", 2.5, "field 'delay_ms' must be a whole number, not 2.5"),
    ("apis", {"JoinGroup": 1}, "field 'apis' must be a name, a number or a list of them"),
]


def test_a_bad_fault_value_is_a_clear_400(groupcoord_process) -> None:  # type: ignore[no-untyped-def]
    for field, value, message in BAD_FAULTS:
        body = {"apis": ["Heartbeat"], "error": "NOT_COORDINATOR", field: value}
        status, _, answer = _http(groupcoord_process, "POST", "/v1/faults", json.dumps(body).encode())
        assert (status, answer["error"][: len(message)]) == (400, message), field
    assert groupcoord_process.call("GET", "/v1/faults")["faults"] == []


async def test_a_used_up_fault_reads_back_with_its_fired_count(groupcoord_factory) -> None:  # type: ignore[no-untyped-def]
    coord = await groupcoord_factory(subprocess=True)
    fault = coord.fault("ListGroups", error="COORDINATOR_NOT_AVAILABLE", count=2)
    assert (fault.fired, fault.active) == (0, True)
    raw = RawClient(coord.host, coord.port)
    try:
        codes = [
            (await asyncio.to_thread(raw.request, ApiKey.LIST_GROUPS, 4, ListGroupsRequest())).error_code
            for _ in range(3)
        ]
    finally:
        raw.close()
    assert codes == [15, 15, 0]
    assert coord.call("GET", "/v1/faults")["faults"] == []  # no longer in force...
    assert (fault.fired, fault.active) == (2, False)  # ...and still there to read
    assert coord.call("GET", f"/v1/faults/{fault.id}")["fired"] == 2
    fault.remove()  # removing a spent fault is harmless
    assert fault.fired == 2
    with pytest.raises(RuntimeError, match="404 no fault 999"):
        coord.call("GET", "/v1/faults/999")


async def test_the_subprocess_fault_handle_has_the_in_process_names(groupcoord_factory) -> None:  # type: ignore[no-untyped-def]
    local = await groupcoord_factory()
    remote = await groupcoord_factory(subprocess=True)
    names = ("id", "fired", "holding", "active", "release", "remove", "as_json")
    for coord in (local, remote):
        handle: FaultHandle = coord.fault("ListGroups", hold=True)
        assert all(hasattr(handle, n) for n in names), type(handle)
        assert (handle.fired, handle.holding, handle.active, handle.release()) == (0, 0, True, 0)
        assert handle.as_json()["id"] == handle.id
        handle.remove()
        assert handle.active is False
    unavailable = remote.coordinator_unavailable(60_000, group="only-me")
    assert unavailable.as_json()["group"] == "only-me"


async def test_subprocess_events_stream_a_groups_journal_events(groupcoord_factory) -> None:  # type: ignore[no-untyped-def]
    from aiokafka import AIOKafkaConsumer

    coord = await groupcoord_factory(subprocess=True)
    group = "events?of=this/group"
    events = await asyncio.to_thread(coord.events, group)
    other = await asyncio.to_thread(coord.events, "events")
    c = AIOKafkaConsumer("t", bootstrap_servers=coord.bootstrap, group_id=group, session_timeout_ms=30_000)
    await c.start()
    try:
        view = await coord.wait_group(group, members=1, timeout=60)
        member = view.members[0].member_id
        await coord.expire_member(group, member)
        seen = []
        async with events:
            async for event in events:
                seen.append(event)
                if event.get("member_id") == member and event.get("reason") == "session_timeout":
                    break
        assert {e["group"] for e in seen} == {group}
        assert any(e["event"] == "member_joined" for e in seen), seen
        assert other.drain() == []  # a group named like its prefix saw nothing
        other.close()
        with pytest.raises(RuntimeError, match="404 no event subscription"):
            coord.call("GET", f"/v1/events/{events.id}")
    finally:
        await c.stop()
